import { describe, expect, it } from 'vitest';
import { formatPinnedTarget, parsePinnedTarget } from '../src/index.js';

describe('pinned target "<cluster>::<pool>"', () => {
  it('formats a cluster and member pool', () => {
    expect(formatPinnedTarget({ clusterId: 'eu-west', memberPool: 'gpu-small' })).toBe('eu-west::gpu-small');
  });

  it.each([
    ['eu-west::gpu-small', { clusterId: 'eu-west', memberPool: 'gpu-small' }],
    ['a:b::pool', { clusterId: 'a:b', memberPool: 'pool' }],
    ['a:::pool', { clusterId: 'a:', memberPool: 'pool' }],
    ['x::y::pool', { clusterId: 'x::y', memberPool: 'pool' }],
  ])('parses %j', (text, expected) => {
    expect(parsePinnedTarget(text)).toEqual(expected);
  });

  it.each(['', 'pool', '::pool', 'cluster::', 'cluster:pool', 'cluster::a:b'])('rejects %j', (text) => {
    expect(parsePinnedTarget(text)).toBeUndefined();
  });

  it.each([
    { clusterId: 'c:1', memberPool: 'p' },
    { clusterId: 'c', memberPool: 'p-1' },
    { clusterId: 'a::b', memberPool: 'p' },
  ])('round-trips $clusterId / $memberPool', (target) => {
    expect(parsePinnedTarget(formatPinnedTarget(target))).toEqual(target);
  });

  it.each([
    { clusterId: '', memberPool: 'p' },
    { clusterId: 'c', memberPool: '' },
    { clusterId: 'c', memberPool: 'a:b' },
  ])('refuses to format $clusterId / $memberPool, which would not parse back', (target) => {
    expect(() => formatPinnedTarget(target)).toThrow(RangeError);
  });
});
