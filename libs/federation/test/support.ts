import { federationRecord, ManualClock } from '@warmpool/harness';
import { CapacityRegistry, type CapacityObservation } from '../src/index.js';

export const LOCAL = 'local';
export const TTL_MS = 10_000;

/** A record of Env ns/env in a foreign cluster: nothing idle, no autoscaling unless overridden. */
export function member(overrides: Partial<CapacityObservation> = {}): CapacityObservation {
  return {
    clusterId: 'east',
    ...federationRecord({ namespace: 'ns', envName: 'env', memberPool: 'pool-a', scalingGroup: 'gpu' }, 0),
    ...overrides,
  };
}

export function registryWithClock(ttlMs = TTL_MS): { registry: CapacityRegistry; clock: ManualClock } {
  const clock = new ManualClock(5_000);
  return { registry: new CapacityRegistry({ localClusterId: LOCAL, ttlMs, now: clock.now }), clock };
}
