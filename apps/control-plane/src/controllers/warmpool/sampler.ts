// The periodic probe: every interval, GET /v1/info on every node that looks
// reachable, its answer (or failure) recorded in the node tracker, then one
// reconcile on what it found. One sampler per leadership term: it stops when
// the term's signal aborts, and a probe of an ended term records nothing.
import type { Logger } from '@warmpool/runtime';
import { NoTokenError } from '../../agents/errors.js';
import type { PoolSetter } from '../../agents/pool-setter.js';
import type { WarmPoolMetrics } from './metrics.js';
import type { TokenSource } from '../../agents/token.js';
import { forEachLimited } from './limiter.js';
import type { NodeTracker } from '../../nodes/tracker.js';

export interface ProbeSamplerOptions {
  setter: Pick<PoolSetter, 'info'>;
  tracker: Pick<NodeTracker, 'views' | 'recordAnswer' | 'recordFailure'>;
  token: TokenSource;
  metrics: Pick<WarmPoolMetrics, 'probeFailed'>;
  logger: Logger;
  intervalMs: number;
  /** Probes in flight at once. */
  concurrency: number;
  /** The term's signal: aborts every probe in flight, and no round starts after it. */
  signal: AbortSignal;
  /** Whether a push to the node is on the way (it will answer that instead). */
  pushing(name: string): boolean;
  /**
   * A round was due but none ran (one still running, no token, the term over): reconcile anyway, unless one is running.
   */
  onSkipped(): void;
  /** A round settled: reconcile on what it found. */
  onSampled(): void;
}

export class ProbeSampler {
  readonly #options: ProbeSamplerOptions;
  #timer: NodeJS.Timeout | undefined;
  #sampling: Promise<void> | undefined;

  constructor(options: ProbeSamplerOptions) {
    this.#options = options;
  }

  start(): void {
    this.#timer ??= setInterval(() => this.#sample(), this.#options.intervalMs);
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  #sample(): void {
    const { signal, setter, tracker, metrics, logger } = this.#options;
    if (this.#sampling !== undefined || signal.aborted || this.#options.token() === undefined) {
      if (this.#sampling === undefined) this.#options.onSkipped();
      return;
    }
    // Stale nodes come back with a fresh inventory, not a probe; nodes with a push on the way will answer that.
    // Nor is an address its node does not vouch for ever called, not even to probe.
    const probed = tracker
      .views()
      .filter(
        (v) =>
          v.exclusion !== 'stale' &&
          v.exclusion !== 'no-address' &&
          v.exclusion !== 'unverified-address' &&
          !this.#options.pushing(v.name),
      );
    this.#sampling = forEachLimited(probed, this.#options.concurrency, async (view) => {
      try {
        const info = await setter.info({ name: view.name, address: view.address }, { signal });
        if (signal.aborted) return;
        tracker.recordAnswer(view.name, info);
      } catch (err) {
        if (signal.aborted || err instanceof NoTokenError) return;
        metrics.probeFailed(view.name);
        const crossed = tracker.recordFailure(view.name, err);
        const level = crossed ? 'warn' : 'debug';
        logger[level]('probe failed', { node: view.name, address: view.address, failures: view.failures + 1, err });
      }
    }).finally(() => {
      this.#sampling = undefined;
      this.#options.onSampled();
    });
  }
}
