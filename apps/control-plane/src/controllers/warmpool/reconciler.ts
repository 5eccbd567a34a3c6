// The warm-pool driver: one global, coalesced reconcile over the pool,
// template and inventory caches, on the leader only. Invariants: a run costs
// O(pools + nodes), never per sandbox, and between periodic resyncs only what
// an event touched is recomputed: the inventories the watch named and the
// views that moved (nodes/view-cache.ts), the plans and statuses of the pools
// whose objects changed (PoolPlans, StatusMemo), the spread (spread-memo.ts),
// the summed observations (observed.ts), and the nodes a round looks at
// (push-round.ts); the periodic resync recomputes all of it from the caches;
// every push attempt first asks leadership.holding(), so a paused leader sends
// nothing once it resumes; a 409 never moves the epoch (generation.ts states
// the bound). The run and the fencing: docs/architecture.md, "The warm-pool driver".
import { DONE, WorkQueue, type WorkOutcome } from '@warmpool/kube';
import type { Targets } from '@warmpool/pool-model';
import { FLEET_TOKEN_ENV, systemClock, type Clock } from '@warmpool/runtime';
import { majorityApplied } from '../../generation/generation.js';
import { NodeTracker, type NodeView } from '../../nodes/tracker.js';
import {
  ALWAYS_LEADING,
  type DriverContext,
  type Leadership,
  type Term,
  type WarmPoolReconcilerOptions,
} from './context.js';
import { takeEpoch } from './epoch.js';
import { PushRound } from './push-round.js';
import { ObservedPools } from './observed.js';
import { DRIVER_DEFAULTS, type WarmPoolDriverSettings } from './options.js';
import { demandsOf, PoolPlans } from './plan.js';
import { Laps } from './laps.js';
import { specAnswerTimer } from './metrics.js';
import { handOverStatuses } from './status-handover.js';
import { StatusMemo } from './status.js';
import { PoolStatusQueue } from './status-queue.js';
import { heldTargets, newTerm } from './term.js';
import { notePlacement, noteKeyChanges } from './transitions.js';

export type { Leadership, WarmPoolReconcilerOptions } from './context.js';

/** The work queue's one key: the reconcile reads the whole world from the caches. */
const RUN = 'reconcile';

/** The reason the sampler pokes with every interval: that run recomputes everything (the resync). */
const PERIODIC = 'periodic';

export class WarmPoolReconciler {
  readonly #options: WarmPoolReconcilerOptions;
  readonly #settings: WarmPoolDriverSettings;
  readonly #clock: Clock;
  readonly #tracker: NodeTracker;
  /** One key, the global run: coalesced, never two at once, retried with backoff when it throws. */
  readonly #queue: WorkQueue;
  /** Why the next run runs (for its debug log). */
  #reasons = new Set<string>();
  /** The next run is a full resync even if no periodic sample asked for one. */
  #resyncNext = false;
  /** Nodes an event touched (their inventory, Node or agent pod) since the last run read them. */
  #dirtyNodes = new Set<string>();
  /** The next run reads every inventory (the first of a term, after a failed run, an event naming no node). */
  #allNodes = true;
  /** performance.now() of the first poke the next run answers: how long it waited is a metric. */
  #pokedAt: number | undefined;
  /** performance.now() of the first pool or template change the next run answers (the pool_change_answer metric). */
  #specChangedAt: number | undefined;
  readonly #statuses: PoolStatusQueue;
  readonly #leadership: Leadership;
  #term: Term | undefined;
  #noTokenReported = false;
  /** When the last reconcile finished (or the term began); see stalledMs(). */
  #lastRunEnded: number | undefined;
  #closed = false;
  /** What the run's helpers (epoch, push outcomes, transitions) see of it. */
  readonly #ctx: DriverContext;
  /** Memos of the last runs, dropped by every periodic resync. */
  readonly #round: PushRound;
  #observed = new ObservedPools();
  #plans = new PoolPlans();
  #statusMemo = new StatusMemo();

  constructor(options: WarmPoolReconcilerOptions) {
    this.#options = options;
    this.#settings = {
      intervalMs: options.intervalMs ?? DRIVER_DEFAULTS.intervalMs,
      staleAfterMs: options.staleAfterMs ?? DRIVER_DEFAULTS.staleAfterMs,
      failureThreshold: options.failureThreshold ?? DRIVER_DEFAULTS.failureThreshold,
      agentCallConcurrency: options.agentCallConcurrency ?? DRIVER_DEFAULTS.agentCallConcurrency,
      statusConcurrency: options.statusConcurrency ?? DRIVER_DEFAULTS.statusConcurrency,
    };
    this.#clock = options.clock ?? systemClock;
    this.#leadership = options.leadership ?? ALWAYS_LEADING;
    this.#tracker = new NodeTracker({
      clock: this.#clock,
      staleAfterMs: this.#settings.staleAfterMs,
      failureThreshold: this.#settings.failureThreshold,
      agentObservationTtlMs: 2 * this.#settings.intervalMs,
      highestIssued: () => options.generations.highestIssued,
    });
    this.#ctx = {
      options,
      settings: this.#settings,
      tracker: this.#tracker,
      leadership: this.#leadership,
      isCurrent: (term) => this.#term === term,
      poke: (reason) => this.poke(reason),
    };
    this.#round = new PushRound(this.#ctx);
    this.#queue = new WorkQueue({
      work: () => this.#reconcile(),
      onError: (_key, err) => this.#options.logger.error('reconcile failed', { err }),
    });
    this.#queue.start();
    this.#statuses = new PoolStatusQueue({
      writer: options.statusWriter,
      events: options.events,
      metrics: options.metrics,
      logger: options.logger,
      concurrency: this.#settings.statusConcurrency,
      mayWrite: () => this.#leadership.holding(),
    });
  }

  get settings(): Readonly<WarmPoolDriverSettings> {
    return this.#settings;
  }

  /** True while a leadership term is on. */
  get driving(): boolean {
    return this.#term !== undefined;
  }

  /** Why this replica, while driving, cannot do its job (empty when it can): for /readyz. */
  notReadyReasons(): string[] {
    const exhausted = this.#term?.exhausted;
    return exhausted === undefined ? [] : [`no generation left, nothing can be pushed: ${exhausted}`];
  }

  /** Something changed: reconcile soon (coalesced with every other poke). */
  poke(reason: string): void {
    this.#reasons.add(reason);
    this.#pokedAt ??= performance.now();
    this.#queue.add(RUN);
  }

  /** A pool or template changed: reconcile soon, and time the run that answers it. */
  pokeSpec(reason: string): void {
    this.#specChangedAt ??= performance.now();
    this.poke(reason);
  }

  /** The node's inventory, Node or agent pod changed: the next run reads it again (whether or not it is poked). */
  noteNode(name: string | undefined): void {
    // Kept only while a later run would read just the named: not while no term drives (every replica hears every
    // event; a term's first run reads every inventory, lead()), nor once the next run reads them all anyway.
    if (this.#term === undefined || this.#allNodes) return;
    if (name === undefined || name === '') {
      this.#allNodes = true;
      this.#dirtyNodes.clear();
    } else this.#dirtyNodes.add(name);
  }

  /** Something every run's memos may depend on changed (the status schema): the next run recomputes everything. */
  pokeResync(reason: string): void {
    this.#resyncNext = true;
    this.#reasons.add(reason);
    this.#pokedAt ??= performance.now();
    this.#queue.add(RUN);
  }

  /** Begins a leadership term: takes a generation epoch, then drives. `signal` ends the term. */
  lead(signal: AbortSignal): void {
    if (this.#closed || this.#term !== undefined || signal.aborted) return;
    const inventories = this.#options.inventories.list();
    this.#tracker.sync(inventories, this.#options.addresses());
    this.#dirtyNodes.clear();
    this.#allNodes = true;
    // The first spread of a term starts from what the nodes report holding.
    const term = this.#newTerm(heldTargets(this.#tracker.views()));
    this.#term = term;
    this.#lastRunEnded = this.#clock.now();
    signal.addEventListener(
      'abort',
      () => {
        if (this.#term === term) this.stopLeading();
      },
      { once: true },
    );
    const floor = majorityApplied(inventories.map((inventory) => inventory.status?.appliedGeneration));
    takeEpoch(this.#ctx, term, floor);
    term.sampler.start();
    this.#options.logger.info('driving the warm pools', {
      nodes: this.#tracker.size,
      majorityAppliedGeneration: floor ?? null,
    });
    this.poke('leading');
  }

  #newTerm(held: Targets): Term {
    return newTerm(
      {
        ctx: this.#ctx,
        tracker: this.#tracker,
        statuses: this.#statuses,
        clock: this.#clock,
        poke: (reason) => this.poke(reason),
        periodic: PERIODIC,
      },
      held,
    );
  }

  /**
   * While driving, how long since a reconcile last finished (any outcome) or,
   * before the first, since the term began; undefined while not driving. The
   * periodic sample pokes a run every interval, so on a live loop this stays
   * below about one interval plus one run; liveness fails when it grows past
   * --stall-timeout (a run or a sample that never settles).
   */
  stalledMs(now: number = this.#clock.now()): number | undefined {
    if (this.#term === undefined || this.#lastRunEnded === undefined) return undefined;
    return Math.max(0, now - this.#lastRunEnded);
  }

  /** Ends the term at once: calls in flight are aborted, nothing more is pushed or written. */
  stopLeading(): void {
    const term = this.#term;
    if (term === undefined) return;
    this.#term = undefined;
    term.controller.abort(new Error('leadership ended'));
    term.sampler.stop();
    clearTimeout(term.refresh);
    this.#options.generations.reset();
    this.#options.metrics.forgetPools();
    this.#options.logger.info('stopped driving the warm pools');
  }

  /** Whether the node is in placement (known, fresh, answering, not draining). */
  inPlacement(name: string): boolean {
    return this.#tracker.view(name)?.eligible === true;
  }

  /**
   * Whether the node's published targets reach a run: not while a fresher
   * answer of its agent (a push or a probe) stands in for its inventory.
   */
  readsInventoryOf(name: string): boolean {
    return this.#tracker.readsInventory(name);
  }

  /** Whether a node reporting `generation` as applied reports one no leader issued (it would leave placement). */
  unissued(generation: number | undefined): boolean {
    const issued = this.#options.generations.highestIssued;
    return generation !== undefined && issued !== undefined && generation > issued;
  }

  /** Every node as the driver sees it now. */
  nodes(): NodeView[] {
    return [...this.#tracker.views()];
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.stopLeading();
    await this.#queue.stop();
  }

  async #reconcile(): Promise<WorkOutcome> {
    const reasons = this.#reasons;
    this.#reasons = new Set();
    const waited = this.#pokedAt === undefined ? 0 : performance.now() - this.#pokedAt;
    this.#pokedAt = undefined;
    const specChangedAt = this.#specChangedAt;
    this.#specChangedAt = undefined;
    try {
      await this.#reconcileOnce(reasons, waited, specChangedAt);
      return DONE;
    } finally {
      this.#lastRunEnded = this.#clock.now();
    }
  }

  /** `waitedMs`: from the first poke it answers to its start (behind a run in flight, or a busy event loop). */
  async #reconcileOnce(
    reasons: ReadonlySet<string>,
    waitedMs: number,
    specChangedAt: number | undefined,
  ): Promise<void> {
    const term = this.#term;
    if (term === undefined || term.signal.aborted) {
      this.#options.metrics.reconciled(0, 'skipped', this.#clock.now());
      return;
    }
    if (this.#options.token() === undefined) {
      // Fail-closed: without the fleet token nothing is pushed, probed or written.
      if (!this.#noTokenReported) {
        this.#options.logger.error(
          `no fleet token: pushing nothing to any node (fail-closed); set --token-file or ${FLEET_TOKEN_ENV}`,
        );
        this.#noTokenReported = true;
      }
      this.#options.metrics.reconciled(0, 'skipped', this.#clock.now());
      return;
    }
    this.#noTokenReported = false;
    // Taken only by a run that proceeds: a resync asked for while none could (no term, no token) is the next one's.
    const resync = this.#resyncNext || reasons.has(PERIODIC);
    this.#resyncNext = false;
    this.#options.metrics.reconcileWaited(waitedMs / 1000);
    const started = performance.now();
    const answered = specAnswerTimer(this.#options.metrics, specChangedAt);
    answered('run_start', started);
    try {
      const phases = await this.#run(term, resync);
      const ended = performance.now();
      answered('handed_out', phases.handedOutAt);
      answered('run_end', ended);
      this.#options.metrics.reconciled((ended - started) / 1000, 'ok', this.#clock.now());
      this.#options.logger.debug('reconciled', {
        reasons: [...reasons],
        ms: Math.round(performance.now() - started),
        waitedMs: Math.round(waitedMs),
        phasesMs: phases.laps(),
      });
    } catch (err) {
      this.#options.metrics.reconciled((performance.now() - started) / 1000, 'error', this.#clock.now());
      // What this run read of the nodes may not have reached its memos: the retry reads them all (and resyncs, if
      // this run was to).
      this.#allNodes = true;
      if (resync) this.#resyncNext = true;
      throw err;
    }
  }

  /**
   * One run, in one turn of the event loop: the round's requests leave when it ends. (Yielding to send them while the
   * round was handed out stretched each run over the answers of 1 000 nodes and slowed the fleet: docs/benchmarks.md,
   * "Issue 21, the last round".) Runs never overlap (the work queue); a change meanwhile runs it once more.
   */
  async #run(term: Term, resync: boolean): Promise<Laps & { handedOutAt: number | undefined }> {
    const now = this.#clock.now();
    const options = this.#options;
    const laps = new Laps();
    if (resync) this.#resync(term);
    for (const gone of this.#syncNodes(resync)) {
      term.pushers.forget(gone.name);
      term.placement.delete(gone.name);
      if (gone.address !== '') options.setter.forget?.(gone.address);
      options.metrics.forgetNode(gone.name);
      options.logger.info('node gone (its NodeInventory was deleted)', { node: gone.name });
    }
    for (const address of this.#tracker.takeRetiredAddresses()) options.setter.forget?.(address);
    const views = this.#tracker.views();
    const changed = this.#tracker.takeChangedViews();
    laps.lap('nodes');
    const plans = this.#plans.plans(options.pools.list(), (namespace, name) => options.templates.get(namespace, name));
    const demands = demandsOf(plans);
    laps.lap('plan');
    const result = term.spread.run(
      [...demands].map(([id, demand]) => ({ id, replicas: demand.replicas })),
      views.map((view) => ({ name: view.name, room: view.room, eligible: view.eligible })),
    );
    laps.lap('spread');
    notePlacement(this.#ctx, term, views);
    noteKeyChanges(this.#ctx, term, plans);
    const handedOutAt = this.#round.handOut(term, views, result, demands, resync ? undefined : changed);
    laps.lap('push');
    handOverStatuses(term, { observed: this.#observed, statuses: this.#statusMemo }, options.metrics, {
      plans,
      views,
      result,
      now,
      full: resync,
    });
    laps.lap('status');
    return Object.assign(laps, { handedOutAt });
  }

  /**
   * The periodic resync: the spread runs in full, the desired sets and the summed observations are rebuilt from the
   * caches, so nothing an event missed outlives an interval.
   */
  #resync(term: Term): void {
    term.spread.resync();
    this.#round.resync();
    this.#observed = new ObservedPools();
    this.#plans = new PoolPlans();
    this.#statusMemo = new StatusMemo();
  }

  /** Reads the inventories an event touched (all of them on a resync); returns the nodes that went. */
  #syncNodes(resync: boolean): Array<{ name: string; address: string }> {
    const options = this.#options;
    const dirty = this.#dirtyNodes;
    this.#dirtyNodes = new Set();
    if (resync || this.#allNodes) {
      this.#allNodes = false;
      return this.#tracker.sync(options.inventories.list(), options.addresses());
    }
    return this.#tracker.syncSome(dirty, (name) => options.inventories.get(name), options.addresses);
  }
}
