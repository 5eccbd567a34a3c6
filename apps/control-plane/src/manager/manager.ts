// The manager runs the control plane's runnables. Invariants:
//  - every-replica runnables start in list order at start(); leader
//    runnables start together at the beginning of each term, with the term's
//    signal, which aborts the moment the term ends (lost or resigned);
//  - leadership is the campaign's alone: the manager only turns its terms on
//    and off, so no runnable elects or resigns itself;
//  - close() resigns first (leader work stops at once), then closes the
//    leader runnables together (their term has ended, and none needs another
//    to close: a stopped apiserver costs the longest of their closes, not
//    their sum, as controller-runtime stops a runnable group), then every
//    other runnable in reverse list order; each close is isolated, and the
//    Lease is released beside them all (a standby takes over as soon as the
//    apiserver answers; a stopped apiserver costs the longer of the two);
//  - readiness and liveness are the union of what the runnables report.
import { closeInOrder, closeTogether, type CloseStep, type Logger } from '@warmpool/runtime';
import type { HeldLease } from '../generation/lease-epoch-store.js';
import { Campaign, type CampaignOptions } from '../leadership/campaign.js';
import type { Leadership } from '../controllers/warmpool/reconciler.js';
import type { Runnable } from './runnable.js';

export type ElectionSettings = Omit<
  CampaignOptions,
  'closing' | 'onStartedLeading' | 'onStoppedLeading' | 'logger' | 'kubeLogger'
>;

/** The Lease timings of the settings, as the campaign takes them (each default: client-go's). */
export function leaseTimingsOf(
  settings: Pick<ElectionSettings, 'leaseDurationMs' | 'renewDeadlineMs' | 'retryPeriodMs'>,
): Pick<ElectionSettings, 'leaseDurationMs' | 'renewDeadlineMs' | 'retryPeriodMs'> {
  const { leaseDurationMs, renewDeadlineMs, retryPeriodMs } = settings;
  return { leaseDurationMs, renewDeadlineMs, retryPeriodMs };
}

export interface ManagerOptions {
  election: ElectionSettings;
  logger: Logger;
  /** Told at each term's start (true) and end (false). */
  onLeading?(leading: boolean): void;
}

export class Manager {
  readonly #runnables: Runnable[] = [];
  readonly #campaign: Campaign;
  readonly #logger: Logger;
  readonly #onLeading: (leading: boolean) => void;
  readonly #lifetime = new AbortController();
  #term: AbortController | undefined;
  #started: Promise<void> | undefined;
  #closing: Promise<void> | undefined;

  constructor(options: ManagerOptions) {
    this.#logger = options.logger;
    this.#onLeading = options.onLeading ?? (() => undefined);
    this.#campaign = new Campaign({
      ...options.election,
      logger: options.logger,
      kubeLogger: options.logger.child({ subsystem: 'kube' }),
      closing: () => this.#closing !== undefined,
      onStartedLeading: async (signal) => this.#lead(signal),
      onStoppedLeading: (why) => this.#stopLeading(why),
    });
  }

  /** Leader-only writes ask this whether the lease is still held. */
  get leadership(): Leadership {
    return this.#campaign.leadership;
  }

  /** The election Lease as held by this replica (it carries the generation epoch). */
  get heldLease(): HeldLease {
    return this.#campaign.heldLease;
  }

  get leaseHolder(): string | null {
    return this.#campaign.leaseHolder;
  }

  /** True while a term is on (its leader runnables may still be waiting for caches). */
  get leading(): boolean {
    return this.#term !== undefined;
  }

  /** Adds runnables to the list; before start() only. Returns the manager for chaining. */
  add(...runnables: Array<Runnable | undefined>): this {
    if (this.#started !== undefined) throw new Error('the manager has started: no runnable can be added');
    for (const runnable of runnables) if (runnable !== undefined) this.#runnables.push(runnable);
    return this;
  }

  notReadyReasons(): string[] {
    return [...this.#campaign.notReadyReasons(), ...this.#runnables.flatMap((r) => r.notReady?.() ?? [])];
  }

  notLiveReasons(): string[] {
    return this.#runnables.flatMap((r) => r.notLive?.() ?? []);
  }

  /** Starts every-replica runnables in order, then campaigns. Idempotent. */
  start(): Promise<void> {
    this.#started ??= this.#start();
    return this.#started;
  }

  /**
   * Ends the term, closes the leader runnables together and then the others in reverse order, beside the Lease's
   * release, and waits for that release last.
   * Idempotent; waits for a start in progress.
   */
  close(): Promise<void> {
    this.#closing ??= (this.#started ?? Promise.resolve()).catch(() => undefined).then(() => this.#close());
    return this.#closing;
  }

  async #start(): Promise<void> {
    for (const runnable of this.#runnables) if (!runnable.needsLeader) await runnable.start(this.#lifetime.signal);
    this.#campaign.start();
  }

  #lead(electorSignal: AbortSignal): void {
    if (this.#term !== undefined || this.#closing !== undefined) return;
    const term = new AbortController();
    this.#term = term;
    // Only this term: an elector's signal may abort after its term was already ended (resigned) and another began.
    electorSignal.addEventListener(
      'abort',
      () => {
        if (this.#term === term) this.#stopLeading('lost');
      },
      { once: true },
    );
    this.#onLeading(true);
    this.#logger.info('leading: starting the leader-only runnables', {
      runnables: this.#runnables.filter((r) => r.needsLeader).map((r) => r.name),
    });
    for (const runnable of this.#runnables) {
      if (!runnable.needsLeader) continue;
      void Promise.resolve()
        .then(() => runnable.start(term.signal))
        .catch((err: unknown) =>
          this.#logger.error('a leader runnable failed to start', { runnable: runnable.name, err }),
        );
    }
  }

  #stopLeading(why: 'lost' | 'resigned'): void {
    const term = this.#term;
    if (term === undefined) return;
    this.#term = undefined;
    if (why === 'lost') this.#logger.warn('lost leadership: stopped the leader-only runnables');
    term.abort(new Error(`leadership ${why}`));
    this.#onLeading(false);
  }

  async #close(): Promise<void> {
    this.#campaign.stopFollowingToken();
    // The term ends before resign() returns its promise; only the Lease's release is left in it, an apiserver write
    // that waits up to the renew deadline. Handled at once (never an unhandled rejection), awaited last.
    const released = this.#campaign.resign();
    released.catch(() => undefined);
    const stepOf = (r: Runnable): CloseStep => [r.name, () => r.close()];
    const leaders = this.#runnables.filter((r) => r.needsLeader).map(stepOf);
    const everyReplica = this.#runnables.filter((r) => !r.needsLeader).map(stepOf);
    await closeInOrder(
      'the control plane',
      [
        ['lifetime', () => this.#lifetime.abort(new Error('closing'))],
        ['leader runnables', () => closeTogether('the leader runnables', leaders, this.#logger)],
        ...everyReplica.reverse(),
        ['leadership', () => released],
      ],
      this.#logger,
    );
  }
}
