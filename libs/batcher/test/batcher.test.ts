import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Batcher, BatcherClosedError, type Batch, type BatchReceipt } from '../src/index.js';

/** Lets every settled promise run its callbacks, without moving fake time. */
async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) await Promise.resolve();
}

/** Observes a promise without awaiting it, so a test can ask "has it settled yet?". */
function track<V>(promise: Promise<V>): {
  readonly value: V | undefined;
  readonly error: unknown;
  readonly settled: boolean;
} {
  const state: { value: V | undefined; error: unknown; settled: boolean } = {
    value: undefined,
    error: undefined,
    settled: false,
  };
  promise.then(
    (value) => Object.assign(state, { value, settled: true }),
    (error: unknown) => Object.assign(state, { error, settled: true }),
  );
  return state;
}

describe('Batcher', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  describe('window', () => {
    it('does not open a window before the first item', async () => {
      const batcher = new Batcher<string>({ idleMs: 10, maxDurationMs: 100 });
      const batch = track(batcher.wait());
      await vi.advanceTimersByTimeAsync(60_000);
      expect(batch.settled).toBe(false);
      expect(vi.getTimerCount()).toBe(0);
      batcher.close();
    });

    it('opens the window at the first item and closes it after the idle gap', async () => {
      const batcher = new Batcher<string>({ idleMs: 10, maxDurationMs: 100 });
      const batch = track(batcher.wait());
      await vi.advanceTimersByTimeAsync(50);
      void batcher.add('a');
      await vi.advanceTimersByTimeAsync(9);
      expect(batch.settled).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      expect(batch.value).toEqual({ id: 1, items: ['a'], windowMs: 10, closedBy: 'idle' });
    });

    it('extends the window by the idle gap with each item', async () => {
      const batcher = new Batcher<string>({ idleMs: 10, maxDurationMs: 100 });
      const batch = track(batcher.wait());
      void batcher.add('a');
      await vi.advanceTimersByTimeAsync(8);
      void batcher.add('b');
      await vi.advanceTimersByTimeAsync(8);
      void batcher.add('c');
      await vi.advanceTimersByTimeAsync(9);
      expect(batch.settled).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      expect(batch.value).toEqual({ id: 1, items: ['a', 'b', 'c'], windowMs: 26, closedBy: 'idle' });
    });

    it('closes the window at maxDuration however steadily items arrive', async () => {
      const batcher = new Batcher<number>({ idleMs: 10, maxDurationMs: 35 });
      const batch = track(batcher.wait());
      for (let i = 0; i < 5; i++) {
        void batcher.add(i);
        await vi.advanceTimersByTimeAsync(8);
      }
      expect(batch.value).toEqual({ id: 1, items: [0, 1, 2, 3, 4], windowMs: 35, closedBy: 'maxDuration' });
    });

    it('closes the window at maxItems without waiting for a timer', async () => {
      const batcher = new Batcher<number>({ idleMs: 10, maxDurationMs: 100, maxItems: 3 });
      const batch = track(batcher.wait());
      void batcher.add(1);
      void batcher.add(2);
      void batcher.add(3);
      await settle();
      expect(batch.value).toEqual({ id: 1, items: [1, 2, 3], windowMs: 0, closedBy: 'maxItems' });
      expect(vi.getTimerCount()).toBe(0);
    });

    it('starts the next batch with the items beyond maxItems', async () => {
      const batcher = new Batcher<number>({ idleMs: 10, maxDurationMs: 100, maxItems: 2 });
      for (let i = 1; i <= 5; i++) void batcher.add(i);
      expect(batcher.size).toBe(5);
      expect((await batcher.wait()).items).toEqual([1, 2]);
      expect((await batcher.wait()).items).toEqual([3, 4]);
      const last = track(batcher.wait());
      await vi.advanceTimersByTimeAsync(10);
      expect(last.value).toMatchObject({ items: [5], closedBy: 'idle' });
      expect(batcher.size).toBe(0);
    });

    it('hands over at once, with windowMs 0, a batch that filled up while nobody waited', async () => {
      const batcher = new Batcher<number>({ idleMs: 10, maxDurationMs: 100, maxItems: 2 });
      void batcher.add(1);
      void batcher.add(2);
      await vi.advanceTimersByTimeAsync(500);
      const batch = track(batcher.wait());
      await settle();
      expect(batch.value).toEqual({ id: 1, items: [1, 2], windowMs: 0, closedBy: 'maxItems' });
    });

    it('opens the window when wait() is called if items were added before', async () => {
      const batcher = new Batcher<string>({ idleMs: 10, maxDurationMs: 100 });
      void batcher.add('early');
      await vi.advanceTimersByTimeAsync(1_000);
      const batch = track(batcher.wait());
      await vi.advanceTimersByTimeAsync(9);
      expect(batch.settled).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      expect(batch.value).toMatchObject({ items: ['early'], windowMs: 10, closedBy: 'idle' });
    });

    it('follows the Karpenter preset: 1 s idle gap, 10 s at most', async () => {
      const batcher = new Batcher<number>({ idleMs: 1_000, maxDurationMs: 10_000, maxItems: 2_000 });
      const batch = track(batcher.wait());
      for (let i = 0; i < 20; i++) {
        void batcher.add(i);
        await vi.advanceTimersByTimeAsync(900);
      }
      expect(batch.value).toMatchObject({ windowMs: 10_000, closedBy: 'maxDuration' });
      expect(batch.value?.items).toHaveLength(12);
    });
  });

  describe('gates', () => {
    it('resolves the gate of every item with the receipt of its batch when wait() hands it over', async () => {
      const batcher = new Batcher<string>({ idleMs: 5, maxDurationMs: 50 });
      const gateA = track(batcher.add('a'));
      const gateB = track(batcher.add('b'));
      const batch = track(batcher.wait());
      await vi.advanceTimersByTimeAsync(4);
      expect(gateA.settled).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      const receipt: BatchReceipt = { batchId: 1, size: 2, windowMs: 5, closedBy: 'idle' };
      expect(batch.value?.items).toEqual(['a', 'b']);
      expect(gateA.value).toEqual(receipt);
      expect(gateB.value).toEqual(receipt);
    });

    it('does not resolve a gate while its batch is still buffered, whatever happens to other batches', async () => {
      const batcher = new Batcher<string>({ idleMs: 5, maxDurationMs: 50, maxItems: 1 });
      const first = batcher.add('first');
      const second = track(batcher.add('second'));
      expect(first).not.toBe(second);
      expect(await batcher.wait()).toMatchObject({ id: 1, items: ['first'] });
      await settle();
      expect(second.settled).toBe(false);
      expect(await batcher.wait()).toMatchObject({ id: 2, items: ['second'] });
      await settle();
      expect(second.value).toMatchObject({ batchId: 2 });
    });

    it('shares one gate between the items of a batch', () => {
      const batcher = new Batcher<string>();
      expect(batcher.add('a')).toBe(batcher.add('b'));
      batcher.close();
    });

    it('releases an item added just before a flush with the flushed batch, not the next one (the Karpenter race)', async () => {
      const batcher = new Batcher<string>({ idleMs: 5, maxDurationMs: 50 });
      const pending = track(batcher.wait());
      void batcher.add('a');
      const lastMoment = track(batcher.add('just-before-flush'));
      batcher.flush();
      const after = track(batcher.add('after-flush'));
      await settle();
      expect(pending.value).toMatchObject({ id: 1, items: ['a', 'just-before-flush'], closedBy: 'flush' });
      expect(lastMoment.value).toMatchObject({ batchId: 1 });
      expect(after.settled).toBe(false);
      const next = track(batcher.wait());
      await vi.advanceTimersByTimeAsync(5);
      expect(next.value).toMatchObject({ id: 2, items: ['after-flush'] });
      expect(after.value).toMatchObject({ batchId: 2 });
    });

    it('never releases an item with a batch handed over before the item was added', async () => {
      const batcher = new Batcher<string>({ idleMs: 5, maxDurationMs: 50 });
      const handedOver = track(batcher.wait());
      void batcher.add('a');
      await vi.advanceTimersByTimeAsync(5);
      expect(handedOver.settled).toBe(true);
      // The consumer is now busy with batch 1; this item must wait for batch 2.
      const late = track(batcher.add('late'));
      await vi.advanceTimersByTimeAsync(1_000);
      expect(late.settled).toBe(false);
      const next = track(batcher.wait());
      await vi.advanceTimersByTimeAsync(5);
      expect(next.value).toMatchObject({ id: 2, items: ['late'] });
      expect(late.value).toMatchObject({ batchId: 2 });
    });
  });

  describe('flush', () => {
    it('ends the window at once and hands the batch to the pending wait()', async () => {
      const batcher = new Batcher<string>({ idleMs: 100, maxDurationMs: 1_000 });
      const batch = track(batcher.wait());
      void batcher.add('a');
      await vi.advanceTimersByTimeAsync(30);
      expect(batcher.flush()).toBe(1);
      await settle();
      expect(batch.value).toEqual({ id: 1, items: ['a'], windowMs: 30, closedBy: 'flush' });
      expect(vi.getTimerCount()).toBe(0);
    });

    it('with no wait() pending, lets the next wait() take the flushed batch without a window', async () => {
      const batcher = new Batcher<string>({ idleMs: 100, maxDurationMs: 1_000 });
      const gate = track(batcher.add('a'));
      batcher.flush();
      void batcher.add('b');
      await settle();
      expect(gate.settled).toBe(false);
      expect(await batcher.wait()).toEqual({ id: 1, items: ['a'], windowMs: 0, closedBy: 'flush' });
      await settle();
      expect(gate.value).toMatchObject({ batchId: 1, closedBy: 'flush' });
      expect(batcher.size).toBe(1);
    });

    it('does nothing when the current batch is empty', async () => {
      const batcher = new Batcher<string>();
      const batch = track(batcher.wait());
      expect(batcher.flush()).toBe(0);
      await settle();
      expect(batch.settled).toBe(false);
      batcher.close();
    });
  });

  describe('wait', () => {
    it('serves concurrent waits in call order, one batch each', async () => {
      const batcher = new Batcher<string>({ idleMs: 5, maxDurationMs: 50 });
      const first = track(batcher.wait());
      const second = track(batcher.wait());
      void batcher.add('a');
      await vi.advanceTimersByTimeAsync(5);
      expect(first.value).toMatchObject({ id: 1, items: ['a'] });
      expect(second.settled).toBe(false);
      void batcher.add('b');
      await vi.advanceTimersByTimeAsync(5);
      expect(second.value).toMatchObject({ id: 2, items: ['b'] });
    });

    it('rejects with the signal reason and takes no item when aborted', async () => {
      const batcher = new Batcher<string>({ idleMs: 5, maxDurationMs: 50 });
      const controller = new AbortController();
      const aborted = track(batcher.wait({ signal: controller.signal }));
      void batcher.add('a');
      controller.abort(new Error('shutting down'));
      await settle();
      expect(aborted.error).toEqual(new Error('shutting down'));
      expect(vi.getTimerCount()).toBe(0);
      expect(batcher.size).toBe(1);
      const next = track(batcher.wait());
      await vi.advanceTimersByTimeAsync(5);
      expect(next.value).toMatchObject({ id: 1, items: ['a'] });
    });

    it('rejects at once when the signal is already aborted', async () => {
      const batcher = new Batcher<string>();
      void batcher.add('a');
      await expect(batcher.wait({ signal: AbortSignal.abort() })).rejects.toMatchObject({ name: 'AbortError' });
      expect(batcher.size).toBe(1);
      batcher.close();
    });

    it('passes the window of an aborted wait() on to the next one', async () => {
      const batcher = new Batcher<string>({ idleMs: 10, maxDurationMs: 100 });
      const controller = new AbortController();
      const aborted = track(batcher.wait({ signal: controller.signal }));
      const next = track(batcher.wait());
      void batcher.add('a');
      await vi.advanceTimersByTimeAsync(6);
      controller.abort();
      await vi.advanceTimersByTimeAsync(4);
      expect(aborted.error).toMatchObject({ name: 'AbortError' });
      expect(next.value).toEqual({ id: 1, items: ['a'], windowMs: 10, closedBy: 'idle' });
    });

    it('ignores an abort that comes after the hand-over', async () => {
      const batcher = new Batcher<string>({ maxItems: 1 });
      const controller = new AbortController();
      const batch = batcher.wait({ signal: controller.signal });
      void batcher.add('a');
      controller.abort();
      await expect(batch).resolves.toMatchObject({ items: ['a'] });
    });
  });

  describe('close', () => {
    it('resolves a pending wait() with what is buffered', async () => {
      const batcher = new Batcher<string>({ idleMs: 100, maxDurationMs: 1_000 });
      const batch = track(batcher.wait());
      const gate = track(batcher.add('a'));
      await vi.advanceTimersByTimeAsync(20);
      batcher.close();
      await settle();
      expect(batch.value).toEqual({ id: 1, items: ['a'], windowMs: 20, closedBy: 'close' });
      expect(gate.value).toMatchObject({ batchId: 1, closedBy: 'close' });
      expect(vi.getTimerCount()).toBe(0);
    });

    it('resolves every pending wait() with an empty batch when nothing is buffered', async () => {
      const batcher = new Batcher<string>();
      const first = track(batcher.wait());
      const second = track(batcher.wait());
      batcher.close();
      await settle();
      expect(first.value).toMatchObject({ items: [], closedBy: 'close' });
      expect(second.value).toMatchObject({ items: [], closedBy: 'close' });
    });

    it('refuses add() with a BatcherClosedError', () => {
      const batcher = new Batcher<string>();
      batcher.close();
      expect(batcher.closed).toBe(true);
      expect(() => batcher.add('a')).toThrow(BatcherClosedError);
      expect(batcher.size).toBe(0);
    });

    it('lets later wait() calls drain what is still buffered, then hands over empty batches', async () => {
      const batcher = new Batcher<number>({ maxItems: 2 });
      for (let i = 1; i <= 3; i++) void batcher.add(i);
      batcher.close();
      const drained: Batch<number>[] = [await batcher.wait(), await batcher.wait(), await batcher.wait()];
      expect(drained.map((batch) => [batch.items, batch.closedBy])).toEqual([
        [[1, 2], 'maxItems'],
        [[3], 'close'],
        [[], 'close'],
      ]);
    });

    it('is idempotent', async () => {
      const batcher = new Batcher<string>();
      void batcher.add('a');
      batcher.close();
      batcher.close();
      expect(await batcher.wait()).toMatchObject({ items: ['a'] });
    });
  });
});
