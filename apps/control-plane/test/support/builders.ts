// Plain objects for in-process specs.
// Re-export kept for branches in flight; import from @warmpool/harness
export { infoOf, inventoryObject, poolObject, templateObject } from '@warmpool/harness';

/** A clock the spec moves by hand. */
export class ManualClock {
  #now: number;

  constructor(start = Date.parse('2030-01-01T00:00:00Z')) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  advance(ms: number): void {
    this.#now += ms;
  }

  iso(offsetMs = 0): string {
    return new Date(this.#now + offsetMs).toISOString();
  }
}
