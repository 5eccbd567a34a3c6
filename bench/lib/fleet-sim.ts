// A simulated fleet in virtual time: fake-sandboxd's own core (its paced,
// concurrency-bounded refill, boot and cold-boot timers) on N nodes, run on a
// VirtualClock, fed one claim trace, with a sizing policy setting the pool's
// replicas every tick. What the control plane adds is modelled, not run: the
// replicas are spread evenly over the nodes (as pool-model's spread does with
// room to spare) and reach them `applyDelaySeconds` after the decision (scale
// write → driver reconcile → SetPools); a claim goes to a node with a warm
// sandbox when one has any (the placement reads fresh counts), else boots cold
// on the next node in turn; a warm claim answers in `pipelineMs`, a cold one
// in `pipelineMs` + the node's cold boot.
import { FakeSandboxd } from '@warmpool/fake-sandboxd';
import type { DemandObservation } from '@warmpool/demand';
import type { Trace } from './demand-trace.ts';
import { VirtualClock } from './virtual-clock.ts';

export interface FleetModel {
  nodes: number;
  /** Per node, as fake-sandboxd's --refill-rate / --refill-concurrency / --boot-ms / --cold-boot-ms. */
  refillRate: number;
  refillConcurrency: number;
  bootMs: number;
  coldBootMs: number;
  room: number;
  maxClaims: number;
  applyDelaySeconds: number;
  pipelineMs: number;
  /** How often the policy decides. */
  tickSeconds: number;
  /** Before the trace starts, the pool fills at the policy's initial replicas. */
  warmupSeconds: number;
}

/** What a policy sees each tick: the claims since the last one and the fleet's refill state. */
export type TickObservation = Required<Omit<DemandObservation, 'since'>>;

export interface SizingPolicy {
  readonly name: string;
  readonly initialReplicas: number;
  decide(observation: TickObservation): number;
}

export interface SimResult {
  policy: string;
  claims: number;
  warm: number;
  cold: number;
  hitRatio: number;
  /** ∫ Σ (warm + refilling) dt over the trace: sandboxes held for nobody. */
  idleSandboxSeconds: number;
  /** Claim latencies, ms, ascending. */
  latenciesMs: Float64Array;
  /** Per flash crowd: cold claims among those arriving in its minute plus one boot, and warm + refilling at onset. */
  flashes: Array<{ at: number; cold: number; stockAtOnset: number }>;
  /** [seconds into the trace, replicas asked for], sampled. */
  replicas: Array<[number, number]>;
  /** Replicas changes made. */
  changes: number;
}

const KEY = { template: 'registry.example/bench/demand:1', net: 'none', size: 'small' } as const;

export async function simulate(
  trace: Trace,
  fleet: FleetModel,
  policy: SizingPolicy,
  plotEverySeconds = 30,
): Promise<SimResult> {
  const clock = new VirtualClock(0);
  const nodes = Array.from(
    { length: fleet.nodes },
    () =>
      new FakeSandboxd({
        clock,
        refillRate: fleet.refillRate,
        refillConcurrency: fleet.refillConcurrency,
        bootMs: fleet.bootMs,
        coldBootMs: fleet.coldBootMs,
        room: fleet.room,
        maxClaims: fleet.maxClaims,
      }),
  );
  const start = fleet.warmupSeconds * 1000;
  const sinceStart = (): number => (clock.now() - start) / 1000;
  let pending = 0;
  const warmOf = (node: FakeSandboxd): { warm: number; refilling: number; target: number } =>
    node.info().pools[0] ?? { warm: 0, refilling: 0, target: 0 };

  let asked = policy.initialReplicas;
  let changes = 0;
  const apply = (replicas: number): void => {
    const base = Math.floor(replicas / fleet.nodes);
    const extra = replicas % fleet.nodes;
    nodes.forEach((node, i) => node.setPools([{ ...KEY, warm: base + (i < extra ? 1 : 0) }]));
  };
  apply(asked);

  // Claims.
  const latencies = new Float64Array(trace.arrivals.length);
  const coldAt: number[] = [];
  let warm = 0;
  let cold = 0;
  let warmSinceTick = 0;
  let coldSinceTick = 0;
  let nextNode = 0;
  const claimAt = (index: number): void => {
    const arrived = clock.now();
    let chosen: FakeSandboxd | undefined;
    for (let k = 0; k < nodes.length && chosen === undefined; k++) {
      const node = nodes[(nextNode + k) % nodes.length] as FakeSandboxd;
      if (warmOf(node).warm > 0) chosen = node;
    }
    const isWarm = chosen !== undefined;
    chosen ??= nodes[nextNode % nodes.length] as FakeSandboxd;
    nextNode = (nextNode + 1) % nodes.length;
    const session = (trace.sessions[index] ?? 0) * 1000;
    const node = chosen;
    // `pending` counts answers due at this virtual instant, so the run loop lets them land before time moves on.
    let counted = isWarm;
    let answered = false;
    if (isWarm) {
      warm++;
      warmSinceTick++;
      pending++;
    } else {
      cold++;
      coldSinceTick++;
      coldAt.push(arrived / 1000 - fleet.warmupSeconds);
    }
    const settled = (latencyMs: number): void => {
      answered = true;
      if (counted) pending--;
      latencies[index] = latencyMs;
    };
    node.claim({ ...KEY, ttl_seconds: Math.ceil(session / 1000) + 3_600 }).then(
      (grant) => {
        settled(fleet.pipelineMs + (clock.now() - arrived));
        clock.setTimeout(() => void node.release(grant.id), session);
      },
      () => settled(Number.POSITIVE_INFINITY),
    );
    // A cold answer is released by the node's boot timer, set by claim() above, so it fires just before this one.
    if (!isWarm)
      clock.setTimeout(() => {
        if (answered) return;
        counted = true;
        pending++;
      }, fleet.coldBootMs);
  };
  trace.arrivals.forEach((t, index) => clock.at(start + t * 1000, () => claimAt(index)));

  // Ticks: the policy decides from the claims since the last tick and the nodes' refill state.
  let lastWarmTotal = 0;
  const tick = (): void => {
    let warmTotal = 0;
    let owed = 0;
    for (const node of nodes) {
      const pool = warmOf(node);
      warmTotal += pool.warm;
      owed += Math.max(0, pool.target - pool.warm);
    }
    // As the controller infers it: warm gained plus warm taken since the last tick.
    const booted = Math.max(0, warmTotal - lastWarmTotal + warmSinceTick);
    lastWarmTotal = warmTotal;
    const next = policy.decide({
      at: clock.now() / 1000,
      current: asked,
      warmClaims: warmSinceTick,
      coldClaims: coldSinceTick,
      countsComplete: true,
      owed,
      booted,
    });
    warmSinceTick = 0;
    coldSinceTick = 0;
    if (next !== asked) {
      asked = next;
      changes++;
      clock.setTimeout(() => apply(next), fleet.applyDelaySeconds * 1000);
    }
    clock.setTimeout(tick, fleet.tickSeconds * 1000);
  };
  clock.at(start, tick);

  // Sampling: idle sandbox-seconds (every 100 ms), the replicas curve, the stock at each crowd's onset.
  const end = start + (trace.spec.daySeconds + 60) * 1000;
  let idle = 0;
  const sample = (): void => {
    for (const node of nodes) {
      const pool = warmOf(node);
      idle += (pool.warm + pool.refilling) * 0.1;
    }
    if (clock.now() < end) clock.setTimeout(sample, 100);
  };
  clock.at(start, sample);
  const replicas: Array<[number, number]> = [];
  const plot = (): void => {
    replicas.push([sinceStart(), asked]);
    clock.setTimeout(plot, plotEverySeconds * 1000);
  };
  clock.at(start, plot);
  const stockAt = new Map<number, number>();
  for (const onset of trace.flashes)
    clock.at(start + onset * 1000, () => {
      let stock = 0;
      for (const node of nodes) {
        const pool = warmOf(node);
        stock += pool.warm + pool.refilling;
      }
      stockAt.set(onset, stock);
    });

  await clock.run(end, () => pending > 0);
  for (const node of nodes) node.close();

  const crowdEnd = trace.spec.flashSeconds + fleet.bootMs / 1000;
  return {
    policy: policy.name,
    claims: warm + cold,
    warm,
    cold,
    hitRatio: warm / Math.max(1, warm + cold),
    idleSandboxSeconds: idle,
    latenciesMs: latencies.sort(),
    flashes: trace.flashes.map((at) => ({
      at,
      cold: coldAt.filter((t) => t >= at && t < at + crowdEnd).length,
      stockAtOnset: stockAt.get(at) ?? 0,
    })),
    replicas,
    changes,
  };
}
