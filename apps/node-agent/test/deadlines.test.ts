// The buffered sandboxd calls' deadlines on one timer per duration: each call
// still expires at its own deadline, never before and never after it by more
// than the timer's millisecond, and a settled call never expires.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DeadlineList } from '../src/sandboxd/deadlines.js';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

/** A list of `ms` deadlines on the fake clock, and the names of the calls expired so far, in order. */
function listOf(ms: number): { list: DeadlineList; expired: string[]; call(name: string): { deadlinePassed(): void } } {
  const expired: string[] = [];
  return {
    list: new DeadlineList(ms, () => Date.now()),
    expired,
    call: (name) => ({ deadlinePassed: () => expired.push(name) }),
  };
}

describe('DeadlineList', () => {
  it('expires each call at its own deadline, in order, and not before', async () => {
    const { list, expired, call } = listOf(100);
    list.add(call('a'));
    await vi.advanceTimersByTimeAsync(30);
    list.add(call('b'));
    await vi.advanceTimersByTimeAsync(69);
    expect(expired).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(expired).toEqual(['a']);
    await vi.advanceTimersByTimeAsync(29);
    expect(expired).toEqual(['a']);
    await vi.advanceTimersByTimeAsync(1);
    expect(expired).toEqual(['a', 'b']);
  });

  it('never expires a call removed before its deadline; the others keep theirs', async () => {
    const { list, expired, call } = listOf(100);
    const a = list.add(call('a'));
    await vi.advanceTimersByTimeAsync(10);
    const b = list.add(call('b'));
    await vi.advanceTimersByTimeAsync(10);
    list.add(call('c'));
    list.remove(a);
    list.remove(b);
    list.remove(b);
    await vi.advanceTimersByTimeAsync(99);
    expect(expired).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(expired).toEqual(['c']);
  });

  it('expires every call due at once together', async () => {
    const { list, expired, call } = listOf(50);
    for (const name of ['a', 'b', 'c']) list.add(call(name));
    await vi.advanceTimersByTimeAsync(50);
    expect(expired).toEqual(['a', 'b', 'c']);
  });

  it('keeps a call added after the list emptied to its own deadline (the earlier timer only re-arms)', async () => {
    const { list, expired, call } = listOf(100);
    list.remove(list.add(call('a')));
    await vi.advanceTimersByTimeAsync(60);
    list.add(call('b'));
    await vi.advanceTimersByTimeAsync(99);
    expect(expired).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(expired).toEqual(['b']);
  });

  it('expires nothing after close()', async () => {
    const { list, expired, call } = listOf(100);
    list.add(call('a'));
    list.close();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(expired).toEqual([]);
  });
});
