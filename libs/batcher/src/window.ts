/** Which deadline ended a window. */
export type WindowDeadline = 'idle' | 'maxDuration';

/**
 * One batching window: closes `idleMs` after the last item, or `maxDurationMs`
 * after it opened, whichever comes first.
 *
 * Items only record their arrival time; the single timer re-arms itself lazily
 * when it fires early. Re-arming a timer on every item would cost a
 * clearTimeout/setTimeout pair per add, which dominates a 2 000-item burst.
 */
export class BatchWindow {
  readonly #idleMs: number;
  readonly #maxDurationMs: number;
  readonly #onDeadline: (deadline: WindowDeadline) => void;
  readonly #openedAt: number;
  #lastItemAt: number;
  #timer: ReturnType<typeof setTimeout> | undefined;

  /** Opens the window now; `onDeadline` runs once, unless `cancel()` comes first. */
  constructor(idleMs: number, maxDurationMs: number, onDeadline: (deadline: WindowDeadline) => void) {
    this.#idleMs = idleMs;
    this.#maxDurationMs = maxDurationMs;
    this.#onDeadline = onDeadline;
    this.#openedAt = performance.now();
    this.#lastItemAt = this.#openedAt;
    this.#arm(Math.min(idleMs, maxDurationMs));
  }

  /** Milliseconds since the window opened. */
  elapsedMs(): number {
    return performance.now() - this.#openedAt;
  }

  /** An item arrived: the idle deadline moves to `idleMs` from now. */
  extend(): void {
    this.#lastItemAt = performance.now();
  }

  cancel(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #arm(delayMs: number): void {
    // Rounding up: a timer may fire late, never before the deadline it stands for.
    this.#timer = setTimeout(() => this.#check(), Math.ceil(delayMs));
  }

  #check(): void {
    this.#timer = undefined;
    const now = performance.now();
    const maxDeadline = this.#openedAt + this.#maxDurationMs;
    const idleDeadline = this.#lastItemAt + this.#idleMs;
    const deadline = Math.min(maxDeadline, idleDeadline);
    if (now < deadline) {
      this.#arm(deadline - now);
      return;
    }
    this.#onDeadline(maxDeadline <= idleDeadline ? 'maxDuration' : 'idle');
  }
}
