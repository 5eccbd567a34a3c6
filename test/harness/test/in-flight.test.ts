import { describe, expect, it } from 'vitest';
import { InFlight } from '../src/in-flight.js';

/** A call that stays in flight until released. */
function gate(): { promise: Promise<void>; release(): void } {
  let release = (): void => undefined;
  const promise = new Promise<void>((resolve) => {
    release = resolve;
  });
  return { promise, release };
}

describe('InFlight', () => {
  it('is quiet within a few turns when nothing was ever tracked', async () => {
    await new InFlight().quiet();
  });

  it('passes a tracked call through, result or rejection, and counts it only while it is in flight', async () => {
    const calls = new InFlight();
    const open = gate();
    const answer = calls.track(async () => {
      await open.promise;
      return 42;
    });
    expect([calls.started, calls.inFlight]).toEqual([1, 1]);
    open.release();
    expect(await answer).toBe(42);
    await expect(calls.track(() => Promise.reject(new Error('refused')))).rejects.toThrow('refused');
    expect([calls.started, calls.inFlight]).toEqual([2, 0]);
  });

  it('waits while a tracked call is in flight', async () => {
    const calls = new InFlight();
    const open = gate();
    void calls.track(() => open.promise);
    let quiet = false;
    const waiting = calls.quiet().then(() => {
      quiet = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(quiet).toBe(false);
    open.release();
    await waiting;
    expect(calls.inFlight).toBe(0);
  });

  it('waits for the calls that settling calls start on the next macrotask', async () => {
    const calls = new InFlight();
    const done: number[] = [];
    const step = (n: number): void => {
      void calls.track(async () => {
        done.push(n);
        if (n < 20) setTimeout(() => step(n + 1), 0);
      });
    };
    step(1);
    await calls.quiet();
    expect(done).toHaveLength(20);
  });

  it('waits while the caller-supplied progress moves, without any tracked call', async () => {
    const calls = new InFlight();
    let runs = 0;
    const run = (): void => {
      runs++;
      if (runs < 20) setTimeout(run, 0);
    };
    setTimeout(run, 0);
    await calls.quiet(() => runs);
    expect(runs).toBe(20);
  });

  it('cannot see a real-time wait: a call started after a sleep is not waited for', async () => {
    const calls = new InFlight();
    const later = setTimeout(() => void calls.track(() => Promise.resolve()), 2_000);
    await calls.quiet();
    expect(calls.started).toBe(0);
    clearTimeout(later);
  });

  it('gives up after its timeout, saying what is still in flight', async () => {
    const calls = new InFlight();
    const open = gate();
    void calls.track(() => open.promise);
    await expect(calls.quiet(undefined, { timeoutMs: 50 })).rejects.toThrow(
      /not quiet after 50 ms: 1 tracked calls in flight, 1 started/,
    );
    open.release();
  });
});
