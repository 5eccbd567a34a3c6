// The peers this cluster federates with, from the peers file
// (--federation-peers-file, shape in @warmpool/api's federation-peers): who
// may forward claims here (each peer's own accepted token) and where, with
// which token, this cluster forwards claims to each peer. Only these URLs
// ever receive a token: nothing read from the hub names a destination.
//
// The file and every token file are re-read when they change (checked every
// `checkIntervalMs`; kubelet swaps Secret and ConfigMap volumes through a
// symlink, so a changed inode/mtime/size is new content). A rotated token
// keeps its predecessor good for `graceMs`, both ways: accepted from the peer,
// and tried again when the peer refuses the new one (TokenRotation).
// A file that later fails to read or validate keeps the last good content.
import { readFileSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { federationPeersFileSchema, type FederationPeer } from '@warmpool/api';
import { AcceptedToken, ConfigError, messageOf, readTokenFile, TokenRotation, type Logger } from '@warmpool/runtime';

/** Where, and with which token, this cluster forwards claims to one peer. */
export interface OutboundPeer {
  readonly id: string;
  /** The peer's claim API origin (`scheme://host[:port]`); request paths are built on it with the URL API. */
  readonly origin: string;
  /** The token presented to this peer, across its rotations. */
  readonly tokens: TokenRotation<string>;
}

/** What the claim API and the Env claim router need of the peers. */
export interface PeerCredentials {
  /** The peer a bearer token is from; undefined for any other token (or one that two peers share). */
  authenticate(token: string): string | undefined;
  /** How to reach peer `id`; undefined when this cluster does not forward claims to it. */
  outbound(id: string): OutboundPeer | undefined;
}

export interface PeerDirectoryOptions {
  /** This cluster's id: no peer may carry it. */
  clusterId: string;
  /** How long a replaced token stays good (accepted, and tried again). */
  graceMs: number;
  /** How often the files are checked for changes (default 10 s). */
  checkIntervalMs?: number;
  logger: Logger;
}

interface HeldPeer {
  readonly id: string;
  readonly tokenFile: string | undefined;
  readonly acceptedTokenFile: string | undefined;
  origin: string | undefined;
  readonly outbound: TokenRotation<string> | undefined;
  readonly accepted: AcceptedToken | undefined;
  tokenStamp: string | undefined;
  acceptedStamp: string | undefined;
}

const DEFAULT_CHECK_INTERVAL_MS = 10_000;

export class PeerDirectory implements PeerCredentials {
  readonly file: string;
  readonly #options: PeerDirectoryOptions;
  readonly #timer: NodeJS.Timeout;
  #stamp: string | undefined;
  #peers = new Map<string, HeldPeer>();

  /** Reads the peers file and every token it names; throws ConfigError when any is unreadable or invalid. */
  constructor(file: string, options: PeerDirectoryOptions) {
    this.file = resolve(file);
    this.#options = options;
    this.#refresh(true);
    this.#timer = setInterval(() => this.#refresh(false), options.checkIntervalMs ?? DEFAULT_CHECK_INTERVAL_MS);
    this.#timer.unref();
  }

  /** The configured peer ids, sorted. */
  get ids(): string[] {
    return [...this.#peers.keys()].sort();
  }

  authenticate(token: string): string | undefined {
    let match: string | undefined;
    let matches = 0;
    // Every peer is compared (no early exit), so the answer takes as long whichever peer, if any, matched.
    for (const peer of this.#peers.values()) {
      if (peer.accepted?.matches(token) === true) {
        match = peer.id;
        matches++;
      }
    }
    return matches === 1 ? match : undefined;
  }

  outbound(id: string): OutboundPeer | undefined {
    const peer = this.#peers.get(id);
    if (peer?.origin === undefined || peer.outbound === undefined) return undefined;
    return { id, origin: peer.origin, tokens: peer.outbound };
  }

  /** Re-reads what changed now (also what every check does). */
  refresh(): void {
    this.#refresh(false);
  }

  close(): void {
    clearInterval(this.#timer);
  }

  #refresh(first: boolean): void {
    const { logger } = this.#options;
    try {
      const stamp = stampOf(this.file);
      if (stamp !== this.#stamp) {
        this.#peers = this.#rebuild(this.#parse());
        this.#stamp = stamp;
        if (!first) logger.info('federation peers file reloaded', { file: this.file, peers: this.ids });
      }
    } catch (err) {
      if (first) throw err instanceof ConfigError ? err : new ConfigError(`--federation-peers-file: ${messageOf(err)}`);
      logger.error('cannot reload the federation peers file: keeping the last good one', {
        file: this.file,
        err: messageOf(err),
      });
    }
    for (const peer of this.#peers.values()) this.#readTokens(peer, first);
    if (first) this.#warnSharedAcceptedTokens();
  }

  #parse(): FederationPeer[] {
    let json: unknown;
    try {
      json = JSON.parse(readFileSync(this.file, 'utf8'));
    } catch (err) {
      throw new ConfigError(`--federation-peers-file ${this.file}: not JSON (${messageOf(err)})`);
    }
    const parsed = federationPeersFileSchema.safeParse(json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new ConfigError(
        `--federation-peers-file ${this.file}: ${issue?.path.join('.') || '(root)'}: ${issue?.message ?? 'invalid'}`,
      );
    }
    const self = parsed.data.peers.find((p) => p.id === this.#options.clusterId);
    if (self !== undefined)
      throw new ConfigError(
        `--federation-peers-file ${this.file}: peer ${self.id} is this cluster's own id (--cluster-id)`,
      );
    return parsed.data.peers;
  }

  /** The new list; a peer whose token files did not change keeps its tokens (and their grace). */
  #rebuild(peers: readonly FederationPeer[]): Map<string, HeldPeer> {
    const base = dirname(this.file);
    const next = new Map<string, HeldPeer>();
    for (const peer of peers) {
      const tokenFile = peer.tokenFile === undefined ? undefined : resolve(base, peer.tokenFile);
      const acceptedTokenFile =
        peer.acceptedTokenFile === undefined ? undefined : resolve(base, peer.acceptedTokenFile);
      const held = this.#peers.get(peer.id);
      if (held !== undefined && held.tokenFile === tokenFile && held.acceptedTokenFile === acceptedTokenFile) {
        held.origin = peer.claimsUrl;
        next.set(peer.id, held);
        continue;
      }
      const { graceMs } = this.#options;
      next.set(peer.id, {
        id: peer.id,
        tokenFile,
        acceptedTokenFile,
        origin: peer.claimsUrl,
        outbound:
          tokenFile === undefined ? undefined : new TokenRotation<string>(undefined, { graceMs, derive: (t) => t }),
        accepted: acceptedTokenFile === undefined ? undefined : new AcceptedToken(undefined, { graceMs }),
        tokenStamp: undefined,
        acceptedStamp: undefined,
      });
    }
    return next;
  }

  #readTokens(peer: HeldPeer, first: boolean): void {
    const { logger } = this.#options;
    const read = (file: string | undefined, stamp: string | undefined, use: (token: string | undefined) => void) => {
      if (file === undefined) return stamp;
      try {
        const next = stampOf(file);
        if (next === stamp) return stamp;
        use(readTokenFile(file));
        return next;
      } catch (err) {
        if (first) throw new ConfigError(`--federation-peers-file: peer ${peer.id}: ${messageOf(err)}`);
        logger.error('cannot read a federation peer token file: keeping the last good token', {
          peer: peer.id,
          file,
          err: messageOf(err),
        });
        return stamp;
      }
    };
    peer.tokenStamp = read(peer.tokenFile, peer.tokenStamp, (token) => {
      if (peer.outbound?.set(token) === true && !first)
        logger.info('federation peer token reloaded (presented to the peer)', { peer: peer.id });
    });
    peer.acceptedStamp = read(peer.acceptedTokenFile, peer.acceptedStamp, (token) => {
      const before = peer.accepted?.value;
      peer.accepted?.set(token);
      if (!first && before !== token) {
        logger.info('federation peer token reloaded (accepted from the peer)', { peer: peer.id });
        this.#warnSharedAcceptedTokens();
      }
    });
  }

  /** Two peers with one accepted token are neither of them: say so, once per change. */
  #warnSharedAcceptedTokens(): void {
    const byToken = new Map<string, string[]>();
    for (const peer of this.#peers.values()) {
      const token = peer.accepted?.value;
      if (token !== undefined) byToken.set(token, [...(byToken.get(token) ?? []), peer.id]);
    }
    for (const ids of byToken.values())
      if (ids.length > 1)
        this.#options.logger.error('federation peers share one accepted token: none of them is accepted', {
          peers: ids,
        });
  }
}

function stampOf(path: string): string {
  const stat = statSync(path);
  return `${stat.ino}:${stat.mtimeMs}:${stat.size}`;
}
