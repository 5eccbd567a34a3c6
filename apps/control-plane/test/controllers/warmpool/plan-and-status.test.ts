import type { PoolObservation } from '@warmpool/pool-model';
import { describe, expect, it } from 'vitest';
import { demandsOf, planPools, type PoolPlan } from '../../../src/controllers/warmpool/plan.js';
import {
  statusesOf,
  statusSig,
  transitionEvents,
  withTransitionTimes,
} from '../../../src/controllers/warmpool/status.js';
import { poolObject, templateObject } from '@warmpool/harness';

const templates = new Map([
  ['ns/ours', templateObject('ns', 'ours', 'img:1')],
  ['ns/also-ours', templateObject('ns', 'also-ours', 'img:1')],
  ['ns/large', templateObject('ns', 'large', 'img:1', { annotations: { 'warmpool.dev/size': 'large' } })],
  ['ns/upstream', templateObject('ns', 'upstream', 'img:1', { optIn: false })],
  ['ns/no-image', templateObject('ns', 'no-image', undefined)],
]);
const lookup = (namespace: string, name: string) => templates.get(`${namespace}/${name}`);

function observation(replicas: number, readyReplicas: number): PoolObservation {
  return { replicas, readyReplicas, warm: readyReplicas, refilling: 0, nodes: 1 };
}

describe('planPools', () => {
  it('drives pools whose template opts in, under the key the template names', () => {
    const [plan] = planPools([poolObject('ns', 'a', 'large', 4)], lookup);
    expect(plan).toMatchObject({ kind: 'driven', ref: 'ns/a', keyId: 'img:1|none|large', replicas: 4 });
  });

  it('leaves out pools whose template does not opt in, and pools being deleted', () => {
    const plans = planPools(
      [
        poolObject('ns', 'theirs', 'upstream', 3),
        poolObject('ns', 'going', 'ours', 3, { deletionTimestamp: '2030-01-01T00:00:00Z' }),
      ],
      lookup,
    );
    expect(plans).toEqual([]);
  });

  it('reports a missing template and a template that names no key', () => {
    const plans = planPools([poolObject('ns', 'lost', 'gone', 1), poolObject('ns', 'broken', 'no-image', 1)], lookup);
    expect(plans.map((p) => [p.ref, p.kind])).toEqual([
      ['ns/broken', 'invalid-template'],
      ['ns/lost', 'template-missing'],
    ]);
    expect((plans[0] as PoolPlan & { kind: 'invalid-template' }).message).toContain('has no image');
  });

  it('does not drive a template whose image is not printable, and says why', () => {
    const unprintable = new Map([
      ['ns/nul', templateObject('ns', 'nul', 'img\0:1')],
      ['ns/c1', templateObject('ns', 'c1', 'img\x9b:1')],
      ['ns/surrogate-a', templateObject('ns', 'surrogate-a', 'img\ud800')],
      ['ns/surrogate-b', templateObject('ns', 'surrogate-b', 'img\ud801')],
    ]);
    const plans = planPools(
      [...unprintable.keys()].map((ref) => poolObject('ns', ref.slice(3), ref.slice(3), 1)),
      (namespace, name) => unprintable.get(`${namespace}/${name}`),
    );
    expect(plans.map((p) => p.kind)).toEqual([
      'invalid-template',
      'invalid-template',
      'invalid-template',
      'invalid-template',
    ]);
    for (const plan of plans)
      expect((plan as PoolPlan & { kind: 'invalid-template' }).message).toMatch(/image ".*": must be printable/);
    expect(demandsOf(plans).size).toBe(0);
  });

  it('defaults replicas to 1, as the CRD does, and sums pools that share a key', () => {
    const plans = planPools([poolObject('ns', 'a', 'ours', undefined), poolObject('ns', 'b', 'also-ours', 4)], lookup);
    expect([...demandsOf(plans)]).toEqual([
      ['img:1|none|small', { key: { template: 'img:1', net: 'none', size: 'small' }, replicas: 5, options: {} }],
    ]);
  });
});

describe('statusesOf', () => {
  const base = { placed: new Map<string, number>(), unplaced: new Map<string, number>(), eligibleNodes: 3 };

  it('reports a filled pool Ready and not Degraded, with its selector and observed generation', () => {
    const plans = planPools([poolObject('ns', 'a', 'ours', 6, { generation: 4 })], lookup);
    const status = statusesOf({
      ...base,
      plans,
      observed: new Map([['img:1|none|small', observation(6, 6)]]),
      placed: new Map([['img:1|none|small', 6]]),
    }).get('ns/a')?.status;
    expect(status).toMatchObject({
      replicas: 6,
      readyReplicas: 6,
      selector: 'warmpool.dev/pool=a',
      observedGeneration: 4,
    });
    expect(status?.conditions).toEqual([
      {
        type: 'Ready',
        status: 'True',
        reason: 'AllReplicasWarm',
        message: '6 of 6 replicas are warm',
        observedGeneration: 4,
      },
      {
        type: 'Degraded',
        status: 'False',
        reason: 'AllPlaced',
        message: 'all 6 replicas are placed on nodes',
        observedGeneration: 4,
      },
    ]);
  });

  it('says how many replicas could not be placed', () => {
    const plans = planPools([poolObject('ns', 'a', 'ours', 10)], lookup);
    const out = statusesOf({
      ...base,
      plans,
      observed: new Map([['img:1|none|small', observation(7, 2)]]),
      placed: new Map([['img:1|none|small', 7]]),
      unplaced: new Map([['img:1|none|small', 3]]),
    }).get('ns/a');
    expect(out?.unplaced).toBe(3);
    expect(out?.status.conditions?.[0]).toMatchObject({
      status: 'False',
      reason: 'Filling',
      message: '2 of 10 replicas are warm; 3 cannot be placed',
    });
    expect(out?.status.conditions?.[1]).toMatchObject({
      status: 'True',
      reason: 'InsufficientRoom',
      message: '3 of 10 replicas are not placed: every eligible node is out of room',
    });
  });

  it("shares a key's counts between the pools that use it, in ref order", () => {
    const plans = planPools([poolObject('ns', 'a', 'ours', 2), poolObject('ns', 'b', 'also-ours', 4)], lookup);
    const statuses = statusesOf({
      ...base,
      plans,
      observed: new Map([['img:1|none|small', observation(6, 3)]]),
      placed: new Map([['img:1|none|small', 6]]),
    });
    expect(statuses.get('ns/a')?.status).toMatchObject({ replicas: 2, readyReplicas: 2 });
    expect(statuses.get('ns/b')?.status).toMatchObject({ replicas: 4, readyReplicas: 1 });
  });

  it('says NoEligibleNodes when no node could take any replica', () => {
    const plans = planPools([poolObject('ns', 'a', 'ours', 2, { generation: 3 })], lookup);
    const degraded = statusesOf({
      ...base,
      plans,
      observed: new Map(),
      unplaced: new Map([['img:1|none|small', 2]]),
      eligibleNodes: 0,
    }).get('ns/a')?.status.conditions?.[1];
    expect(degraded).toEqual({
      type: 'Degraded',
      status: 'True',
      reason: 'NoEligibleNodes',
      message: '2 of 2 replicas are not placed: no node is eligible (all draining, stale or absent)',
      observedGeneration: 3,
    });
  });

  it('reports a scaled-to-zero pool as Ready', () => {
    const plans = planPools([poolObject('ns', 'a', 'ours', 0)], lookup);
    expect(statusesOf({ ...base, plans, observed: new Map() }).get('ns/a')?.status.conditions?.[0]).toMatchObject({
      status: 'True',
      reason: 'ScaledToZero',
    });
  });

  it('writes only conditions for a pool whose template is missing', () => {
    const plans = planPools([poolObject('ns', 'lost', 'gone', 2)], lookup);
    const status = statusesOf({ ...base, plans, observed: new Map() }).get('ns/lost')?.status;
    expect(Object.keys(status ?? {})).toEqual(['conditions']);
    expect(status?.conditions?.map((c) => [c.type, c.status, c.reason])).toEqual([
      ['Ready', 'False', 'TemplateNotFound'],
      ['Degraded', 'True', 'TemplateNotFound'],
    ]);
  });
});

describe('condition transition times and events', () => {
  const ready = {
    type: 'Ready',
    status: 'True' as const,
    reason: 'AllReplicasWarm',
    message: '1 of 1 replicas are warm',
  };
  const notReady = { type: 'Ready', status: 'False' as const, reason: 'Filling', message: '0 of 1 replicas are warm' };

  it("keeps lastTransitionTime while a condition's status holds, and moves it when it flips", () => {
    const previous = { conditions: [{ ...notReady, lastTransitionTime: '2030-01-01T00:00:00Z' }] };
    const held = withTransitionTimes(
      { conditions: [{ ...notReady, message: 'other' }] },
      previous,
      Date.parse('2030-01-01T00:05:00Z'),
    );
    expect(held.conditions?.[0]?.lastTransitionTime).toBe('2030-01-01T00:00:00Z');
    const flipped = withTransitionTimes({ conditions: [ready] }, previous, Date.parse('2030-01-01T00:05:00Z'));
    expect(flipped.conditions?.[0]?.lastTransitionTime).toBe('2030-01-01T00:05:00Z');
  });

  it('compares statuses by content, whatever the order of conditions', () => {
    const degraded = { type: 'Degraded', status: 'False' as const };
    expect(statusSig({ replicas: 1, conditions: [ready, degraded] })).toBe(
      statusSig({ conditions: [degraded, ready], replicas: 1 }),
    );
    expect(statusSig({ replicas: 1 })).not.toBe(statusSig({ replicas: 2 }));
  });

  it('emits PoolReady when Ready turns true, a warning when Degraded turns true, AllPlaced when it clears', () => {
    const degraded = { type: 'Degraded', status: 'True' as const, reason: 'InsufficientRoom', message: '3 of 10 …' };
    const placed = { type: 'Degraded', status: 'False' as const, reason: 'AllPlaced', message: 'all placed' };
    expect(transitionEvents({ conditions: [notReady, placed] }, { conditions: [ready, placed] })).toEqual([
      { type: 'Normal', reason: 'PoolReady', message: ready.message },
    ]);
    expect(transitionEvents({ conditions: [notReady, placed] }, { conditions: [notReady, degraded] })).toEqual([
      { type: 'Warning', reason: 'InsufficientRoom', message: degraded.message },
    ]);
    expect(transitionEvents({ conditions: [notReady, degraded] }, { conditions: [notReady, placed] })).toEqual([
      { type: 'Normal', reason: 'AllPlaced', message: placed.message },
    ]);
    expect(transitionEvents({ conditions: [ready, placed] }, { conditions: [ready, placed] })).toEqual([]);
  });
});
