// A run's round of pushes: each node whose desired set is not already on its
// way or acknowledged gets it, all with one generation. Between resyncs a run
// looks only at the nodes something moved for since the last: their view
// (an inventory, an answer, a failure, time), their spread targets, or their
// push lane (a push settled). Every other node was looked at by an earlier run
// with the same view, targets and lane, which decided the same. A round that
// stopped early (leadership in doubt, no generation left) looks at every node
// the next time.
import type { Spread } from '@warmpool/pool-model';
import type { NodeView } from '../../nodes/tracker.js';
import type { DriverContext, Term } from './context.js';
import { DesiredSets } from './desired.js';
import { takeEpoch } from './epoch.js';
import type { KeyDemand } from './plan.js';

export class PushRound {
  readonly #ctx: DriverContext;
  #desired = new DesiredSets();
  #everyNode = true;

  constructor(ctx: DriverContext) {
    this.#ctx = ctx;
  }

  /** The periodic resync: every set is built again and every node looked at. */
  resync(): void {
    this.#desired = new DesiredSets();
    this.#everyNode = true;
  }

  /**
   * Hands each node whose desired set changed to its push lane (one generation for the round). `changed`: the nodes
   * whose view changed since the last round (undefined: any may have). Returns performance.now() of the moment the
   * round took its generation, or undefined when nothing was handed out.
   */
  handOut(
    term: Term,
    views: readonly NodeView[],
    result: Spread,
    demands: ReadonlyMap<string, KeyDemand>,
    changed: ReadonlySet<string> | undefined,
  ): number | undefined {
    const settingsMoved = this.#desired.begin(demands);
    const settled = term.pushers.takeSettled();
    const touched = term.spread.touched;
    const every = this.#everyNode || settingsMoved || changed === undefined || touched === undefined;
    this.#everyNode = false;
    if (every) this.#desired.prune(result.targets.keys());
    let generation: number | undefined;
    let handedOutAt: number | undefined;
    for (const view of every ? views : this.#candidates(views, [changed, touched, settled])) {
      if (!view.eligible || term.signal.aborted) continue;
      const desired = this.#desired.of(view.name, result.targets.get(view.name), demands);
      if (!this.#needsPush(term, view.name, desired.sig)) continue;
      if (generation === undefined) {
        generation = this.#generation(term);
        if (generation === undefined) {
          this.#everyNode = true;
          return undefined;
        }
        handedOutAt = performance.now();
      }
      term.pushers.submit({ name: view.name, address: view.address }, desired, generation);
    }
    return handedOutAt;
  }

  /** The round's generation, or undefined when nothing may be pushed now. */
  #generation(term: Term): number | undefined {
    const { leadership, options } = this.#ctx;
    // A paused leader resuming must not push before its renew loop has noticed it lost the Lease.
    if (!leadership.holding()) return undefined;
    // One generation per round: every node pushed in this round gets the same, higher than any before.
    const generation = options.generations.next();
    if (generation === undefined) {
      takeEpoch(this.#ctx, term);
      return undefined;
    }
    options.metrics.generation(generation);
    return generation;
  }

  /** The views of the named nodes, in name order. */
  #candidates(views: readonly NodeView[], sets: ReadonlyArray<ReadonlySet<string>>): readonly NodeView[] {
    const names = new Set<string>();
    for (const set of sets) for (const name of set) names.add(name);
    if (names.size * 8 > views.length) return views.filter((view) => names.has(view.name));
    const picked: NodeView[] = [];
    for (const name of [...names].sort()) {
      const view = this.#ctx.tracker.lastView(name);
      if (view !== undefined) picked.push(view);
    }
    return picked;
  }

  #needsPush(term: Term, name: string, sig: string): boolean {
    const onTheWay = term.pushers.onTheWay(name);
    if (onTheWay !== undefined) return onTheWay !== sig;
    const acked = term.pushers.acknowledged(name);
    if (acked === undefined || acked.sig !== sig) return true;
    // Acknowledged; only the node's own later word that its targets changed (its sandboxd restarted) brings it back.
    const seen = this.#ctx.tracker.agentObservation(name);
    return seen !== undefined && seen.at > acked.at && seen.reported !== acked.reported;
  }
}
