import { describe, expect, it } from 'vitest';
import {
  EPOCH_SPAN,
  epochOf,
  GenerationExhaustedError,
  GenerationSource,
  generationOf,
  majorityApplied,
  MAX_EPOCH,
  MemoryEpochStore,
  type EpochStore,
} from '../../src/generation/generation.js';

describe('GenerationSource', () => {
  it('hands out nothing before its first epoch, then strictly growing generations', async () => {
    const source = new GenerationSource(new MemoryEpochStore());
    expect(source.next()).toBeUndefined();
    await source.advance();
    const handed = [source.next(), source.next(), source.next()];
    expect(handed).toEqual([generationOf(1, 0), generationOf(1, 1), generationOf(1, 2)]);
  });

  it('gives a new leader generations above everything the previous leader handed out, with one write per term', async () => {
    const store = new MemoryEpochStore();
    const first = new GenerationSource(store);
    await first.advance();
    let last = 0;
    for (let i = 0; i < 1000; i++) last = first.next() as number;
    const second = new GenerationSource(store);
    await second.advance();
    expect(second.next()).toBeGreaterThan(last);
    expect(store.writes).toBe(2);
  });

  it('starts above the generation a majority of nodes report, even when the epoch record was lost', async () => {
    const applied = generationOf(41, 12345);
    const source = new GenerationSource(new MemoryEpochStore());
    const epoch = await source.advance(applied);
    expect(epoch).toBe(42);
    expect(source.next()).toBeGreaterThan(applied);
  });

  it('takes no floor from the nodes where an epoch is recorded: it bounds every generation issued, so theirs cannot move it', async () => {
    const store = new MemoryEpochStore();
    store.epoch = 7;
    const source = new GenerationSource(store);
    expect(await source.advance(Number.MAX_SAFE_INTEGER)).toBe(8);
    expect(source.next()).toBe(generationOf(8, 0));
  });

  it('knows the highest generation any leader can have issued: below its epoch, or handed out by itself', async () => {
    const store = new MemoryEpochStore();
    store.epoch = 9;
    const source = new GenerationSource(store);
    expect(source.highestIssued).toBeUndefined();
    await source.advance();
    expect(source.highestIssued).toBe(generationOf(10, 0) - 1);
    source.next();
    const second = source.next();
    expect(source.highestIssued).toBe(second);
    source.reset();
    expect(source.highestIssued).toBeUndefined();
  });

  it('takes a new epoch after 2^21 generations, so the counter never spills into the epoch', async () => {
    const source = new GenerationSource(new MemoryEpochStore());
    await source.advance();
    let last = 0;
    for (let i = 0; i < EPOCH_SPAN; i++) last = source.next() as number;
    expect(last).toBe(generationOf(2, 0) - 1);
    expect(source.next()).toBeUndefined();
    await source.advance();
    expect(source.next()).toBe(generationOf(2, 0));
  });

  it('takes its next epoch within a term above its own, even when the record was lost meanwhile (the Lease deleted and re-created)', async () => {
    const store = new MemoryEpochStore();
    store.epoch = 6;
    const source = new GenerationSource(store);
    await source.advance();
    let last = 0;
    for (let i = 0; i < EPOCH_SPAN; i++) last = source.next() as number;
    store.epoch = 0;
    await source.advance();
    expect(source.next()).toBeGreaterThan(last);
    expect(source.highestIssued).toBeGreaterThan(last);
  });

  it('stays within Number.MAX_SAFE_INTEGER and refuses to go past the last epoch', async () => {
    expect(generationOf(MAX_EPOCH, EPOCH_SPAN - 1)).toBe(Number.MAX_SAFE_INTEGER);
    expect(epochOf(Number.MAX_SAFE_INTEGER)).toBe(MAX_EPOCH);
    const store = new MemoryEpochStore();
    store.epoch = MAX_EPOCH - 1;
    const source = new GenerationSource(store);
    await source.advance();
    expect(Number.isSafeInteger(source.next())).toBe(true);
    await expect(source.advance()).rejects.toBeInstanceOf(GenerationExhaustedError);
  });

  it('shares one write between concurrent advance() calls', async () => {
    let release: (() => void) | undefined;
    const writes: number[] = [];
    const slow: EpochStore = {
      advance: (minimum) =>
        new Promise((resolve) => {
          release = () => resolve(minimum);
          writes.push(minimum);
        }),
    };
    const source = new GenerationSource(slow);
    const a = source.advance();
    const b = source.advance();
    release?.();
    expect(await a).toBe(await b);
    expect(writes).toHaveLength(1);
  });

  it('does not use an epoch that arrives after its term ended', async () => {
    let release: (() => void) | undefined;
    const store = new MemoryEpochStore();
    const slow: EpochStore = {
      advance: (minimum) =>
        new Promise((resolve) => {
          release = () => resolve(store.advance(minimum));
        }),
    };
    const source = new GenerationSource(slow);
    const late = source.advance();
    source.reset();
    release?.();
    await expect(late).rejects.toThrow(/leadership ended/);
    expect(source.next()).toBeUndefined();
  });

  it('hands out nothing after reset() (leadership ended) until the next advance()', async () => {
    const source = new GenerationSource(new MemoryEpochStore());
    await source.advance();
    source.reset();
    expect(source.next()).toBeUndefined();
    await source.advance();
    expect(source.next()).toBe(generationOf(1, 0));
  });

  describe('a term after its own (the leader re-acquired its Lease)', () => {
    it('continues its epoch where the record still holds it: no new epoch, no write, the counter above all it handed out', async () => {
      const store = new MemoryEpochStore();
      const source = new GenerationSource(store);
      await source.advance();
      let last = 0;
      for (let i = 0; i < 5; i++) last = source.next() as number;
      source.reset();
      expect(source.highestIssued).toBeUndefined();
      expect(await source.advance()).toBe(1);
      expect(store.writes).toBe(1);
      expect(source.highestIssued).toBe(last);
      expect(source.next()).toBe(last + 1);
    });

    it('takes a new epoch once another leader took one in between, above it', async () => {
      const store = new MemoryEpochStore();
      const source = new GenerationSource(store);
      await source.advance();
      source.next();
      source.reset();
      await new GenerationSource(store).advance(); // another replica's term: epoch 2
      expect(await source.advance()).toBe(3);
      expect(source.next()).toBe(generationOf(3, 0));
    });

    it("takes a new epoch where the record was lost, from the nodes' floor", async () => {
      const store = new MemoryEpochStore();
      const source = new GenerationSource(store);
      await source.advance();
      source.next();
      source.reset();
      store.epoch = 0; // the Lease deleted and re-created
      expect(await source.advance(generationOf(1, 0))).toBe(2);
    });

    it("never takes its own epoch again from counter 0: where the record was lost and the nodes' floor lags, it goes above", async () => {
      const store = new MemoryEpochStore();
      const source = new GenerationSource(store);
      await source.advance();
      const issued = [source.next() as number, source.next() as number];
      source.reset();
      store.epoch = 0; // the Lease deleted and re-created before a majority of the nodes published epoch 1: no floor
      expect(await source.advance()).toBe(2);
      expect(source.next()).toBeGreaterThan(Math.max(...issued));
    });

    it('does not continue an epoch whose counter ran out', async () => {
      const store = new MemoryEpochStore();
      const source = new GenerationSource(store);
      await source.advance();
      for (let i = 0; i < EPOCH_SPAN; i++) source.next();
      source.reset();
      expect(await source.advance()).toBe(2);
      expect(source.next()).toBe(generationOf(2, 0));
    });

    it('continues only in the same process: a new one (a restart under the same identity) takes a new epoch', async () => {
      const store = new MemoryEpochStore();
      await new GenerationSource(store).advance();
      expect(await new GenerationSource(store).advance()).toBe(2);
    });

    it('still continues after a term that ended while its epoch was being read', async () => {
      const source = new GenerationSource(new MemoryEpochStore());
      await source.advance();
      const last = source.next() as number;
      source.reset();
      const late = source.advance();
      source.reset(); // that term ended before its epoch arrived
      await expect(late).rejects.toThrow(/leadership ended/);
      expect(await source.advance()).toBe(1);
      expect(source.next()).toBe(last + 1);
    });
  });

  it("starts each term from that term's floor: a forged one that left no epoch does not outlive its term", async () => {
    const source = new GenerationSource(new MemoryEpochStore());
    await expect(source.advance(Number.MAX_SAFE_INTEGER)).rejects.toBeInstanceOf(GenerationExhaustedError);
    source.reset();
    // The nodes were recovered (README); the next term's floor is an honest one.
    expect(await source.advance(generationOf(3, 5))).toBe(4);
    expect(source.next()).toBe(generationOf(4, 0));
  });
});

describe('majorityApplied (the floor a term starts from)', () => {
  const inventory = (appliedGeneration?: number): number | undefined => appliedGeneration;

  it('is what a strict majority of nodes have reached, so one forged number cannot move it', () => {
    const forged = Number.MAX_SAFE_INTEGER;
    expect(majorityApplied([inventory(5), inventory(7), inventory(forged)])).toBe(7);
    expect(majorityApplied([inventory(5), inventory(forged)])).toBe(5);
    expect(majorityApplied([inventory(5), inventory(6), inventory(7), inventory(forged)])).toBe(6);
  });

  it('counts nodes without a number as below every number', () => {
    expect(majorityApplied([inventory(), inventory(), inventory(9)])).toBeUndefined();
    expect(majorityApplied([])).toBeUndefined();
    expect(majorityApplied([inventory(3)])).toBe(3);
  });
});
