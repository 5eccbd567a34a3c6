// Watches one pool key's warm target across a simulated fleet, from inside
// each fake-sandboxd's setPools (no polling): a benchmark can wait for the
// exact moment the last node applied a new target, and see when the first did.
import type { PoolTarget } from '@warmpool/api';
import type { SimNode } from './fleet.ts';

export interface Propagation {
  /** performance.now() when the measurement started (just before the change was sent). */
  since: number;
  /** performance.now() of the first node's change after `since`. */
  first: number;
  /** performance.now() at which Σ target reached the wanted total: the last node applied. */
  last: number;
  /** Nodes whose target changed. */
  changed: number;
}

export class TargetTracker {
  readonly #template: string;
  readonly #targets = new Map<string, number>();
  #sum = 0;
  #measuring:
    { want: number; since: number; first: number; changed: Set<string>; done: (p: Propagation) => void } | undefined;

  constructor(template: string) {
    this.#template = template;
  }

  /** Σ of the key's targets over the fleet, as the nodes last applied them. */
  get total(): number {
    return this.#sum;
  }

  /** Pass as the fleet's onSetPools. */
  readonly onSetPools = (node: Pick<SimNode, 'name'>, pools: readonly PoolTarget[], at: number): void => {
    const target = pools.find((p) => p.template === this.#template)?.warm ?? 0;
    const previous = this.#targets.get(node.name) ?? 0;
    if (target === previous) return;
    this.#targets.set(node.name, target);
    this.#sum += target - previous;
    const m = this.#measuring;
    if (m === undefined || at < m.since) return;
    if (m.changed.size === 0) m.first = at;
    m.changed.add(node.name);
    if (this.#sum === m.want) {
      this.#measuring = undefined;
      m.done({ since: m.since, first: m.first, last: at, changed: m.changed.size });
    }
  };

  /**
   * Starts the clock now: call it right before sending the change. Resolves
   * when Σ target reaches `want`, or with undefined after `timeoutMs`.
   */
  until(want: number, timeoutMs: number): Promise<Propagation | undefined> {
    const since = performance.now();
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#measuring = undefined;
        resolve(undefined);
      }, timeoutMs);
      this.#measuring = {
        want,
        since,
        first: Number.NaN,
        changed: new Set(),
        done: (p) => {
          clearTimeout(timer);
          resolve(p);
        },
      };
    });
  }
}
