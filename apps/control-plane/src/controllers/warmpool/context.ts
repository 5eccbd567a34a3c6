// What the driver's run and its helpers share: the reconciler's options, the
// leadership it asks before every push, and a leadership term: everything that
// must stop the moment leadership does.
import type { NodeInventory, SandboxTemplate, SandboxWarmPool } from '@warmpool/api';
import type { Lister } from '@warmpool/kube';
import type { Clock, Logger } from '@warmpool/runtime';
import type { PoolSetter } from '../../agents/pool-setter.js';
import type { GenerationSource } from '../../generation/generation.js';
import type { AddressCheck } from '../../nodes/addresses.js';
import type { Exclusion, NodeTracker } from '../../nodes/tracker.js';
import type { TokenSource } from '../../agents/token.js';
import type { EventRecorder } from './events.js';
import type { WarmPoolMetrics } from './metrics.js';
import type { WarmPoolDriverSettings } from './options.js';
import type { Pushers } from './pushers.js';
import type { ProbeSampler } from './sampler.js';
import type { IncrementalSpread } from './spread-memo.js';
import type { StatusLane } from './status-queue.js';
import type { PoolStatusWriter } from './status-writer.js';

/** The election as the driver sees it; without one (a single replica by construction) it always leads. */
export interface Leadership {
  /** Cheap, local: still within the renew deadline of the last successful renewal. */
  holding(): boolean;
  /** Re-reads the Lease; false (and leadership ended) when another replica holds it. */
  confirm(signal: AbortSignal): Promise<boolean>;
}

export const ALWAYS_LEADING: Leadership = { holding: () => true, confirm: () => Promise.resolve(true) };

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
export interface Term {
  readonly controller: AbortController;
  readonly signal: AbortSignal;
  readonly pushers: Pushers;
  /** The spread, kept between runs: it recomputes only what changed, and keeps what it can where room is short. */
  readonly spread: IncrementalSpread;
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

/** The reconciler as its helpers (epoch, push outcomes, transitions) see it. */
export interface DriverContext {
  readonly options: WarmPoolReconcilerOptions;
  readonly settings: WarmPoolDriverSettings;
  readonly tracker: NodeTracker;
  readonly leadership: Leadership;
  /** Whether `term` is still the term on. */
  isCurrent(term: Term): boolean;
  /** Something changed: reconcile soon. */
  poke(reason: string): void;
}
