// One push lane per node: the latest desired set wins, pushes to one node
// never overlap (so they reach it in generation order), and lanes share a
// global concurrency limit. The reconcile hands sets over and moves on; a slow
// or dead node never holds up the others or the next reconcile.
import type { NodeInfo } from '@warmpool/api';
import type { AgentNode, PoolSetter } from '../../agents/pool-setter.js';
import type { DesiredSet } from './desired.js';
import { Limiter } from './limiter.js';
import { observationOf } from '../../nodes/tracker.js';

export interface Acknowledged {
  sig: string;
  generation: number;
  /** Clock ms of the answer. */
  at: number;
  /** reportedSig() of the targets the node answered with. */
  reported: string;
}

export type PushOutcome = { kind: 'applied'; info: NodeInfo } | { kind: 'failed'; error: unknown };

interface Job {
  node: AgentNode;
  desired: DesiredSet;
  generation: number;
}

interface Lane {
  pending: Job | undefined;
  inflight: Job | undefined;
  acked: Acknowledged | undefined;
  /** The node went while a push was in flight: drop the lane when it settles. */
  gone: boolean;
}

export interface PushersOptions {
  setter: PoolSetter;
  concurrency: number;
  /** Aborts every call in flight and drops what is pending: the leadership term that owns these lanes ended. */
  signal: AbortSignal;
  now(): number;
  /** Asked right before every attempt of every push (a leader past its renew deadline sends nothing). */
  mayPush?(): boolean;
  /** Called once per push that ran, after its lane state is updated. */
  onSettled(job: Job, outcome: PushOutcome, seconds: number): void;
  /** Called when the last busy lane drains: every push handed over so far has settled. */
  onIdle?(): void;
}

export class Pushers {
  readonly #options: PushersOptions;
  readonly #limiter: Limiter;
  readonly #lanes = new Map<string, Lane>();
  /** Lanes with a push queued or in flight (their drain loop is running). */
  #busyLanes = 0;
  /** Nodes whose push settled (any outcome) since the last takeSettled(): what decides their next push moved. */
  #settled = new Set<string>();

  constructor(options: PushersOptions) {
    this.#options = options;
    this.#limiter = new Limiter(options.concurrency);
  }

  /** Queues `desired` for the node, replacing whatever was queued and not yet sent. */
  submit(node: AgentNode, desired: DesiredSet, generation: number): void {
    if (this.#options.signal.aborted) return;
    const lane = this.#lane(node.name);
    lane.gone = false;
    lane.pending = { node, desired, generation };
    if (lane.inflight === undefined) this.#start(lane);
  }

  /** The signature of the set on its way to the node (queued or in flight), if any. */
  onTheWay(name: string): string | undefined {
    const lane = this.#lanes.get(name);
    return (lane?.pending ?? lane?.inflight)?.desired.sig;
  }

  busy(name: string): boolean {
    const lane = this.#lanes.get(name);
    return lane?.pending !== undefined || lane?.inflight !== undefined;
  }

  /** The nodes whose push settled since the last call. */
  takeSettled(): ReadonlySet<string> {
    const settled = this.#settled;
    this.#settled = new Set();
    return settled;
  }

  acknowledged(name: string): Acknowledged | undefined {
    return this.#lanes.get(name)?.acked;
  }

  forget(name: string): void {
    const lane = this.#lanes.get(name);
    if (lane === undefined) return;
    lane.pending = undefined;
    lane.acked = undefined;
    if (lane.inflight === undefined) this.#lanes.delete(name);
    else lane.gone = true;
  }

  #lane(name: string): Lane {
    let lane = this.#lanes.get(name);
    if (lane === undefined) {
      lane = { pending: undefined, inflight: undefined, acked: undefined, gone: false };
      this.#lanes.set(name, lane);
    }
    return lane;
  }

  #start(lane: Lane): void {
    this.#busyLanes++;
    void this.#drain(lane).finally(() => {
      if (--this.#busyLanes === 0 && !this.#options.signal.aborted) this.#options.onIdle?.();
    });
  }

  async #drain(lane: Lane): Promise<void> {
    const { setter, signal, now, onSettled, mayPush } = this.#options;
    while (lane.pending !== undefined && !signal.aborted) {
      const job = lane.pending;
      lane.pending = undefined;
      lane.inflight = job;
      const started = performance.now();
      let outcome: PushOutcome;
      try {
        const info = await this.#limiter.run(() => {
          // A newer set may have arrived while this one waited for a slot: send that instead.
          const latest = lane.pending ?? job;
          if (latest !== job) {
            lane.pending = undefined;
            lane.inflight = latest;
          }
          if (signal.aborted) throw signal.reason;
          return setter.setPools(latest.node, latest.generation, latest.desired.pools, {
            signal,
            ...(mayPush ? { proceed: mayPush } : {}),
          });
        });
        outcome = { kind: 'applied', info };
      } catch (error) {
        outcome = { kind: 'failed', error };
      }
      const sent = lane.inflight ?? job;
      lane.inflight = undefined;
      this.#settled.add(sent.node.name);
      if (lane.gone) {
        this.#lanes.delete(sent.node.name);
        return;
      }
      if (signal.aborted) return;
      if (outcome.kind === 'applied') {
        lane.acked = {
          sig: sent.desired.sig,
          generation: sent.generation,
          at: now(),
          reported: observationOf(outcome.info, 0).reported,
        };
      } else lane.acked = undefined;
      onSettled(sent, outcome, (performance.now() - started) / 1000);
    }
  }
}

export type { Job as PushJob };
