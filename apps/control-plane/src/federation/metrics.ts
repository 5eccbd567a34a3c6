// Federation's own health, prefixed `warmpool_controlplane_`, in the control
// plane's registry (the per-Env capacity gauges `agentbox_federation_env_*`
// come from libs/federation): reports and hub reads by outcome, entries
// skipped for failing their schema, live foreign records, and where Env
// claims were served.
import { Counter, Gauge, type Registry } from 'prom-client';

const PREFIX = 'warmpool_controlplane_';

export type EnvClaimOutcome = 'local' | 'spilled' | 'no_capacity' | 'failed';

export class FederationMetrics {
  readonly #reports: Counter;
  readonly #reads: Counter;
  readonly #invalid: Counter;
  readonly #envClaims: Counter;
  readonly #forwards: Counter;
  readonly #registry: Registry;

  constructor(registry: Registry, foreignRecords: () => number) {
    this.#registry = registry;
    const registers = [registry];
    this.#reports = new Counter({
      name: `${PREFIX}federation_reports_total`,
      help: "Reports of this cluster's capacity to the hub, by outcome (ok / error)",
      labelNames: ['outcome'],
      registers,
    });
    this.#reads = new Counter({
      name: `${PREFIX}federation_reads_total`,
      help: 'Reads of the hub, by kind (hint / full) and outcome (ok / error)',
      labelNames: ['kind', 'outcome'],
      registers,
    });
    this.#invalid = new Counter({
      name: `${PREFIX}federation_invalid_entries_total`,
      help: 'Hub entries skipped because they failed the federation record schema',
      registers,
    });
    // Read at scrape time; removed by name in close().
    new Gauge({
      name: `${PREFIX}federation_foreign_records`,
      help: "Live records of other clusters in this replica's registry",
      registers,
      collect() {
        this.set(foreignRecords());
      },
    });
    this.#envClaims = new Counter({
      name: `${PREFIX}env_claims_total`,
      help: 'Claims for a SandboxEnv, by where they were served (local / spilled) or why not (no_capacity / failed)',
      labelNames: ['outcome'],
      registers,
    });
    this.#forwards = new Counter({
      name: `${PREFIX}federation_forwards_total`,
      help: "Claims forwarded to another cluster's member, by outcome (served / refused / unreachable)",
      labelNames: ['outcome'],
      registers,
    });
  }

  report(ok: boolean): void {
    this.#reports.inc({ outcome: ok ? 'ok' : 'error' });
  }

  read(kind: 'hint' | 'full', ok: boolean): void {
    this.#reads.inc({ kind, outcome: ok ? 'ok' : 'error' });
  }

  invalidEntries(n: number): void {
    if (n > 0) this.#invalid.inc(n);
  }

  envClaim(outcome: EnvClaimOutcome): void {
    this.#envClaims.inc({ outcome });
  }

  forward(outcome: 'served' | 'refused' | 'unreachable'): void {
    this.#forwards.inc({ outcome });
  }

  /** Unregisters every metric, so the same names can be registered again. */
  close(): void {
    for (const name of [
      'federation_reports_total',
      'federation_reads_total',
      'federation_invalid_entries_total',
      'federation_foreign_records',
      'env_claims_total',
      'federation_forwards_total',
    ]) {
      this.#registry.removeSingleMetric(`${PREFIX}${name}`);
    }
  }
}
