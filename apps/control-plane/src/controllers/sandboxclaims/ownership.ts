// Which SandboxClaims warmpool answers. Coexistence with upstream
// agent-sandbox's controller is decided per pool, as for the warm-pool driver:
// a claim of a pool whose SandboxTemplate opts in (`warmpool.dev/driver:
// sandboxd`) is ours; every other claim is upstream's, and we neither write
// its status nor add a finalizer, because upstream's controller may be serving
// it at this very moment and two writers of one Ready condition would fight.
//
// A claim can only be told "PoolNotFound" or "NotDriven" by warmpool when it is
// addressed to warmpool beyond doubt:
// - warmpool served it (Ready=True with warmpool's reason Claimed, or the
//   finalizer or sandbox-id annotation earlier versions wrote), and its pool
//   was deleted or opted out since, or
// - it carries `warmpool.dev/driver: sandboxd` itself (the user asked warmpool
//   explicitly, e.g. to be told about a typo in the pool name rather than hear
//   nothing when upstream's controller is not installed).
// An unaddressed claim of a missing or undriven pool is left alone; it is
// looked at again when its pool or template appears or opts in.
import {
  DRIVER_ANNOTATION,
  DRIVER_SANDBOXD,
  SANDBOX_CLAIM_FINALIZER,
  SANDBOX_ID_ANNOTATION,
  type SandboxClaim,
  type SandboxTemplate,
  type SandboxWarmPool,
} from '@warmpool/api';
import { isDriven } from '@warmpool/pool-model';
import { isReadyClaimed } from './status.js';

export interface ClaimCaches {
  pool(namespace: string, name: string): SandboxWarmPool | undefined;
  template(namespace: string, name: string): SandboxTemplate | undefined;
}

export type ClaimOwnership =
  | { kind: 'ours'; pool: string }
  /** Addressed to warmpool, but there is no driven pool to serve it from. */
  | { kind: 'unservable'; reason: 'PoolNotFound' | 'NotDriven'; message: string }
  | { kind: 'not-ours' };

/** The finalizer earlier versions put on the claims they served (this one puts none, but lifts it). */
export function hasFinalizer(claim: SandboxClaim): boolean {
  return claim.metadata.finalizers?.includes(SANDBOX_CLAIM_FINALIZER) === true;
}

/**
 * Whether warmpool served the claim and it still holds its sandbox: Ready=True with warmpool's reason Claimed (only
 * warmpool writes that reason), or the sandbox-id annotation an earlier version wrote.
 */
export function isServed(claim: SandboxClaim): boolean {
  return isReadyClaimed(claim) || claim.metadata.annotations?.[SANDBOX_ID_ANNOTATION] !== undefined;
}

/** Whether the claim is addressed to warmpool whatever its pool says (see the file comment). */
export function addressedToWarmpool(claim: SandboxClaim): boolean {
  const annotations = claim.metadata.annotations ?? {};
  return isServed(claim) || hasFinalizer(claim) || annotations[DRIVER_ANNOTATION] === DRIVER_SANDBOXD;
}

export function ownershipOf(claim: SandboxClaim, caches: ClaimCaches): ClaimOwnership {
  const namespace = claim.metadata.namespace ?? '';
  const poolName = claim.spec?.warmPoolRef?.name ?? '';
  const pool = poolName === '' ? undefined : caches.pool(namespace, poolName);
  const templateName = pool?.spec?.sandboxTemplateRef?.name;
  const template = templateName === undefined ? undefined : caches.template(namespace, templateName);
  if (pool !== undefined && template !== undefined && isDriven(template)) return { kind: 'ours', pool: poolName };
  if (!addressedToWarmpool(claim)) return { kind: 'not-ours' };
  if (pool === undefined) {
    return {
      kind: 'unservable',
      reason: 'PoolNotFound',
      message:
        poolName === '' ? 'spec.warmPoolRef.name is empty' : `SandboxWarmPool ${namespace}/${poolName} does not exist`,
    };
  }
  if (template === undefined) {
    return {
      kind: 'unservable',
      reason: 'NotDriven',
      message: `SandboxTemplate ${namespace}/${templateName ?? ''} of SandboxWarmPool ${poolName} does not exist, so warmpool does not drive the pool`,
    };
  }
  return {
    kind: 'unservable',
    reason: 'NotDriven',
    message: `SandboxWarmPool ${namespace}/${poolName} is not driven by warmpool: its SandboxTemplate ${templateName ?? ''} lacks the annotation ${DRIVER_ANNOTATION}: ${DRIVER_SANDBOXD}`,
  };
}
