// One timer per node for all claim deadlines: armed for the earliest one and
// re-armed after each firing, so 100k claims cost one pending timer, not 100k.
import type { Timer, TimerClock } from '@warmpool/runtime';
import { DeadlineHeap, type HeapItem } from './deadline-heap.js';

export class DeadlineTimer<T extends HeapItem> {
  private readonly heap = new DeadlineHeap<T>();
  private timer: Timer | undefined;
  private armedAt = Number.POSITIVE_INFINITY;
  private closed = false;
  private readonly clock: TimerClock;
  private readonly onDue: (item: T) => void;
  private readonly afterDue: () => void;

  /** `onDue` runs for each item whose deadline passed; `afterDue` once after each such batch. */
  constructor(clock: TimerClock, onDue: (item: T) => void, afterDue: () => void = () => {}) {
    this.clock = clock;
    this.onDue = onDue;
    this.afterDue = afterDue;
  }

  get size(): number {
    return this.heap.size;
  }

  add(item: T): void {
    this.heap.push(item);
    this.arm();
  }

  /** Call after changing `item.deadline`. */
  update(item: T): void {
    this.heap.update(item);
    this.arm();
  }

  remove(item: T): void {
    // Leaving the timer armed for a removed item is harmless: it fires, finds nothing due, re-arms.
    this.heap.remove(item);
  }

  close(): void {
    this.closed = true;
    this.timer?.cancel();
    this.timer = undefined;
    this.heap.clear();
  }

  private arm(): void {
    const top = this.heap.peek();
    if (this.closed || top === undefined || (this.timer !== undefined && this.armedAt <= top.deadline)) return;
    this.timer?.cancel();
    this.armedAt = top.deadline;
    this.timer = this.clock.setTimeout(() => this.fire(), top.deadline - this.clock.now());
  }

  private fire(): void {
    this.timer = undefined;
    this.armedAt = Number.POSITIVE_INFINITY;
    const now = this.clock.now();
    let due = 0;
    for (let item = this.heap.popDue(now); item !== undefined; item = this.heap.popDue(now), due++) this.onDue(item);
    this.arm();
    if (due > 0) this.afterDue();
  }
}
