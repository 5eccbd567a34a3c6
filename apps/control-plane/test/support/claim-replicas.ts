// Two control-plane replicas serving claims on a test world, for the specs
// that take Redis away under them (a crash, a freeze): started, one leading,
// the pool warm on every node and every replica ready to claim.
import { eventually } from '@warmpool/harness';
import type { ControlPlane, ControlPlaneOptions } from '../../src/options.js';
import { claimsReady } from './metrics.js';
import type { TestWorld } from './world.js';

type ClaimsOptions = NonNullable<ControlPlaneOptions['claims']>;

export interface ClaimReplicasOptions {
  /** What differs from the world's claim options (world.claimsOptions). */
  claims: Partial<ClaimsOptions>;
  /** The pool key `template|net|size` to wait warm for, and how many on every node. */
  warmKey: string;
  warmPerNode: number;
}

export async function startClaimReplicas(world: TestWorld, options: ClaimReplicasOptions): Promise<ControlPlane[]> {
  const replicas: ControlPlane[] = [];
  for (let i = 0; i < 2; i++)
    replicas.push(
      await world.controlPlane('default', {
        claims: world.claimsOptions(options.claims),
        sandboxClaims: { janitor: { intervalMs: 3_600_000, recoveryPollMs: 200 } },
      }),
    );
  await eventually(() => replicas.some((r) => r.isLeader()), { what: 'a leader' });
  await eventually(async () => (await world.fleet.warmOf(options.warmKey)).every((w) => w >= options.warmPerNode), {
    what: `${options.warmPerNode} warm on every node`,
    timeoutMs: 30_000,
  });
  await everyReadyToClaim(replicas);
  return replicas;
}

export async function everyReadyToClaim(replicas: readonly ControlPlane[]): Promise<void> {
  await eventually(async () => (await Promise.all(replicas.map(claimsReady))).every(Boolean), {
    what: 'every replica ready to claim',
    timeoutMs: 30_000,
  });
}
