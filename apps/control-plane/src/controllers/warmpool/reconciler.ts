// The warm-pool driver: one global, coalesced reconcile over the pool,
// template and inventory caches, on the leader only. Invariants: a run costs
// O(pools + nodes), never per sandbox; every push attempt first asks
// leadership.holding(), so a paused leader sends nothing once it resumes; a
// 409 never moves the epoch (generation.ts states the bound). The run, step
// by step, and the fencing: docs/architecture.md, "The warm-pool driver".
import {
  NodeInventoryType,
  poolKeyId,
  SandboxWarmPoolType,
  type NodeInventory,
  type SandboxTemplate,
  type SandboxWarmPool,
} from '@warmpool/api';
import { Backoff, DONE, sleep, WorkQueue, type Lister, type WorkOutcome } from '@warmpool/kube';
import { observePools, spread, type Spread, type Targets } from '@warmpool/pool-model';
import type { Logger } from '@warmpool/runtime';
import { FLEET_TOKEN_ENV, formatDuration, systemClock, type Clock } from '@warmpool/runtime';
import { NoTokenError, NotLeadingError, StaleGenerationError } from '../../agents/errors.js';
import type { PoolSetter } from '../../agents/pool-setter.js';
import { GenerationExhaustedError, majorityApplied, type GenerationSource } from '../../generation/generation.js';
import { NODE_STATES, type WarmPoolMetrics, type NodeStateLabel, type PoolState } from './metrics.js';
import type { TokenSource } from '../../token.js';
import { desiredSetOf, type DesiredSet } from './desired.js';
import type { EventRecorder } from './events.js';
import type { AddressCheck } from '../../nodes/addresses.js';
import { nodeStateOf, NodeTracker, type Exclusion, type NodeView } from '../../nodes/tracker.js';
import { DRIVER_DEFAULTS, type WarmPoolDriverSettings } from './options.js';
import { demandsOf, planPools, type KeyDemand, type PoolPlan } from './plan.js';
import { Pushers, type PushJob, type PushOutcome } from './pushers.js';
import { ProbeSampler } from './sampler.js';
import { PoolStatusQueue, type StatusLane } from './status-queue.js';
import type { PoolStatusWriter } from './status-writer.js';
import { statusesOf } from './status.js';

/** While pushes are still settling, status catches up with the answers at most this late. */
const PUSHED_REFRESH_MS = 1_000;

/** The election as the driver sees it; without one (a single replica by construction) it always leads. */
export interface Leadership {
  /** Cheap, local: still within the renew deadline of the last successful renewal. */
  holding(): boolean;
  /** Re-reads the Lease; false (and leadership ended) when another replica holds it. */
  confirm(signal: AbortSignal): Promise<boolean>;
}

const ALWAYS_LEADING: Leadership = { holding: () => true, confirm: () => Promise.resolve(true) };

/** The work queue's one key: the reconcile reads the whole world from the caches. */
const RUN = 'reconcile';

/** Retrying after the generations ran out: slow, since only a human fixes that. */
const EXHAUSTED_RETRY = { initialMs: 5_000, maxMs: 60_000 };

export interface WarmPoolReconcilerOptions extends Partial<WarmPoolDriverSettings> {
  pools: Lister<SandboxWarmPool>;
  templates: Lister<SandboxTemplate>;
  inventories: Lister<NodeInventory>;
  /** Which addresses each node vouches for, as of now (node-addresses.ts): an agent is called only at one of them. */
  addresses: () => AddressCheck;
  setter: PoolSetter;
  statusWriter: PoolStatusWriter;
  events: EventRecorder;
  generations: GenerationSource;
  token: TokenSource;
  metrics: WarmPoolMetrics;
  logger: Logger;
  clock?: Clock;
  leadership?: Leadership;
}

/** A leadership term: everything that must stop the moment leadership does. */
interface Term {
  readonly controller: AbortController;
  readonly signal: AbortSignal;
  readonly pushers: Pushers;
  /** The last spread, so the next one keeps what it can where room is short. */
  previous: Targets | undefined;
  /** The last placement decision per node (undefined = in placement). */
  readonly placement: Map<string, Exclusion | undefined>;
  /** Pool uid → the key it was driven under, to tell template key changes. */
  readonly keys: Map<string, string>;
  readonly sampler: ProbeSampler;
  /** Where the runs' would-be statuses go; it writes them while the term lasts. */
  readonly status: StatusLane;
  /** Answers arrived that no run has seen yet. */
  unseenAnswers: boolean;
  /** A 'pushed' run promised while a long round of pushes is still settling. */
  refresh: NodeJS.Timeout | undefined;
  advancing: Promise<void> | undefined;
  /** Why no generation can be taken (GenerationExhaustedError), while that lasts. */
  exhausted: string | undefined;
  /** A leadership re-check after a 409, while it runs. */
  confirming: Promise<void> | undefined;
}

export class WarmPoolReconciler {
  readonly #options: WarmPoolReconcilerOptions;
  readonly #settings: WarmPoolDriverSettings;
  readonly #clock: Clock;
  readonly #tracker: NodeTracker;
  /** One key, the global run: coalesced, never two at once, retried with backoff when it throws. */
  readonly #queue: WorkQueue;
  /** Why the next run runs (for its debug log). */
  #reasons = new Set<string>();
  readonly #statuses: PoolStatusQueue;
  readonly #leadership: Leadership;
  #term: Term | undefined;
  #noTokenReported = false;
  /** When the last reconcile finished (or the term began); see stalledMs(). */
  #lastRunEnded: number | undefined;
  #closed = false;

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
    this.#queue.add(RUN);
  }

  /** Begins a leadership term: takes a generation epoch, then drives. `signal` ends the term. */
  lead(signal: AbortSignal): void {
    if (this.#closed || this.#term !== undefined || signal.aborted) return;
    const controller = new AbortController();
    const pushers = new Pushers({
      setter: this.#options.setter,
      concurrency: this.#settings.agentCallConcurrency,
      signal: controller.signal,
      now: () => this.#clock.now(),
      mayPush: () => this.#leadership.holding(),
      onSettled: (job, outcome, seconds) => this.#onPushSettled(controller.signal, job, outcome, seconds),
      onIdle: () => this.#onPushesSettled(controller.signal),
    });
    const sampler = new ProbeSampler({
      setter: this.#options.setter,
      tracker: this.#tracker,
      token: this.#options.token,
      metrics: this.#options.metrics,
      logger: this.#options.logger,
      intervalMs: this.#settings.intervalMs,
      concurrency: this.#settings.agentCallConcurrency,
      signal: controller.signal,
      pushing: (name) => pushers.busy(name),
      onSkipped: () => this.poke('periodic'),
      onSampled: () => {
        if (this.#term === term) this.poke('periodic');
      },
    });
    const term: Term = {
      controller,
      signal: controller.signal,
      pushers,
      previous: undefined,
      placement: new Map(),
      keys: new Map(),
      sampler,
      status: this.#statuses.lane(controller.signal),
      unseenAnswers: false,
      refresh: undefined,
      advancing: undefined,
      exhausted: undefined,
      confirming: undefined,
    };
    this.#term = term;
    this.#lastRunEnded = this.#clock.now();
    signal.addEventListener(
      'abort',
      () => {
        if (this.#term === term) this.stopLeading();
      },
      { once: true },
    );

    const inventories = this.#options.inventories.list();
    this.#tracker.sync(inventories, this.#options.addresses());
    term.previous = heldTargets(this.#tracker.views());
    const floor = majorityApplied(inventories.map((inventory) => inventory.status?.appliedGeneration));
    this.#advance(term, floor);
    term.sampler.start();
    this.#options.logger.info('driving the warm pools', {
      nodes: this.#tracker.size,
      majorityAppliedGeneration: floor ?? null,
    });
    this.poke('leading');
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
    return this.#tracker.views();
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.stopLeading();
    await this.#queue.stop();
  }

  async #reconcile(): Promise<WorkOutcome> {
    const reasons = this.#reasons;
    this.#reasons = new Set();
    try {
      await this.#reconcileOnce(reasons);
      return DONE;
    } finally {
      this.#lastRunEnded = this.#clock.now();
    }
  }

  async #reconcileOnce(reasons: ReadonlySet<string>): Promise<void> {
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
    const started = performance.now();
    try {
      await this.#run(term);
      this.#options.metrics.reconciled((performance.now() - started) / 1000, 'ok', this.#clock.now());
      this.#options.logger.debug('reconciled', { reasons: [...reasons], ms: Math.round(performance.now() - started) });
    } catch (err) {
      this.#options.metrics.reconciled((performance.now() - started) / 1000, 'error', this.#clock.now());
      throw err;
    }
  }

  async #run(term: Term): Promise<void> {
    const now = this.#clock.now();
    for (const gone of this.#tracker.sync(this.#options.inventories.list(), this.#options.addresses())) {
      term.pushers.forget(gone.name);
      term.placement.delete(gone.name);
      if (gone.address !== '') this.#options.setter.forget?.(gone.address);
      this.#options.metrics.forgetNode(gone.name);
      this.#options.logger.info('node gone (its NodeInventory was deleted)', { node: gone.name });
    }
    for (const address of this.#tracker.takeRetiredAddresses()) this.#options.setter.forget?.(address);
    const views = this.#tracker.views();
    const plans = planPools(this.#options.pools.list(), (namespace, name) =>
      this.#options.templates.get(namespace, name),
    );
    const demands = demandsOf(plans);
    const result = spread(
      [...demands].map(([id, demand]) => ({ id, replicas: demand.replicas })),
      views.map((view) => ({ name: view.name, room: view.room, eligible: view.eligible })),
      term.previous,
    );
    term.previous = result.targets;
    this.#notePlacement(term, views);
    this.#noteKeyChanges(term, plans);
    this.#push(term, views, result, demands);
    this.#handOverStatuses(term, plans, views, result, now);
  }

  #push(term: Term, views: readonly NodeView[], result: Spread, demands: ReadonlyMap<string, KeyDemand>): void {
    let generation: number | undefined;
    for (const view of views) {
      if (!view.eligible || term.signal.aborted) continue;
      const desired = desiredSetOf(result.targets.get(view.name), demands);
      if (!this.#needsPush(term, view.name, desired)) continue;
      if (generation === undefined) {
        // A paused leader resuming must not push before its renew loop has noticed it lost the Lease.
        if (!this.#leadership.holding()) return;
        // One generation per round: every node pushed in this round gets the same, higher than any before.
        generation = this.#options.generations.next();
        if (generation === undefined) {
          this.#advance(term);
          return;
        }
        this.#options.metrics.generation(generation);
      }
      term.pushers.submit({ name: view.name, address: view.address }, desired, generation);
    }
  }

  #needsPush(term: Term, name: string, desired: DesiredSet): boolean {
    const onTheWay = term.pushers.onTheWay(name);
    if (onTheWay !== undefined) return onTheWay !== desired.sig;
    const acked = term.pushers.acknowledged(name);
    if (acked === undefined || acked.sig !== desired.sig) return true;
    // Acknowledged; only the node's own later word that its targets changed (its sandboxd restarted) brings it back.
    const seen = this.#tracker.agentObservation(name);
    return seen !== undefined && seen.at > acked.at && seen.reported !== acked.reported;
  }

  #onPushSettled(termSignal: AbortSignal, job: PushJob, outcome: PushOutcome, seconds: number): void {
    const term = this.#term;
    // A push of an ended term has nothing to say to the current one.
    if (term === undefined || term.signal !== termSignal) return;
    const { logger, metrics } = this.#options;
    const node = job.node.name;
    if (outcome.kind === 'applied') {
      this.#tracker.recordAnswer(node, outcome.info);
      metrics.setPools(node, 'applied', seconds);
      logger.debug('pools set', { node, generation: job.generation, pools: job.desired.pools.length });
      // The answers change only what status reports (the nodes' targets), so one run when the round
      // has settled covers them all, instead of a full reconcile per answer competing with the pushes
      // for the event loop for the whole fan-out (docs/benchmarks.md, design notes).
      // A long round (slow or retried nodes) still refreshes status every PUSHED_REFRESH_MS.
      term.unseenAnswers = true;
      term.refresh ??= setTimeout(() => {
        term.refresh = undefined;
        term.unseenAnswers = false;
        if (this.#term === term) this.poke('pushed');
      }, PUSHED_REFRESH_MS);
      return;
    }
    const err = outcome.error;
    if (err instanceof NoTokenError) {
      this.poke('no-token');
      return;
    }
    // Past the renew deadline: nothing was sent, and the elector ends the term.
    if (err instanceof NotLeadingError) return;
    if (err instanceof StaleGenerationError) {
      metrics.setPools(node, 'stale_generation', seconds);
      const issued = this.#options.generations.highestIssued;
      if (issued !== undefined && err.appliedGeneration <= issued) {
        // Our own later push reached the node first; its answer covers this one.
        logger.debug('node had already applied a later push of ours', {
          node,
          generation: job.generation,
          appliedGeneration: err.appliedGeneration,
        });
        return;
      }
      this.#tracker.recordRefusal(node, err.appliedGeneration);
      logger.warn('node refused our generation with one we never issued: re-checking leadership', {
        node,
        generation: job.generation,
        appliedGeneration: err.appliedGeneration,
        highestIssued: issued ?? null,
      });
      this.#confirm(term);
      return;
    }
    metrics.setPools(node, 'error', seconds);
    const crossed = this.#tracker.recordFailure(node, err);
    const view = this.#tracker.view(node);
    logger.warn('SetPools failed', {
      node,
      address: job.node.address,
      generation: job.generation,
      failures: view?.failures,
      err,
    });
    if (crossed) this.poke('node-failing');
  }

  /** The round has settled: one run for its answers. Failures poke on their own (see above), not here. */
  #onPushesSettled(termSignal: AbortSignal): void {
    const term = this.#term;
    if (term === undefined || term.signal !== termSignal || !term.unseenAnswers) return;
    clearTimeout(term.refresh);
    term.refresh = undefined;
    term.unseenAnswers = false;
    this.poke('pushed');
  }

  /**
   * A node claims a generation we never issued: either a later leader pushed
   * it (we are deposed: the re-check ends our term) or it is forged (the node
   * leaves placement through the bound in nodes.ts, at the run this pokes).
   */
  #confirm(term: Term): void {
    if (term.confirming !== undefined) return;
    term.confirming = (async () => {
      const leading = await this.#leadership.confirm(term.signal);
      if (!leading && !term.signal.aborted) this.#options.logger.warn('another replica leads: stopping');
    })()
      .catch((err: unknown) => {
        if (!term.signal.aborted) this.#options.logger.warn('cannot re-check leadership', { err });
      })
      .finally(() => {
        term.confirming = undefined;
        if (this.#term === term) this.poke('stale-generation');
      });
  }

  /**
   * Takes a new generation epoch in the background (retrying while the
   * apiserver is away), then reconciles. While one is being taken, runs push
   * nothing and do not ask again, so an exhausted source is retried on the
   * backoff, never by a run loop.
   */
  #advance(term: Term, atLeastAbove?: number): void {
    if (term.advancing !== undefined) return;
    term.advancing = (async () => {
      const backoff = new Backoff({ initialMs: 200, maxMs: 5_000 });
      const exhaustedBackoff = new Backoff(EXHAUSTED_RETRY);
      while (!term.signal.aborted) {
        try {
          const epoch = await this.#options.generations.advance(atLeastAbove, term.signal);
          if (!term.signal.aborted) this.#options.logger.info('took a generation epoch', { epoch });
          if (term.exhausted !== undefined) this.#options.logger.info('generations available again');
          term.exhausted = undefined;
          return;
        } catch (err) {
          if (term.signal.aborted) return;
          const exhausted = err instanceof GenerationExhaustedError;
          const delay = exhausted ? exhaustedBackoff.next() : backoff.next();
          if (exhausted) {
            term.exhausted = err.message;
            this.#options.logger.error(
              'no generation left: nothing can be pushed, reporting not ready; see the README (generations)',
              { err, retryInMs: Math.round(delay) },
            );
          } else {
            this.#options.logger.warn('cannot take a generation epoch; retrying', {
              err,
              retryInMs: Math.round(delay),
            });
          }
          await sleep(delay, term.signal);
        }
      }
    })().finally(() => {
      term.advancing = undefined;
      if (this.#term === term) this.poke('epoch');
    });
  }

  #notePlacement(term: Term, views: readonly NodeView[]): void {
    const counts = Object.fromEntries(NODE_STATES.map((state) => [state, 0])) as Record<NodeStateLabel, number>;
    for (const view of views) {
      counts[nodeStateOf(view)]++;
      const known = term.placement.has(view.name);
      // An inventory whose agent has not written its status yet (created a moment before its first publish) says
      // nothing about the node: no verdict until it does, so its first publish is "in placement", not "back".
      if (!known && view.exclusion === 'stale' && view.observation === undefined) continue;
      const before = term.placement.get(view.name);
      term.placement.set(view.name, view.exclusion);
      if (known && before === view.exclusion) continue;
      const fields = { node: view.name, address: view.address };
      if (view.exclusion === undefined) {
        this.#options.logger.info(known ? 'node back in placement' : 'node in placement', fields);
        if (known)
          this.#nodeEvent(
            view.name,
            'Normal',
            'NodeInPlacement',
            `node ${view.name} is healthy again and takes its share of the warm pools`,
          );
        continue;
      }
      const why = this.#exclusionMessage(view);
      this.#options.logger.warn('node out of placement', { ...fields, reason: view.exclusion, why });
      if (view.exclusion === 'unverified-address') {
        // A push still queued for it (to an address vouched for when queued, no longer) is not sent.
        term.pushers.forget(view.name);
        // Also for a node never placed: an inventory pointing elsewhere is worth a look (a forged one, or a
        // misconfigured agent).
        this.#nodeEvent(
          view.name,
          'Warning',
          'AddressNotOfNode',
          `${why}; warmpool does not call this agent until its address is one of its node's`,
        );
      } else if (
        ((known && before === undefined) || view.exclusion === 'impossible-generation') &&
        this.#leadership.holding()
      ) {
        // A forged generation gets its Event even at a term's first look: it needs a human. A leader past its
        // renew deadline may be seeing its successor's generations, so it accuses no node.
        this.#nodeEvent(
          view.name,
          'Warning',
          'NodeLeftPlacement',
          `${why}; its share of the warm pools moves to other nodes`,
        );
      }
    }
    this.#options.metrics.nodes(counts);
  }

  #exclusionMessage(view: NodeView): string {
    switch (view.exclusion) {
      case 'stale':
        return `NodeInventory ${view.name} has not been republished for over ${formatDuration(this.#settings.staleAfterMs)}`;
      case 'failing':
        return `the agent of ${view.name} at ${view.address} failed ${view.failures} calls in a row (${view.lastError ?? 'unknown error'})`;
      case 'draining':
        return `node ${view.name} is draining`;
      case 'no-address':
        return `NodeInventory ${view.name} has no usable spec.address (${JSON.stringify(view.address)})`;
      case 'impossible-generation':
        return [
          `node ${view.name} reports applied generation ${view.appliedGeneration},`,
          `above any generation a leader has issued (${this.#options.generations.highestIssued}):`,
          'forged or corrupted, so its agent would refuse every push;',
          'to recover it (control-plane README, "A node with an impossible generation"):',
          `\`kubectl annotate nodeinventory ${view.name}`,
          `warmpool.dev/reset-applied-generation=${view.appliedGeneration} --overwrite\`, then restart the node agent`,
          `on ${view.name}`,
        ].join(' ');
      case 'unverified-address':
        return `NodeInventory ${view.name} points at ${view.address}, which is not its node's: ${view.addressProblem ?? 'unknown'}`;
      case undefined:
        return '';
    }
  }

  #nodeEvent(name: string, type: 'Normal' | 'Warning', reason: string, message: string): void {
    const inventory = this.#options.inventories.get(name);
    if (inventory === undefined) return;
    this.#options.events.record(inventory, NodeInventoryType, type, reason, message);
    this.#options.metrics.event(reason);
  }

  #noteKeyChanges(term: Term, plans: readonly PoolPlan[]): void {
    const seen = new Set<string>();
    for (const plan of plans) {
      if (plan.kind !== 'driven') continue;
      const uid = plan.pool.metadata?.uid ?? plan.ref;
      seen.add(uid);
      const before = term.keys.get(uid);
      term.keys.set(uid, plan.keyId);
      if (before === undefined || before === plan.keyId) continue;
      const message = `pool key changed from ${before} to ${plan.keyId}: the new key fills, the old one drains on every node`;
      this.#options.logger.info('pool moved to a new key', { pool: plan.ref, from: before, to: plan.keyId });
      this.#options.events.record(plan.pool, SandboxWarmPoolType, 'Normal', 'PoolKeyChanged', message);
      this.#options.metrics.event('PoolKeyChanged');
    }
    for (const uid of term.keys.keys()) if (!seen.has(uid)) term.keys.delete(uid);
  }

  /**
   * The run's would-be statuses go to the term's status lane, which writes
   * them behind the run's back (status-queue.ts); only the latest batch is
   * kept, compared with what is current when the lane gets to it.
   */
  #handOverStatuses(
    term: Term,
    plans: readonly PoolPlan[],
    views: readonly NodeView[],
    result: Spread,
    now: number,
  ): void {
    const { metrics } = this.#options;
    const counting = views.filter((v) => v.eligible && v.observation !== undefined);
    const observed = observePools(counting.map((v) => v.observation));
    const statuses = statusesOf({
      plans,
      observed,
      placed: result.placed,
      unplaced: result.unplaced,
      eligibleNodes: views.filter((v) => v.eligible).length,
    });

    const poolCounts: Record<PoolState, number> = { driven: 0, template_missing: 0, invalid_template: 0 };
    let degraded = 0;
    for (const { plan, unplaced } of statuses.values()) {
      poolCounts[
        plan.kind === 'driven' ? 'driven' : plan.kind === 'template-missing' ? 'template_missing' : 'invalid_template'
      ]++;
      if (plan.kind === 'driven' && unplaced > 0) degraded++;
    }
    let unplacedTotal = 0;
    for (const count of result.unplaced.values()) unplacedTotal += count;
    metrics.pools(poolCounts);
    metrics.placement(unplacedTotal, degraded);
    metrics.poolReplicas(
      [...statuses.values()].map(({ plan, status }) => ({
        ref: plan.ref,
        ready: status.readyReplicas ?? 0,
        desired: plan.kind === 'driven' ? plan.replicas : 0,
      })),
    );

    term.status.submit({ statuses: [...statuses.values()], now });
  }
}

/** node → pool key id → target, from what the nodes report: where the first spread of a term starts from. */
function heldTargets(views: readonly NodeView[]): Targets {
  const targets = new Map<string, Map<string, number>>();
  for (const view of views) {
    const held = new Map<string, number>();
    for (const pool of view.observation?.pools ?? []) if (pool.target > 0) held.set(poolKeyId(pool), pool.target);
    targets.set(view.name, held);
  }
  return targets;
}
