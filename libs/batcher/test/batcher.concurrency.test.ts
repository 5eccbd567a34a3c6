import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Batcher, BatcherClosedError, type Batch, type BatcherOptions, type BatchReceipt } from '../src/index.js';

/**
 * Random interleavings of add / flush / wait / abort / close and the passage of
 * time, checked against the promises the batcher makes:
 * - every item added is handed over exactly once, in the order it was added;
 * - the gate add() returned resolves with the receipt of the batch that holds
 *   the item, and at every checkpoint the gates resolved are exactly those of the
 *   items handed over (never before, never after);
 * - batches respect their bounds, and waits are served in call order;
 * - a pending wait() never sits next to buffered items for longer than maxDurationMs.
 */

type Operation =
  | { readonly kind: 'add'; readonly count: number }
  | { readonly kind: 'flush' }
  | { readonly kind: 'wait'; readonly abortable: boolean }
  | { readonly kind: 'abort'; readonly pick: number }
  | { readonly kind: 'advance'; readonly ms: number }
  | { readonly kind: 'settle' }
  | { readonly kind: 'close' };

const operation: fc.Arbitrary<Operation> = fc.oneof(
  { weight: 16, arbitrary: fc.record({ kind: fc.constant('add' as const), count: fc.integer({ min: 1, max: 4 }) }) },
  { weight: 4, arbitrary: fc.constant({ kind: 'flush' as const }) },
  { weight: 8, arbitrary: fc.record({ kind: fc.constant('wait' as const), abortable: fc.boolean() }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('abort' as const), pick: fc.nat() }) },
  { weight: 10, arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 25 }) }) },
  { weight: 6, arbitrary: fc.constant({ kind: 'settle' as const }) },
  // Rare, so most scenarios run a while before it; the scenario closes at the end anyway.
  { weight: 1, arbitrary: fc.constant({ kind: 'close' as const }) },
);

const smallOptions: fc.Arbitrary<BatcherOptions> = fc.record({
  idleMs: fc.integer({ min: 0, max: 10 }),
  maxDurationMs: fc.integer({ min: 0, max: 40 }),
  maxItems: fc.integer({ min: 1, max: 8 }),
});

async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) await Promise.resolve();
}

/** Everything the scenario saw the batcher do, checked at each checkpoint. */
class Observations {
  readonly added: number[] = [];
  readonly receipts = new Map<number, BatchReceipt>();
  readonly batches: Batch<number>[] = [];
  /** Per wait() call, in call order: the batch id it got, 'aborted', or undefined while pending. */
  readonly waits: (number | 'aborted' | undefined)[] = [];

  readonly options: BatcherOptions;

  constructor(options: BatcherOptions) {
    this.options = options;
  }

  checkpoint(): void {
    const batchOf = new Map<number, Batch<number>>();
    for (const batch of this.batches) {
      this.checkBounds(batch);
      for (const item of batch.items) {
        expect(batchOf.has(item), `item ${item} handed over twice`).toBe(false);
        batchOf.set(item, batch);
      }
    }
    expect([...this.receipts.keys()].sort((a, b) => a - b)).toEqual([...batchOf.keys()].sort((a, b) => a - b));
    for (const [item, receipt] of this.receipts) {
      const batch = batchOf.get(item);
      expect(receipt).toEqual({
        batchId: batch?.id,
        size: batch?.items.length,
        windowMs: batch?.windowMs,
        closedBy: batch?.closedBy,
      });
    }
    const served = this.waits.filter((outcome): outcome is number => typeof outcome === 'number');
    expect(served).toEqual([...served].sort((a, b) => a - b));
  }

  private checkBounds(batch: Batch<number>): void {
    const { idleMs, maxDurationMs, maxItems } = this.options;
    expect(batch.items.length).toBeLessThanOrEqual(maxItems);
    if (batch.items.length === 0) expect(batch.closedBy).toBe('close');
    expect(batch.windowMs).toBeLessThanOrEqual(maxDurationMs);
    if (batch.closedBy === 'maxItems') expect(batch.items).toHaveLength(maxItems);
    if (batch.closedBy === 'maxDuration') expect(batch.windowMs).toBe(maxDurationMs);
    if (batch.closedBy === 'idle') expect(batch.windowMs).toBeGreaterThanOrEqual(idleMs);
  }
}

async function runScenario(options: BatcherOptions, operations: readonly Operation[]): Promise<void> {
  const batcher = new Batcher<number>(options);
  const seen = new Observations(options);
  const abortable: AbortController[] = [];
  let nextItem = 0;

  const startWait = (signal?: AbortSignal): void => {
    const index = seen.waits.push(undefined) - 1;
    batcher.wait({ signal }).then(
      (batch) => {
        seen.waits[index] = batch.id;
        seen.batches.push(batch);
      },
      () => {
        seen.waits[index] = 'aborted';
      },
    );
  };

  for (const op of operations) {
    switch (op.kind) {
      case 'add':
        for (let i = 0; i < op.count; i++) {
          const item = nextItem++;
          if (batcher.closed) {
            expect(() => batcher.add(item)).toThrow(BatcherClosedError);
            continue;
          }
          seen.added.push(item);
          void batcher.add(item).then((receipt) => seen.receipts.set(item, receipt));
        }
        break;
      case 'flush':
        batcher.flush();
        break;
      case 'wait': {
        const controller = op.abortable ? new AbortController() : undefined;
        if (controller) abortable.push(controller);
        startWait(controller?.signal);
        break;
      }
      case 'abort':
        if (abortable.length > 0) abortable.splice(op.pick % abortable.length, 1)[0]?.abort();
        break;
      case 'advance':
        await vi.advanceTimersByTimeAsync(op.ms);
        seen.checkpoint();
        // Liveness: no add() runs while time passes, so any window open now
        // opened before this advance and must have closed within maxDurationMs.
        if (op.ms >= options.maxDurationMs && seen.waits.includes(undefined)) expect(batcher.size).toBe(0);
        break;
      case 'settle':
        await settle();
        seen.checkpoint();
        break;
      case 'close':
        batcher.close();
        break;
    }
  }

  // Drain: after close(), wait() hands over what is left at once, then empty batches.
  batcher.close();
  for (;;) {
    const batch = await batcher.wait();
    seen.batches.push(batch);
    if (batch.items.length === 0) break;
  }
  await settle();
  seen.checkpoint();
  const delivered = [...seen.batches].sort((a, b) => a.id - b.id).flatMap((batch) => batch.items);
  expect(delivered).toEqual(seen.added);
  expect(seen.receipts.size).toBe(seen.added.length);
  expect(seen.waits).not.toContain(undefined);
  expect(batcher.size).toBe(0);
  expect(vi.getTimerCount()).toBe(0);
}

describe('Batcher under random interleavings (fake timers)', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('hands every item over exactly once, in order, releasing exactly the gate of the batch that holds it', async () => {
    await fc.assert(
      fc.asyncProperty(
        smallOptions,
        fc.array(operation, { minLength: 5, maxLength: 120, size: 'max' }),
        (options, operations) => runScenario(options, operations),
      ),
      { numRuns: 300 },
    );
  });

  it('keeps its promises with the default and the Karpenter options too', async () => {
    const realistic = fc.constantFrom<BatcherOptions>(
      { idleMs: 2, maxDurationMs: 20, maxItems: 2_000 },
      { idleMs: 1_000, maxDurationMs: 10_000, maxItems: 2_000 },
      { idleMs: 2, maxDurationMs: 20, maxItems: 3 },
    );
    const slowTime = fc.oneof(
      operation,
      fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 12_000 }) }),
    );
    await fc.assert(
      fc.asyncProperty(
        realistic,
        fc.array(slowTime, { minLength: 5, maxLength: 80, size: 'max' }),
        (options, operations) => runScenario(options, operations),
      ),
      { numRuns: 100 },
    );
  });
});

type Pause = 'none' | 'microtask' | 'immediate' | 'timer';

function pause(kind: Pause): Promise<void> | undefined {
  switch (kind) {
    case 'none':
      return undefined;
    case 'microtask':
      return Promise.resolve();
    case 'immediate':
      return new Promise((resolve) => setImmediate(resolve));
    case 'timer':
      return new Promise((resolve) => setTimeout(resolve, 1));
  }
}

describe('Batcher under concurrent producers (real timers)', () => {
  const pauses = fc.constantFrom<Pause>('none', 'microtask', 'immediate', 'timer');

  it('hands every item over exactly once and releases each gate with the batch that holds it', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          idleMs: fc.integer({ min: 0, max: 2 }),
          maxDurationMs: fc.integer({ min: 0, max: 5 }),
          maxItems: fc.integer({ min: 1, max: 6 }),
        }),
        fc.array(fc.array(pauses, { maxLength: 40, size: 'max' }), { minLength: 1, maxLength: 4 }),
        fc.array(pauses, { maxLength: 15, size: 'max' }),
        fc.array(pauses, { maxLength: 15, size: 'max' }),
        async (options, producers, flusher, consumer) => {
          const batcher = new Batcher<number>(options);
          const added: number[] = [];
          const gates: Promise<void>[] = [];
          const receipts = new Map<number, BatchReceipt>();
          const batches: Batch<number>[] = [];
          let nextItem = 0;

          const produce = async (pausesBetweenAdds: readonly Pause[]): Promise<void> => {
            for (const kind of pausesBetweenAdds) {
              const item = nextItem++;
              added.push(item);
              gates.push(batcher.add(item).then((receipt) => void receipts.set(item, receipt)));
              await pause(kind);
            }
          };
          const flush = async (): Promise<void> => {
            for (const kind of flusher) {
              await pause(kind);
              batcher.flush();
            }
          };
          const consume = async (): Promise<void> => {
            for (let round = 0; ; round++) {
              const batch = await batcher.wait();
              batches.push(batch);
              if (batch.items.length === 0 && batcher.closed) return;
              // A slow consumer: items keep arriving while it "processes" a batch.
              await pause(consumer[round % Math.max(consumer.length, 1)] ?? 'none');
            }
          };

          const consuming = consume();
          await Promise.all([...producers.map(produce), flush()]);
          batcher.close();
          await consuming;
          await Promise.all(gates);

          const batchOf = new Map<number, Batch<number>>();
          for (const batch of batches) for (const item of batch.items) batchOf.set(item, batch);
          expect(batches.flatMap((batch) => batch.items)).toEqual(added);
          expect(batchOf.size).toBe(added.length);
          for (const [item, receipt] of receipts) {
            expect(receipt.batchId).toBe(batchOf.get(item)?.id);
            expect(receipt.size).toBe(batchOf.get(item)?.items.length);
          }
          expect(receipts.size).toBe(added.length);
        },
      ),
      { numRuns: 60 },
    );
  });
});
