import type { InventoryPool, SandboxWarmPool } from '@warmpool/api';
import { describe, expect, it } from 'vitest';
import { nodeRoom, observePools, replicasOf } from '../src/index.js';

const pool = (template: string, target: number, warm: number, refilling = 0): InventoryPool => ({
  template,
  net: 'none',
  size: 'small',
  target,
  warm,
  refilling,
});

describe('observePools', () => {
  it("sums targets as replicas and caps each node's warm at its target for readyReplicas", () => {
    const observed = observePools([{ pools: [pool('python:3.13', 2, 5)] }, { pools: [pool('python:3.13', 3, 1, 2)] }]);
    expect(observed.get('python:3.13|none|small')).toEqual({
      replicas: 5,
      readyReplicas: 3,
      warm: 6,
      refilling: 2,
      nodes: 2,
    });
  });

  it('keys pools by poolKeyId, so net and size tell pools apart', () => {
    const observed = observePools([{ pools: [pool('img', 1, 1), { ...pool('img', 4, 4), size: 'large' }] }]);
    expect([...observed.keys()].sort()).toEqual(['img|none|large', 'img|none|small']);
  });

  it('reports warm sandboxes a node keeps beyond a target of zero as warm but not ready', () => {
    const observed = observePools([{ pools: [pool('img', 0, 2)] }]);
    expect(observed.get('img|none|small')).toMatchObject({ replicas: 0, readyReplicas: 0, warm: 2 });
  });

  it('skips nodes that report nothing and pools with nothing in them', () => {
    const observed = observePools([undefined, { pools: [pool('img', 0, 0)] }]);
    expect(observed.size).toBe(0);
  });
});

describe('nodeRoom', () => {
  it('gives a node room for capacity minus claimed', () => {
    expect(nodeRoom(40, 12)).toBe(28);
  });

  it('never gives negative room and treats unknown capacity as unbounded', () => {
    expect(nodeRoom(4, 9)).toBe(0);
    expect(nodeRoom(undefined, 9)).toBe(Infinity);
  });
});

describe('replicasOf', () => {
  const pool = (replicas: number | undefined): SandboxWarmPool => ({
    metadata: { name: 'p' },
    spec: { ...(replicas === undefined ? {} : { replicas }), sandboxTemplateRef: { name: 't' } },
  });

  it("reads spec.replicas, defaulted to 1 as upstream's CRD does", () => {
    expect([replicasOf(pool(7)), replicasOf(pool(0)), replicasOf(pool(undefined))]).toEqual([7, 0, 1]);
  });

  it('counts a value that is not a whole number ≥ 0 as 0', () => {
    expect([replicasOf(pool(-2)), replicasOf(pool(2.5))]).toEqual([0, 0]);
  });
});
