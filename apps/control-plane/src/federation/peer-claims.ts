// The claim API of another cluster, as this cluster calls it when a SandboxEnv claim spills there. Only configured
// peers are called (their origin and token come from the peers file, never from the hub or a peer's answer), every
// call has a timeout, and redirects are refused.
import { CLAIMREF_GENERATED_HEADER, claimErrorBodySchema } from '@warmpool/api';
import type { Logger } from '@warmpool/runtime';
import { ClaimFailure } from '../provisioning/claim-service.js';
import type { OutboundPeer, PeerCredentials } from './peers.js';

/** A peer's answer: its status and its parsed JSON body (the raw text when it is no JSON). */
export interface PeerAnswer {
  status: number;
  body: unknown;
}

/** `[namespace, ...claim]`: `/v1/namespaces/<namespace>/claims[/<claim>...]` on the peer. */
export type PeerClaimsPath = readonly [namespace: string, ...claim: string[]];

export interface PeerCallOptions {
  body?: unknown;
  signal?: AbortSignal;
  /** The claimRef was generated: the peer then releases what it serves after the call gave up. */
  claimRefGenerated?: boolean;
}

export interface PeerClaimsClientOptions {
  peers: Pick<PeerCredentials, 'outbound'>;
  /** Timeout of one call (default 15 s). */
  timeoutMs?: number;
  logger: Logger;
}

export class PeerClaimsClient {
  readonly #options: PeerClaimsClientOptions;
  /** Cluster ids on the hub that are no configured peer, each logged once. */
  readonly #strangers = new Set<string>();

  constructor(options: PeerClaimsClientOptions) {
    this.#options = options;
  }

  /** Whether `clusterId` may be called: a configured peer. Anything else is logged once. */
  isPeer(clusterId: string): boolean {
    if (this.#options.peers.outbound(clusterId) !== undefined) return true;
    if (!this.#strangers.has(clusterId)) {
      this.#strangers.add(clusterId);
      this.#options.logger.warn(
        'the hub holds records of a cluster that is no configured peer: never forwarding to it',
        {
          clusterId,
        },
      );
    }
    return false;
  }

  /**
   * Calls `path` on the origin configured for `clusterId`, with the token configured for it. A 401 is tried once more
   * with the token it replaced (a rotation the peer has not read yet).
   */
  async call(
    clusterId: string,
    method: string,
    path: PeerClaimsPath,
    options: PeerCallOptions = {},
  ): Promise<PeerAnswer> {
    const peer = this.#options.peers.outbound(clusterId);
    if (peer === undefined)
      throw new ClaimFailure('Unavailable', `cluster ${clusterId} is no configured peer (--federation-peers-file)`, {
        retryAfterSeconds: 1,
      });
    const token = peer.tokens.preferred;
    if (token === undefined)
      throw new ClaimFailure('Unavailable', `no token to present to peer ${clusterId} (its token file is empty)`, {
        retryAfterSeconds: 1,
      });
    const url = claimsUrl(peer, path);
    let used = token;
    let answer = await this.#send(url, method, used, options);
    const alternate = answer.status === 401 ? peer.tokens.alternateTo(used) : undefined;
    if (alternate !== undefined) {
      used = alternate;
      answer = await this.#send(url, method, used, options);
    }
    if (answer.status !== 401) peer.tokens.worked(used);
    return answer;
  }

  async #send(url: URL, method: string, token: string, options: PeerCallOptions): Promise<PeerAnswer> {
    const { body, signal } = options;
    const timeout = AbortSignal.timeout(this.#options.timeoutMs ?? 15_000);
    const res = await fetch(url, {
      method,
      redirect: 'error',
      headers: {
        authorization: `Bearer ${token}`,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...(options.claimRefGenerated === true ? { [CLAIMREF_GENERATED_HEADER]: '1' } : {}),
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      signal: signal === undefined ? timeout : AbortSignal.any([signal, timeout]),
    });
    const text = await res.text();
    return { status: res.status, body: parsedOrText(text) };
  }
}

/** A peer's claim API URL, built on its configured origin, each segment URI-encoded. */
function claimsUrl(peer: OutboundPeer, [namespace, ...claim]: PeerClaimsPath): URL {
  const segments = ['v1', 'namespaces', namespace, 'claims', ...claim].map(encodeURIComponent);
  return new URL(`/${segments.join('/')}`, peer.origin);
}

function parsedOrText(text: string): unknown {
  if (text === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** The failure a peer's non-success answer stands for: its own reason when it gave one. */
export function peerFailureOf(answer: PeerAnswer, what: string): ClaimFailure {
  const error = claimErrorBodySchema.safeParse(answer.body);
  if (error.success)
    return new ClaimFailure(error.data.reason, `${what}: ${error.data.error}`, { retryAfterSeconds: 1 });
  return new ClaimFailure('Unavailable', `${what}: HTTP ${answer.status}`, { retryAfterSeconds: 1 });
}
