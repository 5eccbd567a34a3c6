// Which pool updates poke a run: what can change what a run pushes or writes,
// and nothing else (our own status writes come back as updates too).
import { IDLE_HIBERNATE_ANNOTATION, WARM_MAX_ANNOTATION, type SandboxWarmPool } from '@warmpool/api';
import { poolObject } from '@warmpool/harness';
import { describe, expect, it } from 'vitest';
import { poolChangeMatters } from '../../../src/controllers/warmpool/watch.js';

const pool = (extra: Partial<SandboxWarmPool['metadata']> = {}): SandboxWarmPool =>
  poolObject('ns', 'pool', 'tpl', 3, extra);

describe('a pool update pokes a run', () => {
  it('when its spec changed (the generation moved) or it is being deleted', () => {
    expect(poolChangeMatters(pool(), pool({ generation: 2 }))).toBe(true);
    expect(poolChangeMatters(pool(), pool({ deletionTimestamp: '2026-12-02T00:00:00Z' }))).toBe(true);
  });

  it("when an annotation that sets sandboxd's pool options changed, appeared or went (they move no generation)", () => {
    const capped = pool({ annotations: { [WARM_MAX_ANNOTATION]: '4' } });
    expect(poolChangeMatters(pool(), capped)).toBe(true);
    expect(poolChangeMatters(capped, pool({ annotations: { [WARM_MAX_ANNOTATION]: '5' } }))).toBe(true);
    expect(poolChangeMatters(capped, pool())).toBe(true);
    expect(poolChangeMatters(pool(), pool({ annotations: { [IDLE_HIBERNATE_ANNOTATION]: '600' } }))).toBe(true);
  });

  it('not for its status, another annotation or a label', () => {
    const written = { ...pool({ resourceVersion: '2' }), status: { replicas: 3, readyReplicas: 3 } } as SandboxWarmPool;
    expect(poolChangeMatters(pool(), written)).toBe(false);
    expect(poolChangeMatters(pool(), pool({ annotations: { 'example.com/owner': 'team-a' } }))).toBe(false);
    expect(poolChangeMatters(pool(), pool({ labels: { tier: 'gold' } }))).toBe(false);
  });
});
