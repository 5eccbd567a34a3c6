import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DeadlineHeap, type HeapItem } from '../src/core/deadline-heap.js';

interface Item extends HeapItem {
  name: number;
}

type Op =
  | { kind: 'push'; deadline: number }
  | { kind: 'update'; pick: number; deadline: number }
  | { kind: 'remove'; pick: number }
  | { kind: 'pop'; now: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('push' as const), deadline: fc.integer({ min: 0, max: 100 }) }),
  fc.record({ kind: fc.constant('update' as const), pick: fc.nat(), deadline: fc.integer({ min: 0, max: 100 }) }),
  fc.record({ kind: fc.constant('remove' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('pop' as const), now: fc.integer({ min: 0, max: 100 }) }),
);

describe('DeadlineHeap', () => {
  it('always yields the earliest due deadline, through any mix of push, update, remove and pop', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 200 }), (ops) => {
        const heap = new DeadlineHeap<Item>();
        const model: Item[] = [];
        let names = 0;
        for (const o of ops) {
          if (o.kind === 'push') {
            const item = { name: names++, deadline: o.deadline, heapIndex: -1 };
            heap.push(item);
            model.push(item);
          } else if (o.kind === 'pop') {
            const earliest = Math.min(...model.map((i) => i.deadline));
            const popped = heap.popDue(o.now);
            if (model.length === 0 || earliest > o.now) {
              expect(popped).toBeUndefined();
            } else {
              expect(popped?.deadline).toBe(earliest);
              model.splice(model.indexOf(popped as Item), 1);
              expect(popped?.heapIndex).toBe(-1);
            }
          } else if (model.length > 0) {
            const item = model[o.pick % model.length] as Item;
            if (o.kind === 'update') {
              item.deadline = o.deadline;
              heap.update(item);
            } else {
              heap.remove(item);
              model.splice(model.indexOf(item), 1);
            }
          }
          expect(heap.size).toBe(model.length);
        }
        const drained: number[] = [];
        for (let item = heap.popDue(Infinity); item; item = heap.popDue(Infinity)) drained.push(item.deadline);
        expect(drained).toEqual(model.map((i) => i.deadline).sort((a, b) => a - b));
      }),
    );
  });
});
