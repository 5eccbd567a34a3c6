import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { CoalescingTrigger } from '../src/controllers/warmpool/trigger.js';

/** A run that stays in flight until released, recording the reasons it was given. */
function gatedRuns(): { runs: Array<string[]>; release(): void; trigger: CoalescingTrigger } {
  const runs: Array<string[]> = [];
  let open: (() => void) | undefined;
  const trigger = new CoalescingTrigger({
    run: (reasons) => {
      runs.push([...reasons].sort());
      return new Promise<void>((resolve) => {
        open = resolve;
      });
    },
  });
  return {
    runs,
    trigger,
    release: () => {
      const resolve = open;
      open = undefined;
      resolve?.();
    },
  };
}

describe('CoalescingTrigger', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('runs once for a burst of pokes, then waits for the next poke', async () => {
    const { runs, trigger, release } = gatedRuns();
    for (let i = 0; i < 1000; i++) trigger.poke(`pool ${i % 3}`);
    expect(runs).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(0);
    expect(runs).toEqual([['pool 0', 'pool 1', 'pool 2']]);
    release();
    await vi.advanceTimersByTimeAsync(10);
    expect(trigger.runs).toBe(1);
    trigger.poke('later');
    await vi.advanceTimersByTimeAsync(0);
    expect(runs).toEqual([['pool 0', 'pool 1', 'pool 2'], ['later']]);
  });

  it('schedules exactly one follow-up run for any number of pokes during a run', async () => {
    const { runs, trigger, release } = gatedRuns();
    trigger.poke('first');
    await vi.advanceTimersByTimeAsync(0);
    for (let i = 0; i < 50; i++) trigger.poke(i % 2 === 0 ? 'node changed' : 'pool changed');
    release();
    await vi.advanceTimersByTimeAsync(0);
    expect(runs).toEqual([['first'], ['node changed', 'pool changed']]);
    release();
    await vi.advanceTimersByTimeAsync(100);
    expect(runs).toHaveLength(2);
  });

  it('never runs twice at once', async () => {
    let inFlight = 0;
    let most = 0;
    const trigger = new CoalescingTrigger({
      run: async () => {
        inFlight++;
        most = Math.max(most, inFlight);
        await new Promise((resolve) => setTimeout(resolve, 10));
        inFlight--;
      },
    });
    for (let i = 0; i < 20; i++) {
      trigger.poke('tick');
      await vi.advanceTimersByTimeAsync(3);
    }
    await vi.runAllTimersAsync();
    expect(most).toBe(1);
    expect(trigger.runs).toBeLessThan(20);
  });

  it('keeps going after a run throws, and reports the error', async () => {
    const errors: unknown[] = [];
    let calls = 0;
    const trigger = new CoalescingTrigger({
      run: () => {
        calls++;
        return calls === 1 ? Promise.reject(new Error('boom')) : Promise.resolve();
      },
      onError: (err) => errors.push(err),
    });
    trigger.poke('a');
    await vi.advanceTimersByTimeAsync(0);
    trigger.poke('b');
    await vi.advanceTimersByTimeAsync(0);
    expect(calls).toBe(2);
    expect((errors[0] as Error).message).toBe('boom');
  });

  it('starts nothing after close(), and close() waits for the run in flight', async () => {
    const { runs, trigger, release } = gatedRuns();
    trigger.poke('a');
    await vi.advanceTimersByTimeAsync(0);
    trigger.poke('b');
    let closed = false;
    const closing = trigger.close().then(() => {
      closed = true;
    });
    await vi.advanceTimersByTimeAsync(0);
    expect(closed).toBe(false);
    release();
    await closing;
    trigger.poke('c');
    await vi.advanceTimersByTimeAsync(100);
    expect(runs).toEqual([['a']]);
  });
});
