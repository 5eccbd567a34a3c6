// A SandboxWarmPool's desired replicas, read in one place.
import type { SandboxWarmPool } from '@warmpool/api';

/** spec.replicas, defaulted as upstream's CRD does (1); a value that is not a whole number ≥ 0 counts as 0. */
export function replicasOf(pool: SandboxWarmPool): number {
  const replicas = pool.spec?.replicas;
  return typeof replicas === 'number' && Number.isSafeInteger(replicas) && replicas >= 0
    ? replicas
    : replicas === undefined
      ? 1
      : 0;
}
