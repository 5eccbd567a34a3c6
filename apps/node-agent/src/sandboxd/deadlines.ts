// The deadlines of the buffered sandboxd calls of one duration, on one Node
// timer instead of one per call. Every call added gets the same duration
// from a monotonic clock, so the list is in deadline order by construction:
// adding appends, settling unlinks, and the timer only ever needs the head.
//
// Invariant: while the list is not empty, a referenced timer is armed to fire
// at or before the head's deadline. When it fires, every call whose deadline
// has come expires, and it is armed again for the new head. A call settled
// before its deadline only unlinks itself: the timer may then fire early
// for a later head, finds nothing due, and re-arms. An empty list leaves its
// timer unreferenced, so it never holds the process open.
import { performance } from 'node:perf_hooks';

/** A call waiting for its deadline. */
export interface Expiring {
  /** The deadline passed before the call settled; called at most once, after which it is no longer listed. */
  deadlinePassed(): void;
}

/** A call's place in the list, to take it out when it settles. */
export class Deadline {
  readonly at: number;
  readonly call: Expiring;
  previous: Deadline | undefined;
  next: Deadline | undefined;
  /** Whether it is still in the list (not settled, not expired). */
  listed = true;

  constructor(at: number, call: Expiring) {
    this.at = at;
    this.call = call;
  }
}

export class DeadlineList {
  /** The duration of every deadline in the list. */
  readonly ms: number;
  readonly #now: () => number;
  #head: Deadline | undefined;
  #tail: Deadline | undefined;
  #timer: NodeJS.Timeout | undefined;
  readonly #fire = (): void => this.#expireDue();

  constructor(ms: number, now: () => number = () => performance.now()) {
    this.ms = ms;
    this.#now = now;
  }

  /** Starts `call`'s deadline, `ms` from now. */
  add(call: Expiring): Deadline {
    const deadline = new Deadline(this.#now() + this.ms, call);
    const tail = this.#tail;
    if (tail === undefined) {
      this.#head = deadline;
      this.#tail = deadline;
      // A timer left from before the list emptied fires no later than this deadline (an earlier one's): referenced
      // again, it serves.
      if (this.#timer === undefined) this.#arm(this.ms);
      else this.#timer.ref();
    } else {
      deadline.previous = tail;
      tail.next = deadline;
      this.#tail = deadline;
    }
    return deadline;
  }

  /** The call settled: its deadline no longer counts. Idempotent. */
  remove(deadline: Deadline): void {
    if (!deadline.listed) return;
    deadline.listed = false;
    const { previous, next } = deadline;
    if (previous === undefined) this.#head = next;
    else previous.next = next;
    if (next === undefined) this.#tail = previous;
    else next.previous = previous;
    deadline.previous = undefined;
    deadline.next = undefined;
    if (this.#head === undefined) this.#timer?.unref();
  }

  /** Stops the timer (the calls still listed get no deadline from here on). */
  close(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #arm(delayMs: number): void {
    this.#timer = setTimeout(this.#fire, Math.max(1, Math.ceil(delayMs)));
  }

  #expireDue(): void {
    this.#timer = undefined;
    const now = this.#now();
    for (let head = this.#head; head !== undefined && head.at <= now; head = this.#head) {
      this.remove(head);
      head.call.deadlinePassed();
    }
    const head = this.#head;
    if (head !== undefined) this.#arm(head.at - now);
  }
}
