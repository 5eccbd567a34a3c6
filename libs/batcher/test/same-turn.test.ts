import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SameTurn } from '../src/index.js';

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('SameTurn', () => {
  it('carries the calls of one turn together, each item once and in order, each caller its own result', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 1, max: 7 }), { minLength: 1, maxLength: 6 }),
        fc.integer({ min: 1, max: 5 }),
        async (turns, maxItems) => {
          const calls: number[][] = [];
          const same = new SameTurn<number, string>(
            async (items) => {
              calls.push([...items]);
              return items.map((item) => `r${item}`);
            },
            { maxItems },
          );
          let next = 0;
          const results: Array<Promise<string>> = [];
          const expected: number[][] = [];
          for (const count of turns) {
            const turn = Array.from({ length: count }, () => next++);
            for (const item of turn) results.push(same.add(item));
            for (let at = 0; at < turn.length; at += maxItems) expected.push(turn.slice(at, at + maxItems));
            await nextTurn();
          }
          expect(await Promise.all(results)).toEqual(Array.from({ length: next }, (_, i) => `r${i}`));
          expect(calls).toEqual(expected);
        },
      ),
    );
  });

  it("rejects the callers of a failed call, and only them, with that call's error", async () => {
    const same = new SameTurn<string, string>(async (items) => {
      if (items.includes('bad')) throw new Error('the call failed');
      return items;
    });
    const failed = Promise.allSettled([same.add('a'), same.add('bad')]);
    await nextTurn();
    const served = same.add('c');
    expect((await failed).map((r) => (r.status === 'rejected' ? (r.reason as Error).message : r.value))).toEqual([
      'the call failed',
      'the call failed',
    ]);
    await expect(served).resolves.toBe('c');
  });

  it('rejects every caller of a call that answers the wrong number of results, and one that throws synchronously', async () => {
    const short = new SameTurn<number, number>(async () => [1]);
    const both = Promise.allSettled([short.add(1), short.add(2)]);
    expect((await both).map((r) => r.status === 'rejected' && (r.reason as Error).message)).toEqual([
      'a same-turn call answered 1 results for 2 items',
      'a same-turn call answered 1 results for 2 items',
    ]);
    const throwing = new SameTurn<number, number>(() => {
      throw new Error('no promise');
    });
    await expect(throwing.add(1)).rejects.toThrow('no promise');
  });
});
