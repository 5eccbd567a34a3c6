// The work queue: client-go's workqueue semantics (coalescing keys, one worker per key, rate-limited requeue with
// forget on success, shutdown that waits for the keys being worked on).
import fc from 'fast-check';
import { eventually } from '@warmpool/harness';
import { afterEach, describe, expect, it } from 'vitest';
import { WorkQueue, type WorkOutcome } from '../src/index.js';

/** A worker whose runs the test finishes by hand. */
class ManualWorker {
  readonly started: string[] = [];
  readonly #pending = new Map<string, (outcome: WorkOutcome) => void>();
  readonly errors: unknown[] = [];
  concurrentPeak = 0;
  readonly queue: WorkQueue;

  constructor(concurrency = 4, retry = { retryInitialMs: 10, retryMaxMs: 40 }) {
    this.queue = new WorkQueue({
      concurrency,
      ...retry,
      work: (key) => {
        if (this.#pending.has(key)) throw new Error(`${key} worked on twice at once`);
        this.started.push(key);
        this.concurrentPeak = Math.max(this.concurrentPeak, this.#pending.size + 1);
        return new Promise((resolve) => this.#pending.set(key, resolve));
      },
      onError: (_key, err) => this.errors.push(err),
    });
  }

  get active(): string[] {
    return [...this.#pending.keys()];
  }

  finish(key: string, outcome: WorkOutcome = { kind: 'done' }): void {
    const resolve = this.#pending.get(key);
    if (resolve === undefined) throw new Error(`${key} is not being worked on`);
    this.#pending.delete(key);
    resolve(outcome);
  }
}

/** Lets the queue's deferred pumps and settled runs go through. */
async function turn(): Promise<void> {
  for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
}

const sleepMs = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Stops the queue, finishing what it works on so the stop can settle. */
async function shutdown(w: ManualWorker): Promise<void> {
  const stopping = w.queue.stop();
  for (const key of w.active) w.finish(key);
  await stopping;
}

const workers: ManualWorker[] = [];
const queues: WorkQueue[] = [];
afterEach(async () => {
  await Promise.all([...workers.splice(0).map(shutdown), ...queues.splice(0).map((q) => q.stop())]);
});

function worker(...args: ConstructorParameters<typeof ManualWorker>): ManualWorker {
  const w = new ManualWorker(...args);
  workers.push(w);
  w.queue.start();
  return w;
}

describe('WorkQueue', () => {
  it('runs a burst of adds of one key, delivered in one go, once', async () => {
    const w = worker();
    for (let i = 0; i < 10; i++) w.queue.add('a');
    await turn();
    expect(w.started).toEqual(['a']);
    w.finish('a');
    await turn();
    expect(w.started).toEqual(['a']);
    expect(w.queue.size).toBe(0);
  });

  it('runs a key added while it is being worked on once more, right after, never twice at once', async () => {
    const w = worker();
    w.queue.add('a');
    await turn();
    w.queue.add('a');
    w.queue.add('a');
    await turn();
    expect(w.started).toEqual(['a']);
    w.finish('a');
    await turn();
    expect(w.started).toEqual(['a', 'a']);
    w.finish('a');
    await turn();
    expect(w.started).toEqual(['a', 'a']);
  });

  it('works on at most `concurrency` keys at once, in the order they were added', async () => {
    const w = worker(2);
    for (const key of ['a', 'b', 'c', 'd']) w.queue.add(key);
    await turn();
    expect(w.active).toEqual(['a', 'b']);
    w.finish('b');
    await turn();
    expect(w.active).toEqual(['a', 'c']);
    expect(w.queue.size).toBe(3);
  });

  it('retries a failed key with a per-key backoff that doubles up to its cap, and forgets it on success', async () => {
    const w = worker(1, { retryInitialMs: 20, retryMaxMs: 40 });
    w.queue.add('a');
    await turn();
    w.finish('a', { kind: 'retry' });
    await turn();
    expect(w.queue.failures('a')).toBe(1);
    // Not before its backoff.
    expect(w.started).toEqual(['a']);
    await eventually(() => w.started.length === 2, { what: 'the retry after its backoff' });
    expect(w.started).toEqual(['a', 'a']);
    w.finish('a', { kind: 'retry' });
    await turn();
    expect(w.queue.failures('a')).toBe(2);
    w.queue.add('a');
    await turn();
    expect(w.started).toEqual(['a', 'a', 'a']);
    w.finish('a', { kind: 'done' });
    await turn();
    expect(w.queue.failures('a')).toBe(0);
  });

  it('counts a throw as a failure: reported, then retried with backoff', async () => {
    const errors: unknown[] = [];
    let runs = 0;
    let failuresAtRetry: number | undefined;
    const queue = new WorkQueue({
      retryInitialMs: 5,
      retryMaxMs: 5,
      work: () => {
        runs++;
        if (runs === 1) return Promise.reject(new Error('boom'));
        failuresAtRetry = queue.failures('a');
        return Promise.resolve({ kind: 'done' });
      },
      onError: (_key, err) => errors.push(err),
    });
    queues.push(queue);
    queue.start();
    queue.add('a');
    await eventually(() => runs === 2 && queue.failures('a') === 0, { what: 'the retry, and its failure forgotten' });
    expect(errors).toHaveLength(1);
    // The retry ran as the key's first failure in a row.
    expect(failuresAtRetry).toBe(1);
  });

  it('keeps the earliest of several delayed adds, and an immediate add cancels the delay', async () => {
    const w = worker();
    w.queue.addAfter('a', 10_000);
    w.queue.addAfter('a', 10);
    w.queue.addAfter('a', 5_000);
    await eventually(() => w.started.length === 1, { what: 'the earliest delay' });
    expect(w.started).toEqual(['a']);
    w.finish('a');
    w.queue.addAfter('b', 10_000);
    w.queue.add('b');
    await turn();
    expect(w.started).toEqual(['a', 'b']);
    w.finish('b');
    await turn();
    expect(w.queue.size).toBe(0);
  });

  it('runs a key again after the delay its worker asked for', async () => {
    const w = worker();
    w.queue.add('a');
    await turn();
    w.finish('a', { kind: 'after', ms: 10 });
    await turn();
    expect(w.started).toEqual(['a']);
    await eventually(() => w.started.length === 2, { what: 'the run after the delay' });
    expect(w.started).toEqual(['a', 'a']);
  });

  it('on stop drops what waits, waits for the keys in flight, and ignores adds until started again', async () => {
    const w = worker(1);
    w.queue.add('a');
    w.queue.add('b');
    w.queue.addAfter('c', 5);
    await turn();
    let stopped = false;
    const stopping = w.queue.stop().then(() => (stopped = true));
    await turn();
    expect(stopped).toBe(false);
    w.finish('a');
    await stopping;
    w.queue.add('d');
    await sleepMs(20);
    await turn();
    expect(w.started).toEqual(['a']);
    expect(w.queue.size).toBe(0);
    w.queue.start();
    w.queue.add('d');
    await turn();
    expect(w.started).toEqual(['a', 'd']);
  });
});

type Step = { op: 'add'; key: string } | { op: 'finish'; pick: number; retry: boolean } | { op: 'turn' };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ op: fc.constant('add' as const), key: fc.constantFrom('a', 'b', 'c', 'd') }),
  fc.record({ op: fc.constant('finish' as const), pick: fc.nat(), retry: fc.boolean() }),
  fc.record({ op: fc.constant('turn' as const) }),
);

describe('WorkQueue (properties)', () => {
  it('never works on a key twice at once, never loses an add, and never runs a key more often than it was added', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(stepArb, { maxLength: 60 }), fc.integer({ min: 1, max: 3 }), async (steps, conc) => {
        const w = new ManualWorker(conc, { retryInitialMs: 1, retryMaxMs: 2 });
        w.queue.start();
        const adds = new Map<string, number>();
        /** Keys added since their last run started: each must run again. */
        const owed = new Set<string>();
        const note = (): void => {
          for (const key of w.active) owed.delete(key);
        };
        const retried = new Map<string, number>();
        try {
          for (const step of steps) {
            if (step.op === 'add') {
              w.queue.add(step.key);
              adds.set(step.key, (adds.get(step.key) ?? 0) + 1);
              owed.add(step.key);
            } else if (step.op === 'finish') {
              const active = w.active;
              if (active.length === 0) continue;
              const key = active[step.pick % active.length] as string;
              if (step.retry) retried.set(key, (retried.get(key) ?? 0) + 1);
              w.finish(key, step.retry ? { kind: 'retry' } : { kind: 'done' });
            }
            await turn();
            expect(w.active.length).toBeLessThanOrEqual(conc);
            note();
          }
          // Drain: finish everything until the queue is idle (retries come back after ≤ 2 ms).
          for (let i = 0; i < 200 && w.queue.size > 0; i++) {
            for (const key of w.active) w.finish(key);
            await sleepMs(3);
            await turn();
            note();
          }
          expect(w.queue.size).toBe(0);
          expect([...owed]).toEqual([]);
          for (const [key, count] of adds) {
            const runs = w.started.filter((k) => k === key).length;
            expect(runs).toBeLessThanOrEqual(count + (retried.get(key) ?? 0));
          }
          expect(w.concurrentPeak).toBeLessThanOrEqual(conc);
        } finally {
          await shutdown(w);
        }
      }),
      { numRuns: 60 },
    );
  });

  it('backs a failing key off exponentially up to its cap: the n-th failure in a row waits initial·2^(n-1), capped', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1_000 }), fc.integer({ min: 1, max: 50_000 }), (initial, cap) => {
        const maxMs = Math.max(initial, cap);
        const queue = new WorkQueue({
          retryInitialMs: initial,
          retryMaxMs: maxMs,
          work: () => Promise.resolve({ kind: 'done' }),
          onError: () => undefined,
        });
        // Delays are read off the timers the queue arms, without running any of them.
        const delays: number[] = [];
        const realSetTimeout = globalThis.setTimeout;
        globalThis.setTimeout = ((fn: () => void, ms: number) => {
          delays.push(ms);
          return realSetTimeout(fn, 2 ** 30);
        }) as typeof setTimeout;
        try {
          queue.start();
          for (let n = 0; n < 12; n++) {
            queue.addRateLimited('k');
            // The delayed add of the previous step is replaced only by an earlier one: drop it to see each step.
            queue.add('k');
          }
          expect(queue.failures('k')).toBe(12);
        } finally {
          globalThis.setTimeout = realSetTimeout;
          void queue.stop();
        }
        delays.forEach((delay, n) => {
          const base = Math.min(maxMs, initial * 2 ** n);
          expect(delay).toBeGreaterThanOrEqual(base);
          expect(delay).toBeLessThanOrEqual(Math.min(maxMs, base * 1.2));
        });
      }),
      { numRuns: 100 },
    );
  });
});
