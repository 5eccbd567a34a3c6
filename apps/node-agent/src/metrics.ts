// The agent's Prometheus metrics, in a registry of its own so several agents
// can live in one process (the fleet benchmark hosts many).
import type { NodeInfo } from '@warmpool/api';
import { KeptHistogram, type HistogramSeries } from '@warmpool/runtime';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

const PREFIX = 'warmpool_agent_';

type RequestLabel = 'route' | 'method' | 'status';

// Sub-millisecond resolution at the bottom: the agent's own overhead is tens of microseconds.
const REQUEST_BUCKETS = [
  0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
];
const PUBLISH_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export class AgentMetrics {
  readonly registry: Registry;
  /** Observed on every request: its series are kept (see requestRecorder), not looked up by labels each time. */
  readonly #requests: KeptHistogram<RequestLabel>;
  readonly #sandboxdErrors: Counter<'operation' | 'kind'>;
  readonly #poolWarm: Gauge<'template' | 'net' | 'size'>;
  readonly #poolTarget: Gauge<'template' | 'net' | 'size'>;
  readonly #claimed: Gauge;
  readonly #draining: Gauge;
  readonly #atCapacity: Gauge;
  readonly #appliedGeneration: Gauge;
  readonly #publishDuration: Histogram;
  readonly #publishFailures: Counter;
  readonly #specRestored: Counter;
  readonly #staleGenerations: Counter;
  readonly #claimsAtLimit: Counter;
  #claimsInFlight: () => number = () => 0;

  constructor(registry: Registry = new Registry()) {
    this.registry = registry;
    const registers = [registry];
    this.#requests = new KeptHistogram({
      name: `${PREFIX}http_request_duration_seconds`,
      help: 'Time to answer an API request, by route, method and status',
      labelNames: ['route', 'method', 'status'],
      buckets: REQUEST_BUCKETS,
      registry,
    });
    this.#sandboxdErrors = new Counter({
      name: `${PREFIX}sandboxd_errors_total`,
      help: 'sandboxd calls that got no answer, by operation and kind (unreachable and busy: never sent; timeout and connection_lost: sent, outcome unknown)',
      labelNames: ['operation', 'kind'],
      registers,
    });
    this.#poolWarm = new Gauge({
      name: `${PREFIX}pool_warm`,
      help: 'Warm (booted, unclaimed) sandboxes per pool, as last seen from sandboxd',
      labelNames: ['template', 'net', 'size'],
      registers,
    });
    this.#poolTarget = new Gauge({
      name: `${PREFIX}pool_target`,
      help: 'Warm target per pool, as last seen from sandboxd',
      labelNames: ['template', 'net', 'size'],
      registers,
    });
    this.#claimed = new Gauge({ name: `${PREFIX}claimed`, help: 'Live claims on the node', registers });
    this.#draining = new Gauge({ name: `${PREFIX}draining`, help: '1 while the node is draining', registers });
    this.#atCapacity = new Gauge({
      name: `${PREFIX}at_capacity`,
      help: '1 while refill is parked because the node is full',
      registers,
    });
    this.#appliedGeneration = new Gauge({
      name: `${PREFIX}applied_generation`,
      help: 'The last SetPools generation applied (-1: none yet)',
      registers,
    });
    this.#appliedGeneration.set(-1);
    this.#publishDuration = new Histogram({
      name: `${PREFIX}inventory_publish_duration_seconds`,
      help: 'Time to publish the NodeInventory (successful attempts)',
      buckets: PUBLISH_BUCKETS,
      registers,
    });
    this.#publishFailures = new Counter({
      name: `${PREFIX}inventory_publish_failures_total`,
      help: 'Failed NodeInventory publish attempts',
      registers,
    });
    this.#specRestored = new Counter({
      name: `${PREFIX}inventory_spec_restored_total`,
      help: 'Times the NodeInventory spec was found changed by someone else and put back',
      registers,
    });
    this.#staleGenerations = new Counter({
      name: `${PREFIX}stale_generation_pushes_total`,
      help: 'SetPools pushes refused as older than the applied generation',
      registers,
    });
    this.#claimsAtLimit = new Counter({
      name: `${PREFIX}claims_refused_in_flight_limit_total`,
      help: 'Claims answered 429 because the agent had its limit of claims in flight to sandboxd',
      registers,
    });
    const claimsInFlight = (): number => this.#claimsInFlight();
    new Gauge({
      name: `${PREFIX}claims_in_flight`,
      help: 'Claims sent to sandboxd and not answered yet',
      registers,
      collect() {
        this.set(claimsInFlight());
      },
    });
  }

  /** Where the claims_in_flight gauge reads its value at scrape time. */
  readClaimsInFlight(read: () => number): void {
    this.#claimsInFlight = read;
  }

  claimRefusedAtLimit(): void {
    this.#claimsAtLimit.inc();
  }

  /**
   * Records one route's requests, timed from `startedMs` (a performance.now()
   * reading) to now. The series for the route's usual answers are found once.
   */
  requestRecorder(route: string): (method: string, status: number, startedMs: number) => void {
    const known = new Map<string, HistogramSeries<RequestLabel>>();
    // The series of the last request: a route's requests are mostly alike, and this finds theirs without a key.
    let last: HistogramSeries<RequestLabel> | undefined;
    let lastMethod = '';
    let lastStatus = 0;
    return (method, status, startedMs) => {
      const seconds = (performance.now() - startedMs) / 1000;
      if (last === undefined || status !== lastStatus || method !== lastMethod) {
        const key = status + method;
        last = known.get(key);
        if (last === undefined) {
          last = this.#requests.series({ route, method, status: String(status) });
          known.set(key, last);
        }
        lastMethod = method;
        lastStatus = status;
      }
      last.observe(seconds);
    };
  }

  sandboxdError(operation: string, kind: string): void {
    this.#sandboxdErrors.labels(operation, kind).inc();
  }

  /** Rewrites the per-pool gauges from a full snapshot, so a retired pool stops being exported. */
  observeInfo(info: NodeInfo): void {
    this.#poolWarm.reset();
    this.#poolTarget.reset();
    for (const pool of info.pools) {
      const { template, net, size } = pool.key;
      this.#poolWarm.labels(template, net, size).set(pool.warm);
      this.#poolTarget.labels(template, net, size).set(pool.target);
    }
    this.#claimed.set(info.claimed);
    this.#draining.set(info.draining ? 1 : 0);
    this.#atCapacity.set(info.at_capacity ? 1 : 0);
  }

  appliedGeneration(generation: number): void {
    this.#appliedGeneration.set(generation);
  }

  stalePush(): void {
    this.#staleGenerations.inc();
  }

  publishSucceeded(seconds: number): void {
    this.#publishDuration.observe(seconds);
  }

  publishFailed(): void {
    this.#publishFailures.inc();
  }

  inventorySpecRestored(): void {
    this.#specRestored.inc();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  render(): Promise<string> {
    return this.registry.metrics();
  }
}
