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
import { Hono } from 'hono';
import type { EnvClaimRouter, EnvGrant } from '../../provisioning/env-claim-router.js';
import { generateClaimRef } from '../../provisioning/claim-ref.js';
import { callerGoneWith, type CallerGone } from '../../provisioning/caller-signal.js';
import type { ClaimService } from '../../provisioning/claim-service.js';
import type { RouteAccess } from '../access/route-access.js';
import {
  bodyOf,
  callerOf,
  callerScope,
  fail,
  isRefusal,
  ownerOf,
  type Caller,
  type ClaimApiEnv,
  type Refusal,
} from './answers.js';
import { createClaimBodySchema } from './create-body.js';

export const MAX_BODY_BYTES = 64 * 1024;
export const INVALID_BODY = 'the body is not a JSON object of the documented fields';
/** The verb on sandboxclaims a create needs, on both of its paths. */
export const CREATE_VERB = 'create' satisfies ClaimVerb;

export interface CreateOptions {
  claims: ClaimService;
  /** Claims for a SandboxEnv (`env` in the body); without it such a body is refused. */
  envs?: EnvClaimRouter | undefined;
  /** Whether a SandboxClaim of that name exists (its name is refused as a claimRef). */
  sandboxClaimNamed?: ((namespace: string, name: string) => boolean) | undefined;
}

/** One create request, once its caller is admitted and its body read. */
export interface CreateRequest {
  caller: Caller;
  /** The path's namespace, admitted. */
  namespace: string;
  body: CreateClaimRequest;
  /** The request's CLAIMREF_GENERATED_HEADER, as sent (heeded from a peer only). */
  claimRefGenerated: string | undefined;
  /** The caller gives up when its connection closes before the answer. */
  givenUp: CallerGone;
}

/** The route on Hono; the same request served ahead of Hono is direct-create.ts's. Both serve it with createClaim. */
export function createRoute(access: RouteAccess<ClaimApiEnv, ClaimVerb>, options: CreateOptions): Hono<ClaimApiEnv> {
  return new Hono<ClaimApiEnv>().post('/v1/namespaces/:namespace/claims', access.allow(CREATE_VERB), async (c) => {
    const body = await readJsonBody(c, createClaimBodySchema, {
      maxBytes: MAX_BODY_BYTES,
      invalidMessage: INVALID_BODY,
    });
    if (!body.ok) return fail(c, 'BadRequest', body.error);
    const served = await createClaim(
      {
        caller: callerOf(c),
        namespace: c.get('namespace'),
        body: body.value,
        claimRefGenerated: requestHeader(c, CLAIMREF_GENERATED_HEADER),
        givenUp: callerGoneWith(c.req.raw.signal),
      },
      options,
    );
    return isRefusal(served) ? fail(c, served.refused, served.error) : c.json<ClaimBody>(served, 200);
  });
}

/** Serves one create: the claim's body (with its token), or the refusal; rejects with the pipeline's ClaimFailure. */
export async function createClaim(request: CreateRequest, options: CreateOptions): Promise<ClaimBody | Refusal> {
  const { caller, namespace, body } = request;
  const { claimRef, target } = body;
  if (claimRef !== undefined && options.sandboxClaimNamed?.(namespace, claimRef) === true)
    return {
      refused: 'BadRequest',
      error: `claimRef ${claimRef} names a SandboxClaim in namespace ${namespace}; choose another claimRef`,
    };
  if ((caller.peer !== undefined) !== (target !== undefined))
    return {
      refused: 'Forbidden',
      error:
        caller.peer !== undefined
          ? 'a peer cluster may only create claims pinned to a member pool (target)'
          : 'target is only for peer clusters presenting their peer token',
    };
  if (body.env !== undefined) return claimFromEnv(request, options, body.env);
  const { warmPool } = body;
  if (warmPool === undefined) return { refused: 'BadRequest', error: 'give exactly one of warmPool and env' };
  const grant = await options.claims.claim(
    {
      namespace,
      warmPool,
      claimRef: claimRef ?? generateClaimRef(),
      ttlSeconds: body.ttlSeconds ?? DEFAULT_CLAIM_TTL_SECONDS,
      owner: ownerOf(caller, `pool:${warmPool}`),
      claimRefGenerated: claimRef === undefined,
    },
    { givenUp: request.givenUp },
  );
  return bodyOf(grant, true);
}

async function claimFromEnv(request: CreateRequest, options: CreateOptions, env: string): Promise<ClaimBody | Refusal> {
  if (options.envs === undefined)
    return {
      refused: 'BadRequest',
      error: 'claims for a SandboxEnv need the claim pipeline with SandboxEnvs (not configured here)',
    };
  const { caller, namespace, body } = request;
  const { peer } = caller;
  const { claimRef, target } = body;
  const order = {
    namespace,
    env,
    scalingGroup: body.scalingGroup ?? '',
    scope: callerScope(caller, namespace),
    owner: ownerOf(caller, `env:${env}`),
    claimRef: claimRef ?? generateClaimRef(),
    ttlSeconds: body.ttlSeconds ?? DEFAULT_CLAIM_TTL_SECONDS,
    // A peer forwards the claimRef its caller's front door made up, and says so: a sandbox served after it gave up
    // is released here too.
    claimRefGenerated: claimRef === undefined || (peer !== undefined && request.claimRefGenerated === '1'),
  };
  const served: EnvGrant =
    peer !== undefined && target !== undefined
      ? await options.envs.claimPinned(peer, order, target, { givenUp: request.givenUp })
      : await options.envs.claim(order, { givenUp: request.givenUp });
  return { ...bodyOf(served.grant, true), cluster: served.cluster, memberPool: served.memberPool };
}
