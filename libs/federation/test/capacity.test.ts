import { describe, expect, it } from 'vitest';
import { Capacity, UNBOUNDED_HEADROOM, headroomRank } from '../src/index.js';

describe('Capacity.canGrow', () => {
  it.each([
    { autoscalingEnabled: true, capacity: UNBOUNDED_HEADROOM, expected: true, why: 'unbounded headroom is room' },
    { autoscalingEnabled: true, capacity: 3, expected: true, why: 'positive headroom is room' },
    { autoscalingEnabled: true, capacity: 0, expected: false, why: 'at the ceiling' },
    {
      autoscalingEnabled: false,
      capacity: UNBOUNDED_HEADROOM,
      expected: false,
      why: 'autoscaling off ignores the headroom',
    },
    { autoscalingEnabled: false, capacity: 5, expected: false, why: 'autoscaling off ignores the headroom' },
    { autoscalingEnabled: false, capacity: 0, expected: false, why: 'autoscaling off' },
  ])(
    'is $expected with autoscaling $autoscalingEnabled and capacity $capacity ($why)',
    ({ autoscalingEnabled, capacity, expected }) => {
      expect(Capacity.canGrow({ autoscalingEnabled, capacity })).toBe(expected);
    },
  );
});

describe('Capacity.schedulable', () => {
  it.each([
    { idle: 1, autoscalingEnabled: false, capacity: 0, expected: true, why: 'an idle sandbox is ready' },
    { idle: 2, autoscalingEnabled: true, capacity: 0, expected: true, why: 'idle wins even at the ceiling' },
    { idle: 0, autoscalingEnabled: true, capacity: 4, expected: true, why: 'it can scale up' },
    {
      idle: 0,
      autoscalingEnabled: true,
      capacity: UNBOUNDED_HEADROOM,
      expected: true,
      why: 'it can scale up without bound',
    },
    { idle: 0, autoscalingEnabled: true, capacity: 0, expected: false, why: 'nothing idle and at the ceiling' },
    { idle: 0, autoscalingEnabled: false, capacity: 9, expected: false, why: 'nothing idle and no autoscaling' },
  ])(
    'is $expected with idle $idle, autoscaling $autoscalingEnabled, capacity $capacity ($why)',
    ({ idle, autoscalingEnabled, capacity, expected }) => {
      expect(Capacity.schedulable({ idle, autoscalingEnabled, capacity })).toBe(expected);
    },
  );
});

describe('headroomRank', () => {
  it('ranks unbounded above any finite headroom', () => {
    expect(headroomRank(UNBOUNDED_HEADROOM)).toBeGreaterThan(headroomRank(Number.MAX_SAFE_INTEGER));
    expect(headroomRank(2)).toBeGreaterThan(headroomRank(1));
  });
});
