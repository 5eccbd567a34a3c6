// A claim once made: read it (without its token), renew it, release it, by
// sandbox id or claimRef, in the caller's own key space (scopeOf). With
// SandboxEnvs, renew and release go through the Env claim router, which
// knows the claims served by a peer cluster.
import { renewClaimRequestSchema, DEFAULT_CLAIM_TTL_SECONDS, type ClaimBody } from '@warmpool/api';
import type { ClaimVerb } from '@warmpool/kube';
import { readJsonBody } from '@warmpool/runtime';
import { Hono } from 'hono';
import type { EnvClaimRouter } from '../../provisioning/env-claim-router.js';
import type { ClaimService } from '../../provisioning/claim-service.js';
import type { RouteAccess } from '../access/route-access.js';
import { bodyOf, claimId, fail, scopeOf, type ClaimApiEnv } from './answers.js';
import { INVALID_BODY, MAX_BODY_BYTES } from './create.js';

const CLAIM = '/v1/namespaces/:namespace/claims/:id';
const BAD_ID = 'the claim id in the path is not a sandbox id or claimRef';

export function claimRoutes(
  access: RouteAccess<ClaimApiEnv, ClaimVerb>,
  claims: ClaimService,
  envs: EnvClaimRouter | undefined,
): Hono<ClaimApiEnv> {
  return new Hono<ClaimApiEnv>()
    .get(CLAIM, access.allow('get'), async (c) => {
      const id = claimId(c);
      if (id === undefined) return fail(c, 'BadRequest', BAD_ID);
      const grant = await claims.lookup(scopeOf(c), id);
      if (grant === undefined)
        return fail(c, 'ClaimNotFound', `claim ${id} not found in namespace ${c.get('namespace')}`);
      return c.json<ClaimBody>(bodyOf(grant, false), 200);
    })
    .post(`${CLAIM}/renew`, access.allow('update'), async (c) => {
      const id = claimId(c);
      if (id === undefined) return fail(c, 'BadRequest', BAD_ID);
      const body = await readJsonBody(c, renewClaimRequestSchema, {
        maxBytes: MAX_BODY_BYTES,
        invalidMessage: INVALID_BODY,
        emptyAs: {},
      });
      if (!body.ok) return fail(c, 'BadRequest', body.error);
      const ttlSeconds = body.value.ttlSeconds ?? DEFAULT_CLAIM_TTL_SECONDS;
      const renewed =
        envs !== undefined
          ? await envs.renew(scopeOf(c), id, ttlSeconds)
          : await claims.renew(scopeOf(c), id, ttlSeconds);
      return c.json({ deadline: renewed.deadline }, 200);
    })
    .delete(CLAIM, access.allow('delete'), async (c) => {
      const id = claimId(c);
      if (id === undefined) return fail(c, 'BadRequest', BAD_ID);
      const released = envs !== undefined ? await envs.release(scopeOf(c), id) : await claims.release(scopeOf(c), id);
      if (!released) return fail(c, 'ClaimNotFound', `claim ${id} not found in namespace ${c.get('namespace')}`);
      return c.body(null, 204);
    });
}
