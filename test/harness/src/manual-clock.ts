// A clock that only moves when the test says so; timers fire in deadline order.
import type { TimerClock, Timer } from '@warmpool/runtime';

interface Scheduled {
  at: number;
  seq: number;
  fn: () => void;
  cancelled: boolean;
}

export class ManualClock implements TimerClock {
  #current: number;
  #seq = 0;
  #scheduled: Scheduled[] = [];

  constructor(start = Date.UTC(2030, 0, 1)) {
    this.#current = start;
  }

  /** A bound function, so `clock.now` can be handed over on its own. */
  readonly now = (): number => this.#current;

  /** The current time (plus `offsetMs`) as an RFC 3339 string. */
  iso(offsetMs = 0): string {
    return new Date(this.#current + offsetMs).toISOString();
  }

  setTimeout(fn: () => void, ms: number): Timer {
    const timer: Scheduled = { at: this.#current + Math.max(0, ms), seq: this.#seq++, fn, cancelled: false };
    this.#scheduled.push(timer);
    return { cancel: () => void (timer.cancelled = true) };
  }

  /** Timers still waiting to fire. */
  get pending(): number {
    this.#scheduled = this.#scheduled.filter((t) => !t.cancelled);
    return this.#scheduled.length;
  }

  /** Move time forward by `ms`, firing every timer that falls due, in order (including ones they schedule). */
  advance(ms: number): void {
    const target = this.#current + ms;
    for (;;) {
      const next = this.#nextDue(target);
      if (next === undefined) break;
      this.#scheduled.splice(this.#scheduled.indexOf(next), 1);
      this.#current = next.at;
      next.fn();
    }
    this.#current = target;
  }

  #nextDue(target: number): Scheduled | undefined {
    let best: Scheduled | undefined;
    for (const t of this.#scheduled) {
      if (t.cancelled || t.at > target) continue;
      if (best === undefined || t.at < best.at || (t.at === best.at && t.seq < best.seq)) best = t;
    }
    return best;
  }
}
