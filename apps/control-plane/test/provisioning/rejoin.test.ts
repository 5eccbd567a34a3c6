// What a Provisioner's hold waits for once the batches out are answered, and
// how it learns that callers do not ask again (src/provisioning/rejoin.ts).
import { describe, expect, it } from 'vitest';
import { Rejoin } from '../../src/provisioning/rejoin.js';

function clocked(gapMs = 10) {
  let now = 0;
  const rejoin = new Rejoin(gapMs, () => now);
  const times = (n: number, f: () => void): void => {
    for (let i = 0; i < n; i++) f();
  };
  return {
    rejoin,
    advance: (ms: number) => (now += ms),
    answer: (n: number) => times(n, () => rejoin.answered()),
    add: (n: number) => times(n, () => rejoin.added()),
  };
}

describe('Rejoin', () => {
  it('awaits every claim answered in the hold, less the claims added since its first answer', () => {
    const { rejoin, answer, add } = clocked();
    add(2); // held before any answer: not callers coming back
    answer(3); // a first batch out
    add(3); // its callers, back while a second batch is still out
    answer(1); // the second batch, the last out
    expect(rejoin.begin()).toBe(1);
  });

  it('keeps its counts when a hold ends while a batch is still out', () => {
    const { rejoin, answer, add } = clocked();
    answer(1); // one claim of the batch out
    rejoin.end(false); // the hold ends by its max duration; the held claim goes as a second batch
    answer(2); // the rest of the first batch
    add(3); // the first batch's callers, back
    answer(1); // the second batch
    expect(rejoin.begin()).toBe(1);
  });

  it('awaits no more than the held batch has room for, and judges the wait against that', () => {
    const { rejoin, answer, add, advance } = clocked();
    answer(4);
    expect(rejoin.begin(0)).toBe(0);
    rejoin.end(true);
    answer(4);
    expect(rejoin.begin(1)).toBe(1);
    add(1); // fills the batch 60 % into the gap
    advance(6);
    rejoin.end(true);
    expect(rejoin.waiting).toBe(true);
  });

  it('awaits nothing once every caller answered is back', () => {
    const { rejoin, answer, add } = clocked();
    answer(2);
    add(2);
    expect(rejoin.begin()).toBe(0);
  });

  it('stops waiting after a wait in which fewer than half of the awaited claims came', () => {
    const { rejoin, answer, add, advance } = clocked();
    answer(4);
    expect(rejoin.begin()).toBe(4);
    add(1);
    advance(10);
    rejoin.end(true);
    expect(rejoin.waiting).toBe(false);
    answer(4);
    expect(rejoin.begin()).toBeUndefined();
  });

  it('keeps waiting after a wait in which half came', () => {
    const { rejoin, answer, add, advance } = clocked();
    answer(4);
    rejoin.begin();
    add(2);
    advance(10);
    rejoin.end(true);
    expect(rejoin.waiting).toBe(true);
  });

  it('judges a wait cut short by the part of the gap it lasted', () => {
    const { rejoin, answer, advance } = clocked();
    answer(4);
    rejoin.begin();
    rejoin.end(true); // at once: no evidence either way
    expect(rejoin.waiting).toBe(true);
    answer(4);
    rejoin.begin();
    advance(5); // half the gap, none of the 4 came (half of half would be 1)
    rejoin.end(true);
    expect(rejoin.waiting).toBe(false);
  });

  it('waits again once as many claims came within a gap of an answer as a wait would have awaited', () => {
    const { rejoin, answer, add, advance } = clocked();
    answer(2);
    rejoin.begin();
    advance(10);
    rejoin.end(true);
    answer(2);
    expect(rejoin.begin()).toBeUndefined();
    rejoin.end(true);
    advance(11); // past the gap: these do not count
    add(2);
    expect(rejoin.waiting).toBe(false);
    answer(2);
    expect(rejoin.begin()).toBeUndefined();
    rejoin.end(true);
    advance(9);
    add(2);
    expect(rejoin.waiting).toBe(true);
  });
});
