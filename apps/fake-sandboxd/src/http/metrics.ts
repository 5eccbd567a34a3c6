// Prometheus metrics of one node, in a registry of its own so many fake nodes
// can share a process. Every value is read from the core at scrape time: the
// claim path never touches a metric.
import { Counter, Gauge, Registry } from 'prom-client';
import type { FakeSandboxd } from '../core/fake-sandboxd.js';
import type { SandboxRuntimes } from '../core/runtime/runtimes.js';

const POOL_LABELS = ['template', 'net', 'size'] as const;

type PoolInfo = ReturnType<FakeSandboxd['info']>['pools'][number];

export class NodeMetrics {
  readonly registry = new Registry();

  constructor(core: FakeSandboxd, runtimes?: SandboxRuntimes) {
    const registers = [this.registry];
    registerPoolGauges(registers, core);
    registerNodeGauges(registers, core);
    registerTotals(registers, core, runtimes);
  }

  render(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}

/** One gauge per pool figure, labelled by the pool's key. */
function registerPoolGauges(registers: Registry[], core: FakeSandboxd): void {
  const perPool = (name: string, help: string, pick: (p: PoolInfo) => number): void => {
    new Gauge({
      name,
      help,
      labelNames: POOL_LABELS,
      registers,
      collect() {
        this.reset();
        for (const pool of core.info().pools) this.set({ ...pool.key }, pick(pool));
      },
    });
  };
  perPool('sandboxd_pool_warm', 'Booted, unclaimed sandboxes of the pool.', (p) => p.warm);
  perPool('sandboxd_pool_target', 'Warm target of the pool.', (p) => p.target);
  perPool('sandboxd_pool_refilling', 'Sandboxes of the pool being booted now.', (p) => p.refilling);
}

/** The node-wide gauges. */
function registerNodeGauges(registers: Registry[], core: FakeSandboxd): void {
  const nodeGauge = (name: string, help: string, read: () => number): void => {
    new Gauge({
      name,
      help,
      registers,
      collect() {
        this.set(read());
      },
    });
  };
  nodeGauge('sandboxd_claimed', 'Live claimed sandboxes.', () => core.claimedCount);
  nodeGauge('sandboxd_draining', '1 while the node is draining.', () => (core.isDraining ? 1 : 0));
  nodeGauge('sandboxd_at_capacity', '1 while refill is parked because the node is full.', () =>
    core.info().at_capacity ? 1 : 0,
  );
}

/** A counter set at scrape time from a running total of the core, with at most one label. */
function registerTotal(
  registers: Registry[],
  name: string,
  help: string,
  labelName: string | undefined,
  read: () => Record<string, number>,
): void {
  new Counter({
    name,
    help,
    labelNames: labelName === undefined ? [] : [labelName],
    registers,
    collect() {
      this.reset();
      for (const [label, value] of Object.entries(read())) {
        if (labelName === undefined) this.inc(value);
        else this.inc({ [labelName]: label }, value);
      }
    },
  });
}

/** The core's running totals (claims, releases, reaps, boots, destroyed warm), and runtime requests when served. */
function registerTotals(registers: Registry[], core: FakeSandboxd, runtimes: SandboxRuntimes | undefined): void {
  const { stats } = core;
  const total = (name: string, help: string, labelName: string | undefined, read: () => Record<string, number>) =>
    registerTotal(registers, name, help, labelName, read);
  total('sandboxd_claims_total', 'Claims granted, by tier.', 'tier', () => ({
    warm: stats.claimsWarm,
    cold: stats.claimsCold,
  }));
  total('sandboxd_claim_failures_total', 'Claims that failed with 500 (injected).', undefined, () => ({
    all: stats.claimFailures,
  }));
  total('sandboxd_releases_total', 'Claims released by a caller.', undefined, () => ({ all: stats.releases }));
  total('sandboxd_reaps_total', 'Claims reaped at their deadline.', undefined, () => ({ all: stats.reaps }));
  total('sandboxd_boots_total', 'Refill boots finished, by result.', 'result', () => ({
    ok: stats.bootsSucceeded,
    failed: stats.bootsFailed,
  }));
  total(
    'sandboxd_warm_destroyed_total',
    'Warm sandboxes destroyed unclaimed (drain, retired key, lowered target).',
    undefined,
    () => ({ all: stats.warmDestroyed }),
  );
  if (runtimes !== undefined)
    total(
      'sandboxd_runtime_requests_total',
      'Requests that reached the sandbox runtime routes (refused ones too), by operation.',
      'operation',
      () => Object.fromEntries(runtimes.served),
    );
}
