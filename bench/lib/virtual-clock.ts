// Virtual time for discrete-event simulations: a TimerClock whose timers sit in
// a binary heap and fire in (deadline, insertion) order only when run() moves
// time on. Components built on a TimerClock (fake-sandboxd's core) run on it
// unchanged, so a simulated hour costs what its events cost, not an hour.
import type { Timer, TimerClock } from '@warmpool/runtime';

interface Scheduled {
  at: number;
  seq: number;
  fn: () => void;
  cancelled: boolean;
}

export class VirtualClock implements TimerClock {
  #now: number;
  #seq = 0;
  readonly #heap: Scheduled[] = [];

  constructor(start = 0) {
    this.#now = start;
  }

  readonly now = (): number => this.#now;

  setTimeout(fn: () => void, ms: number): Timer {
    const timer: Scheduled = { at: this.#now + Math.max(0, ms), seq: this.#seq++, fn, cancelled: false };
    this.#push(timer);
    return { cancel: () => void (timer.cancelled = true) };
  }

  /** Schedule at an absolute time (never in the past). */
  at(time: number, fn: () => void): Timer {
    return this.setTimeout(fn, time - this.#now);
  }

  /**
   * Fire every timer due up to `until`, in order; after each, `settle()` lets
   * promise continuations the timer released run at that same virtual instant.
   */
  async run(until: number, settle: () => boolean): Promise<void> {
    for (;;) {
      const next = this.#heap[0];
      if (next === undefined || next.at > until) break;
      this.#pop();
      if (next.cancelled) continue;
      this.#now = next.at;
      next.fn();
      while (settle()) await Promise.resolve();
    }
    this.#now = until;
  }

  #less(a: Scheduled, b: Scheduled): boolean {
    return a.at < b.at || (a.at === b.at && a.seq < b.seq);
  }

  #push(item: Scheduled): void {
    const heap = this.#heap;
    heap.push(item);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const above = heap[parent];
      if (above === undefined || !this.#less(item, above)) break;
      heap[i] = above;
      i = parent;
    }
    heap[i] = item;
  }

  #pop(): void {
    const heap = this.#heap;
    const last = heap.pop();
    if (last === undefined || heap.length === 0) return;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let smallest = i;
      let best: Scheduled = last;
      const l = heap[left];
      const r = heap[right];
      if (l !== undefined && this.#less(l, best)) {
        smallest = left;
        best = l;
      }
      if (r !== undefined && this.#less(r, best)) smallest = right;
      if (smallest === i) break;
      heap[i] = heap[smallest] as Scheduled;
      i = smallest;
    }
    heap[i] = last;
  }
}
