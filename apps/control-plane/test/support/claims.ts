// Claim API helpers for the specs: RBAC objects, service-account tokens, calls
// to the claim API, and what the nodes hold (read from each fake-sandboxd).
import { claimNameOf, parseNodeClaimRef } from '@warmpool/api';
import { httpCall, type TestCluster } from '@warmpool/harness';
import type { Fleet } from './fleet.js';
import { kubectl } from './objects.js';

export interface Answer<T = unknown> {
  status: number;
  body: T;
  headers: Headers;
}

/** One call to the claim API; `token` undefined sends no Authorization header. */
export async function callClaims<T = Record<string, unknown>>(
  base: string,
  method: string,
  path: string,
  token: string | undefined,
  body?: unknown,
): Promise<Answer<T>> {
  const sent = typeof body === 'string' ? { rawBody: body } : body === undefined ? {} : { body };
  const answer = await httpCall(base, method, path, { token: token ?? null, ...sent });
  // The body parsed when it is JSON, else its text (undefined when empty).
  const parsed = answer.json !== undefined ? answer.json : answer.text === '' ? undefined : answer.text;
  return { status: answer.status, body: parsed as T, headers: answer.headers };
}

/**
 * A ServiceAccount, optionally with a Role allowing `verbs` on sandboxclaims in its namespace; answers a token for it.
 */
export async function serviceAccountToken(
  cluster: TestCluster,
  namespace: string,
  name: string,
  verbs: string[] | undefined,
): Promise<string> {
  await kubectl(cluster, ['create', 'serviceaccount', name, '-n', namespace]);
  if (verbs !== undefined) {
    await kubectl(cluster, [
      'create',
      'role',
      `${name}-claims`,
      '-n',
      namespace,
      `--verb=${verbs.join(',')}`,
      '--resource=sandboxclaims.extensions.agents.x-k8s.io',
    ]);
    await kubectl(cluster, [
      'create',
      'rolebinding',
      `${name}-claims`,
      '-n',
      namespace,
      `--role=${name}-claims`,
      `--serviceaccount=${namespace}:${name}`,
    ]);
  }
  return (await kubectl(cluster, ['create', 'token', name, '-n', namespace, '--duration=1h'])).trim();
}

/** Every live claim on every node, as (node, claim_ref, id). */
export async function claimsOnNodes(
  fleet: Fleet,
  token: string,
): Promise<Array<{ node: string; claimRef: string | undefined; id: string }>> {
  const all = await Promise.all(
    fleet.nodes.map(async (node) => {
      const res = await fetch(`${node.sandboxdUrl}/v1/sandboxes`, { headers: { authorization: `Bearer ${token}` } });
      const body = (await res.json()) as { sandboxes: Array<{ id: string; claim_ref?: string }> };
      return body.sandboxes.map((s) => ({ node: node.name, claimRef: s.claim_ref, id: s.id }));
    }),
  );
  return all.flat();
}

/** Releases every claim on every node whose claim_ref starts with `prefix`. */
export async function releaseOnNodes(fleet: Fleet, token: string, prefix: string): Promise<void> {
  const claims = await claimsOnNodes(fleet, token);
  await Promise.all(
    claims
      .filter((c) => c.claimRef?.startsWith(prefix) === true)
      .map(async (c) => {
        const node = fleet.nodes.find((n) => n.name === c.node);
        if (node === undefined) return;
        const res = await fetch(`${node.sandboxdUrl}/v1/sandboxes/${c.id}/release`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}` },
        });
        await res.body?.cancel();
      }),
  );
}

/** A burst of HTTP claims, each with its own claimRef, as a client that retries 5xx with the same claimRef would. */
export interface ClaimBurst {
  /** Claim API URLs, taken in turn by successive attempts. */
  urls: () => readonly string[];
  namespace: string;
  token: string;
  warmPool: string;
  /** claimRefs `<prefix>-c<n>`. */
  prefix: string;
  claims: number;
  inFlight: number;
}

/** Runs the burst (and `meanwhile` beside it); answers the sandbox id each claimRef was served, by claimRef. */
export async function claimBurst(burst: ClaimBurst, meanwhile: Promise<unknown>): Promise<Map<string, string>> {
  const answered = new Map<string, string>();
  let next = 0;
  const lane = async (): Promise<void> => {
    for (let n = next++; n < burst.claims; n = next++) {
      const claimRef = `${burst.prefix}-c${n}`;
      answered.set(claimRef, await claimUntilServed(burst, claimRef, n));
    }
  };
  await Promise.all([...Array.from({ length: burst.inFlight }, lane), meanwhile]);
  return answered;
}

async function claimUntilServed(burst: ClaimBurst, claimRef: string, n: number): Promise<string> {
  for (let attempt = 0; ; attempt++) {
    const urls = burst.urls();
    const answer = await callClaims<{ id?: string }>(
      urls[(n + attempt) % urls.length] ?? '',
      'POST',
      `/v1/namespaces/${burst.namespace}/claims`,
      burst.token,
      { warmPool: burst.warmPool, claimRef, ttlSeconds: 600 },
    );
    if (answer.status === 200 && answer.body.id !== undefined) return answer.body.id;
    if (answer.status < 500 && answer.status !== 429) throw new Error(`${claimRef}: ${JSON.stringify(answer.body)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** What the nodes hold of a burst: claimRefs held more than once, and sandboxes no client was answered. */
export async function burstOnNodes(
  fleet: Fleet,
  fleetToken: string,
  burst: Pick<ClaimBurst, 'namespace' | 'prefix'>,
  answered: ReadonlyMap<string, string>,
): Promise<{ duplicates: Array<[string, string[]]>; leaks: string[]; unanswered: string[] }> {
  const byClaimRef = new Map<string, string[]>();
  for (const row of await claimsOnNodes(fleet, fleetToken)) {
    const owner = parseNodeClaimRef(row.claimRef);
    if (owner?.door !== 'http' || owner.namespace !== burst.namespace) continue;
    if (!owner.claimRef.startsWith(`${burst.prefix}-`)) continue;
    byClaimRef.set(owner.claimRef, [...(byClaimRef.get(owner.claimRef) ?? []), row.id]);
  }
  const answeredIds = new Set(answered.values());
  return {
    duplicates: [...byClaimRef].filter(([, ids]) => ids.length > 1),
    leaks: [...byClaimRef.values()].flat().filter((id) => !answeredIds.has(id)),
    unanswered: [...answered].filter(([claimRef, id]) => byClaimRef.get(claimRef)?.[0] !== id).map(([ref]) => ref),
  };
}

/** Releases every claim of a burst through the claim API. */
export async function releaseBurst(url: string, burst: Omit<ClaimBurst, 'urls' | 'warmPool'>): Promise<void> {
  await Promise.all(
    Array.from({ length: burst.inFlight }, async (_, lane) => {
      for (let n = lane; n < burst.claims; n += burst.inFlight)
        await callClaims(url, 'DELETE', `/v1/namespaces/${burst.namespace}/claims/${burst.prefix}-c${n}`, burst.token);
    }),
  );
}

/** `<namespace>/<name>` of the claim a node's claim_ref names (its claimRef, or its SandboxClaim's name), if warmpool's. */
export function claimOfNodeRef(nodeRef: string | undefined): string | undefined {
  const owner = parseNodeClaimRef(nodeRef);
  if (owner === undefined) return undefined;
  const { namespace, name } = claimNameOf(owner);
  return `${namespace}/${name}`;
}
