// Who leads: this replica campaigns for the election Lease only while it has
// the fleet token (fail-closed: a replica without it must not hold the lease
// and sit idle while a healthy one waits), steps down when the token goes and
// campaigns again when it is back. Without election (a single replica by
// construction) it leads at once. Each term is a signal: it aborts when the
// term ends, and whoever runs leader-only work stops with it.
import { FLEET_TOKEN_ENV } from '@warmpool/runtime';
import { LeaderElector, NotLeaderError, type KubeLogger, type Lease, type KubeConfig } from '@warmpool/kube';
import type { Logger } from '@warmpool/runtime';
import type { Leadership } from '../controllers/warmpool/reconciler.js';
import type { HeldLease } from '../generation/lease-epoch-store.js';
import type { TokenSource } from '../agents/token.js';

export interface CampaignOptions {
  kubeConfig: KubeConfig;
  /** Where the Lease lives, its name, and this replica's identity in it. */
  namespace: string;
  leaseName: string;
  identity: string;
  leaseDurationMs?: number | undefined;
  renewDeadlineMs?: number | undefined;
  retryPeriodMs?: number | undefined;
  /** false: lead at once without a Lease. */
  elect: boolean;
  token: TokenSource;
  /** True once the control plane is closing: no new campaign starts. */
  closing(): boolean;
  /** A term began; `signal` aborts when it ends. */
  onStartedLeading(signal: AbortSignal): Promise<void>;
  /**
   * The term ended: 'lost' (renewal failed, another holder, the elector closed) or 'resigned' (before the Lease is
   * released).
   */
  onStoppedLeading(why: 'lost' | 'resigned'): void;
  logger: Logger;
  kubeLogger: KubeLogger;
}

export class Campaign {
  readonly #options: CampaignOptions;
  #elector: LeaderElector | undefined;
  #standalone: AbortController | undefined;
  #tokenWatch: NodeJS.Timeout | undefined;

  /** The epoch is written through whichever elector is campaigning now (there is a new one after each resign). */
  readonly heldLease: HeldLease = {
    updateHeld: (mutate: (lease: Lease) => Lease, signal?: AbortSignal): Promise<Lease> => {
      if (this.#elector === undefined) return Promise.reject(new NotLeaderError('not campaigning'));
      return this.#elector.updateHeld(mutate, signal);
    },
  };

  /** Standalone (no election) always leads; otherwise ask the elector campaigning now. */
  readonly leadership: Leadership = {
    holding: () => !this.#options.elect || this.#elector?.holding() === true,
    confirm: async (signal) =>
      !this.#options.elect || (this.#elector !== undefined && (await this.#elector.confirm(signal))),
  };

  constructor(options: CampaignOptions) {
    this.#options = options;
  }

  /** The Lease's holder as last seen, or null. */
  get leaseHolder(): string | null {
    return this.#elector?.leader ?? null;
  }

  /** Fail-closed: without the fleet token this replica neither campaigns nor counts as ready. */
  notReadyReasons(): string[] {
    return this.#options.token() === undefined
      ? [`no fleet token configured (--token-file or ${FLEET_TOKEN_ENV}): fail-closed, nothing is pushed`]
      : [];
  }

  /** Campaigns now if the token is there, and follows the token from then on. */
  start(): void {
    if (this.#options.token() !== undefined) this.#campaign();
    else
      this.#options.logger.error(
        `no fleet token configured (--token-file or ${FLEET_TOKEN_ENV}): not campaigning for leadership, pushing nothing, reporting not ready`,
      );
    this.#tokenWatch = setInterval(() => this.#followToken(), 1_000);
    this.#tokenWatch.unref();
  }

  /** Stops following the token (the first thing close does). */
  stopFollowingToken(): void {
    clearInterval(this.#tokenWatch);
  }

  /**
   * Stops driving and campaigning; a held lease is released so a standby takes over at once. A throw of the term's
   * end callback is passed on once the elector is closed: an elector left running would renew the Lease until the exit.
   */
  async resign(): Promise<void> {
    const stopping = this.#elector;
    try {
      this.#options.onStoppedLeading('resigned');
    } finally {
      this.#standalone?.abort();
      this.#standalone = undefined;
      this.#elector = undefined;
      await stopping?.close({ release: true });
    }
  }

  #campaign(): void {
    const o = this.#options;
    if (o.closing() || this.#elector !== undefined || this.#standalone !== undefined) return;
    if (!o.elect) {
      this.#standalone = new AbortController();
      void o.onStartedLeading(this.#standalone.signal);
      return;
    }
    this.#elector = new LeaderElector({
      kubeConfig: o.kubeConfig,
      namespace: o.namespace,
      name: o.leaseName,
      identity: o.identity,
      ...(o.leaseDurationMs !== undefined ? { leaseDurationMs: o.leaseDurationMs } : {}),
      ...(o.renewDeadlineMs !== undefined ? { renewDeadlineMs: o.renewDeadlineMs } : {}),
      ...(o.retryPeriodMs !== undefined ? { retryPeriodMs: o.retryPeriodMs } : {}),
      logger: o.kubeLogger,
      onStartedLeading: (signal) => o.onStartedLeading(signal),
      onStoppedLeading: () => o.onStoppedLeading('lost'),
      onNewLeader: (holder) => {
        if (holder !== o.identity) o.logger.info('another replica leads', { leader: holder });
      },
    });
    this.#elector.start();
  }

  #followToken(): void {
    const present = this.#options.token() !== undefined;
    if (present && this.#elector === undefined && this.#standalone === undefined) {
      this.#options.logger.info('fleet token present: campaigning for leadership');
      this.#campaign();
    } else if (!present && (this.#elector !== undefined || this.#standalone !== undefined)) {
      this.#options.logger.error('fleet token gone: stepping down (fail-closed); nothing is pushed until it is back');
      void this.resign();
    }
  }
}
