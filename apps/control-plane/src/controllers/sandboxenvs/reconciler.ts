// The SandboxEnv reconciler: for every Env, its scaling groups' counts and
// headroom from the member pools and the NodeInventory cache, the Env's
// federation records (this cluster's capacity), and, while this replica
// leads, the Env's status, written only when it changed: from what the cache
// shows or, while the cache has not caught up with our own last write, from
// that write (OwnWrites), so a run right after a write neither sends a write
// the apiserver must refuse nor skips one it needs.
//
// One global, coalescing run on any Env, pool, template or inventory event
// and every interval; a run costs O(Envs + pools + inventory pool rows), never
// anything per sandbox. Every replica runs it (each keeps its own view of the
// local capacity for the claim router); only the leader writes.
import type {
  FederationRecord,
  ForeignClusterMember,
  NodeInventory,
  SandboxEnv,
  SandboxEnvStatus,
  SandboxTemplate,
  SandboxWarmPool,
} from '@warmpool/api';
import { DONE, WorkQueue, type Lister } from '@warmpool/kube';
import type { Logger, Clock } from '@warmpool/runtime';
import { OwnWrites } from '../own-writes.js';
import { countPools, observeKeys, type PoolCounts } from './counts.js';
import { envCapacity, SaturationTracker, statusRows, type EnvCapacity } from './status.js';
import type { EnvStatusWriter } from './status-writer.js';

export interface SandboxEnvReconcilerOptions {
  envs: Lister<SandboxEnv>;
  pools: Lister<SandboxWarmPool>;
  templates: Lister<SandboxTemplate>;
  inventories: Lister<NodeInventory>;
  writer: EnvStatusWriter;
  /** The foreign view of an Env (`status.clusters`); none without federation. */
  foreignMembers?: (namespace: string, env: string) => ForeignClusterMember[];
  /** Every run's local records, for the federation registry and reporter. */
  onCapacity?: (records: ReadonlyArray<Omit<FederationRecord, 'clusterId'>>) => void;
  /** Called after each run with every Env's capacity, while leading (the autoscaler). */
  onLeaderRun?: (
    envs: ReadonlyArray<{ env: SandboxEnv; capacity: EnvCapacity }>,
    counts: ReadonlyMap<string, PoolCounts>,
    signal: AbortSignal,
  ) => Promise<void>;
  clock: Clock;
  /** An inventory not republished for this long counts for nothing. */
  staleAfterMs: number;
  intervalMs: number;
  logger: Logger;
}

export class SandboxEnvReconciler {
  readonly #options: SandboxEnvReconcilerOptions;
  /** One key, the global run (coalesced, never two at once). */
  readonly #queue: WorkQueue;
  readonly #saturation = new SaturationTracker();
  /** Per Env uid: the status we last wrote and the versions our writes left; what a write was refused at. */
  readonly #written = new OwnWrites<SandboxEnvStatus>();
  #timer: NodeJS.Timeout | undefined;
  #term: AbortController | undefined;
  #records: ReadonlyArray<Omit<FederationRecord, 'clusterId'>> = [];
  #closed = false;

  constructor(options: SandboxEnvReconcilerOptions) {
    this.#options = options;
    this.#queue = new WorkQueue({
      work: async () => {
        await this.#run();
        return DONE;
      },
      onError: (_key, err) => options.logger.warn('SandboxEnv reconcile failed', { err }),
    });
    this.#queue.start();
  }

  /** This cluster's records as of the last run. */
  get records(): ReadonlyArray<Omit<FederationRecord, 'clusterId'>> {
    return this.#records;
  }

  get leading(): boolean {
    return this.#term !== undefined;
  }

  /** Runs every interval from now on (every replica). */
  start(): void {
    if (this.#timer !== undefined || this.#closed) return;
    this.#timer = setInterval(() => this.poke('interval'), this.#options.intervalMs);
    this.#timer.unref();
    this.poke('start');
  }

  /** Something changed (`_reason`, for the reader): one run soon, coalesced with every other poke. */
  poke(_reason: string): void {
    this.#queue.add('envs');
  }

  /** Leader-only for the term `signal` bounds: status writes and the autoscaler. */
  lead(signal: AbortSignal): void {
    if (this.#term !== undefined || this.#closed || signal.aborted) return;
    const term = new AbortController();
    this.#term = term;
    signal.addEventListener(
      'abort',
      () => {
        if (this.#term === term) this.stopLeading();
      },
      { once: true },
    );
    this.poke('leading');
  }

  stopLeading(): void {
    this.#term?.abort();
    this.#term = undefined;
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.stopLeading();
    await this.#queue.stop();
  }

  async #run(): Promise<void> {
    const o = this.#options;
    const now = o.clock.now();
    const keys = observeKeys(o.inventories.list(), now, o.staleAfterMs);
    const counts = countPools(o.pools.list(), (namespace, name) => o.templates.get(namespace, name), keys);
    const saturation = this.#saturation.clock(now);
    const envs: Array<{ env: SandboxEnv; capacity: EnvCapacity }> = [];
    const records: Array<Omit<FederationRecord, 'clusterId'>> = [];
    for (const env of o.envs.list()) {
      if (env.metadata?.deletionTimestamp !== undefined) continue;
      const capacity = envCapacity(env, counts, saturation);
      envs.push({ env, capacity });
      records.push(...capacity.records);
    }
    this.#saturation.sweep();
    this.#records = records;
    o.onCapacity?.(records);
    const term = this.#term;
    if (term === undefined) return;
    this.#written.retain(new Set(envs.map(({ env }) => uidOf(env))));
    await Promise.all(envs.map(({ env, capacity }) => this.#write(env, capacity, term.signal)));
    await o.onLeaderRun?.(envs, counts, term.signal);
  }

  async #write(env: SandboxEnv, capacity: EnvCapacity, signal: AbortSignal): Promise<void> {
    const namespace = env.metadata?.namespace ?? '';
    const name = env.metadata?.name ?? '';
    const status: SandboxEnvStatus = {
      scalingGroups: statusRows(capacity.groups),
      clusters: this.#options.foreignMembers?.(namespace, name) ?? [],
      ...(env.metadata?.generation !== undefined ? { observedGeneration: env.metadata.generation } : {}),
    };
    const uid = uidOf(env);
    // While the cache shows a version our own writes passed through, the Env is where our last write left it: its
    // status is that write's, and a write is pinned to the version it left (nothing but our status moved since the
    // cache's version, so the rest of the status the cache shows is still the Env's).
    const memory = this.#written.recall(uid, env.metadata?.resourceVersion);
    if (statusSig(status) === statusSig(memory?.last ?? env.status)) return;
    const at = memory?.at ?? env.metadata?.resourceVersion;
    // Refused at that version already: the Env moved on, and the cache has yet to show how.
    if (this.#written.refusedAt(uid, at)) return;
    try {
      const result = await this.#options.writer.write(
        memory === undefined ? env : { ...env, metadata: { ...env.metadata, resourceVersion: memory.at } },
        status,
        signal,
      );
      if (result.outcome === 'written') {
        this.#written.written(uid, at, result.object.metadata?.resourceVersion, status);
        return;
      }
      // Gone or moved on (deleted, changed, or replaced by a namesake): nothing was written; the cache's next version
      // of the Env pokes a run, or the interval does, which computes its status afresh.
      if (result.outcome === 'gone') this.#written.forget(uid);
      else this.#written.refused(uid, at);
      this.#options.logger.debug('SandboxEnv status not written: the Env is not the one it was computed from', {
        env: `${namespace}/${name}`,
        resourceVersion: at,
        outcome: result.outcome,
      });
    } catch (err) {
      if (!signal.aborted)
        this.#options.logger.warn('could not write SandboxEnv status', { env: `${namespace}/${name}`, err });
    }
  }
}

/** The key of what is remembered of an Env: its uid (its name where a cache holds none). */
function uidOf(env: SandboxEnv): string {
  return env.metadata?.uid ?? `${env.metadata?.namespace ?? ''}/${env.metadata?.name ?? ''}`;
}

/** A canonical string of the status fields written, for comparing would-be against current. */
export function statusSig(status: SandboxEnvStatus | undefined): string {
  if (status === undefined) return '';
  const groups = [...(status.scalingGroups ?? [])]
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((g) => [
      g.name,
      g.idle,
      g.running,
      g.pending,
      g.desired,
      g.autoscalingEnabled,
      g.capacity,
      g.saturatedFor ?? '',
    ]);
  const clusters = [...(status.clusters ?? [])]
    .map((c) => [
      c.clusterId,
      c.memberPool,
      c.scalingGroup,
      c.idle,
      c.running,
      c.pending,
      c.desired,
      c.autoscalingEnabled,
      c.capacity,
    ])
    .sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1));
  return JSON.stringify([groups, clusters, status.observedGeneration ?? null]);
}
