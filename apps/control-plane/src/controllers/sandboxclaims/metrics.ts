// The SandboxClaim controller's and the claim janitor's metrics, on the
// control plane's registry (prefix `warmpool_controlplane_`). Claims by path
// (`claims_total{path="crd"}`, latency by path and tier, batches, jobs) are
// the provisioning pipeline's; these count what only the CRD front door sees.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

const PREFIX = 'warmpool_controlplane_';

export type ClaimResultLabel = 'claimed' | 'failed';
export type ApiWriteKind = 'metadata' | 'status' | 'secret' | 'delete';

export class SandboxClaimMetrics {
  readonly #claims: Counter;
  readonly #ready: Histogram;
  readonly #writes: Counter;
  readonly #releases: Counter;
  readonly #renewals: Counter;
  readonly #janitor: Counter;
  readonly #janitorSweeps: Counter;
  readonly #queue: Gauge;

  constructor(registry: Registry) {
    const registers = [registry];
    this.#claims = new Counter({
      name: `${PREFIX}sandboxclaim_results_total`,
      help: 'SandboxClaims answered Ready=True (claimed) or Ready=False (failed, with the reason; each retry counts), by the SandboxClaim controller',
      labelNames: ['result', 'reason'],
      registers,
    });
    this.#ready = new Histogram({
      name: `${PREFIX}sandboxclaim_ready_seconds`,
      help: 'From this replica first seeing a SandboxClaim to its Ready=True status write (retries included)',
      buckets: [0.005, 0.01, 0.02, 0.03, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
    this.#writes = new Counter({
      name: `${PREFIX}sandboxclaim_api_writes_total`,
      help: 'apiserver writes the SandboxClaim controller made, by kind (status; secret; delete; metadata: lifting the finalizer of claims an earlier version served)',
      labelNames: ['kind'],
      registers,
    });
    this.#releases = new Counter({
      name: `${PREFIX}sandboxclaim_releases_total`,
      help: 'Sandboxes released for SandboxClaims, by cause (deleted: the claim was deleted once served; vanished: it went while its batch ran; expired)',
      labelNames: ['cause'],
      registers,
    });
    this.#renewals = new Counter({
      name: `${PREFIX}sandboxclaim_renewals_total`,
      help: "Lease renewals of SandboxClaims' sandboxes, by outcome",
      labelNames: ['outcome'],
      registers,
    });
    this.#janitor = new Counter({
      name: `${PREFIX}claim_janitor_releases_total`,
      help: 'Node claims of the SandboxClaim path whose claim no longer exists, released by the janitor',
      registers,
    });
    this.#janitorSweeps = new Counter({
      name: `${PREFIX}claim_janitor_sweeps_total`,
      help: 'Janitor sweeps, by outcome (ok; partial: some nodes did not answer)',
      labelNames: ['outcome'],
      registers,
    });
    this.#queue = new Gauge({
      name: `${PREFIX}sandboxclaim_queue_keys`,
      help: 'SandboxClaims waiting, delayed or being worked on by this replica',
      registers,
    });
  }

  claimed(readySeconds: number | undefined): void {
    this.#claims.inc({ result: 'claimed', reason: '' });
    if (readySeconds !== undefined && readySeconds >= 0) this.#ready.observe(readySeconds);
  }

  failed(reason: string): void {
    this.#claims.inc({ result: 'failed', reason });
  }

  write(kind: ApiWriteKind): void {
    this.#writes.inc({ kind });
  }

  released(cause: 'deleted' | 'vanished' | 'expired'): void {
    this.#releases.inc({ cause });
  }

  renewed(outcome: 'ok' | 'gone' | 'error'): void {
    this.#renewals.inc({ outcome });
  }

  janitorReleased(): void {
    this.#janitor.inc();
  }

  janitorSwept(outcome: 'ok' | 'partial'): void {
    this.#janitorSweeps.inc({ outcome });
  }

  queueSize(keys: number): void {
    this.#queue.set(keys);
  }
}
