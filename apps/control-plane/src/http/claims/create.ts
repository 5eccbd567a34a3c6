// POST /v1/namespaces/{ns}/claims: a claim from a pool, or from a SandboxEnv
// (a member pool here or, with federation, in a peer cluster). A peer may
// only create claims pinned to a member pool (`target`), and only a peer may
// pin one. A claimRef that names a SandboxClaim is refused, so a claim and a
// Sandbox of one name never belong to two owners.
import {
  CLAIMREF_GENERATED_HEADER,
  DEFAULT_CLAIM_TTL_SECONDS,
  type ClaimBody,
  type CreateClaimRequest,
} from '@warmpool/api';
import type { ClaimVerb } from '@warmpool/kube';
import { readJsonBody, requestHeader } from '@warmpool/runtime';
import { Hono, type Context } from 'hono';
import type { EnvClaimRouter, EnvGrant } from '../../provisioning/env-claim-router.js';
import { generateClaimRef } from '../../provisioning/claim-ref.js';
import type { ClaimService } from '../../provisioning/claim-service.js';
import type { RouteAccess } from '../access/route-access.js';
import { bodyOf, fail, ownerOf, scopeOf, type ClaimApiEnv } from './answers.js';
import { createClaimBodySchema } from './create-body.js';

export const MAX_BODY_BYTES = 64 * 1024;
export const INVALID_BODY = 'the body is not a JSON object of the documented fields';

export interface CreateOptions {
  claims: ClaimService;
  /** Claims for a SandboxEnv (`env` in the body); without it such a body is refused. */
  envs?: EnvClaimRouter | undefined;
  /** Whether a SandboxClaim of that name exists (its name is refused as a claimRef). */
  sandboxClaimNamed?: ((namespace: string, name: string) => boolean) | undefined;
}

export function createRoute(access: RouteAccess<ClaimApiEnv, ClaimVerb>, options: CreateOptions): Hono<ClaimApiEnv> {
  return new Hono<ClaimApiEnv>().post('/v1/namespaces/:namespace/claims', access.allow('create'), async (c) => {
    const body = await readJsonBody(c, createClaimBodySchema, {
      maxBytes: MAX_BODY_BYTES,
      invalidMessage: INVALID_BODY,
    });
    if (!body.ok) return fail(c, 'BadRequest', body.error);
    const { claimRef, target } = body.value;
    const namespace = c.get('namespace');
    if (claimRef !== undefined && options.sandboxClaimNamed?.(namespace, claimRef) === true)
      return fail(
        c,
        'BadRequest',
        `claimRef ${claimRef} names a SandboxClaim in namespace ${namespace}; choose another claimRef`,
      );
    const peer = c.get('peer');
    if ((peer !== undefined) !== (target !== undefined))
      return fail(
        c,
        'Forbidden',
        peer !== undefined
          ? 'a peer cluster may only create claims pinned to a member pool (target)'
          : 'target is only for peer clusters presenting their peer token',
      );
    if (body.value.env !== undefined) return claimFromEnv(c, options, body.value, body.value.env);
    const { warmPool } = body.value;
    if (warmPool === undefined) return fail(c, 'BadRequest', 'give exactly one of warmPool and env');
    const grant = await options.claims.claim(
      {
        namespace,
        warmPool,
        claimRef: claimRef ?? generateClaimRef(),
        ttlSeconds: body.value.ttlSeconds ?? DEFAULT_CLAIM_TTL_SECONDS,
        owner: ownerOf(c, `pool:${warmPool}`),
        claimRefGenerated: claimRef === undefined,
      },
      { signal: c.req.raw.signal },
    );
    return c.json<ClaimBody>(bodyOf(grant, true), 200);
  });
}

async function claimFromEnv(
  c: Context<ClaimApiEnv>,
  options: CreateOptions,
  request: CreateClaimRequest,
  env: string,
): Promise<Response> {
  if (options.envs === undefined)
    return fail(
      c,
      'BadRequest',
      'claims for a SandboxEnv need the claim pipeline with SandboxEnvs (not configured here)',
    );
  const peer = c.get('peer');
  const { claimRef, target } = request;
  const order = {
    namespace: c.get('namespace'),
    env,
    scalingGroup: request.scalingGroup ?? '',
    scope: scopeOf(c),
    owner: ownerOf(c, `env:${env}`),
    claimRef: claimRef ?? generateClaimRef(),
    ttlSeconds: request.ttlSeconds ?? DEFAULT_CLAIM_TTL_SECONDS,
    // A peer forwards the claimRef its caller's front door made up, and says so: a sandbox served after it gave up
    // is released here too.
    claimRefGenerated:
      claimRef === undefined || (peer !== undefined && requestHeader(c, CLAIMREF_GENERATED_HEADER) === '1'),
  };
  const served: EnvGrant =
    peer !== undefined && target !== undefined
      ? await options.envs.claimPinned(peer, order, target, { signal: c.req.raw.signal })
      : await options.envs.claim(order, { signal: c.req.raw.signal });
  return c.json<ClaimBody>(
    { ...bodyOf(served.grant, true), cluster: served.cluster, memberPool: served.memberPool },
    200,
  );
}
