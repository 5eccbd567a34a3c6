import { describe, expect, it } from 'vitest';
import { Batcher, DEFAULT_BATCH_OPTIONS, KARPENTER_BATCH_OPTIONS, resolveBatcherOptions } from '../src/index.js';

describe('Batcher options', () => {
  it('defaults to a claim-tuned window: 2 ms idle, 20 ms at most, 2 000 items', () => {
    expect(DEFAULT_BATCH_OPTIONS).toEqual({ idleMs: 2, maxDurationMs: 20, maxItems: 2_000 });
    expect(new Batcher().options).toEqual(DEFAULT_BATCH_OPTIONS);
  });

  it("offers Karpenter's 1 s / 10 s / 2 000 as a preset", () => {
    expect(KARPENTER_BATCH_OPTIONS).toEqual({ idleMs: 1_000, maxDurationMs: 10_000, maxItems: 2_000 });
    expect(new Batcher(KARPENTER_BATCH_OPTIONS).options).toEqual(KARPENTER_BATCH_OPTIONS);
  });

  it('fills the options not given from the defaults', () => {
    expect(resolveBatcherOptions({ maxItems: 10, idleMs: undefined })).toEqual({
      ...DEFAULT_BATCH_OPTIONS,
      maxItems: 10,
    });
  });

  it('refuses durations that are negative or not finite, and a cap below one item', () => {
    expect(() => resolveBatcherOptions({ idleMs: -1 })).toThrow(RangeError);
    expect(() => resolveBatcherOptions({ maxDurationMs: Number.POSITIVE_INFINITY })).toThrow(RangeError);
    expect(() => resolveBatcherOptions({ maxDurationMs: Number.NaN })).toThrow(RangeError);
    expect(() => resolveBatcherOptions({ maxItems: 0 })).toThrow(RangeError);
    expect(() => resolveBatcherOptions({ maxItems: 1.5 })).toThrow(RangeError);
  });
});
