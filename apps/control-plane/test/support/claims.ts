// Claim API helpers for the specs: RBAC objects, service-account tokens, calls
// to the claim API, and what the nodes hold (read from each fake-sandboxd).
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
