// The provisioning pipeline's settings and their defaults (flags in config.ts).
import type { BatcherOptions } from '@warmpool/batcher';

export interface ProvisioningSettings {
  /** Claim batching windows (default: idle 0, see provisioner.ts; libs/batcher's 20 ms max, 2 000 items). */
  batcher: Partial<BatcherOptions> & Pick<BatcherOptions, 'idleMs'>;
  /**
   * When a pool's batch out is answered, how long the claims held behind it wait for that batch's callers to ask
   * again (as many new claims as it answered), so one batch carries both (provisioner.ts); 0: they go at once.
   */
  batchRejoinMs: number;
  /** Batch jobs one replica's worker serves at once. */
  workerConcurrency: number;
  /** A worker's lock on a job; a dead worker's job is taken over within about this plus the stalled interval. */
  lockDurationMs: number;
  /** How often workers look for jobs whose lock expired. */
  stalledIntervalMs: number;
  /** A caller waits this long for its claim before a Timeout (504). */
  claimTimeoutMs: number;
  /** Each call to a node agent, and a claim placed on a node's warm stock. */
  nodeTimeoutMs: number;
  /**
   * A claim placed where no warm stock is (a clone or cold boot on the node, up to sandboxd's 90 s cold window), and
   * how long after a timed-out claim call the node may still serve it: its claim_ref is looked up until then.
   */
  coldNodeTimeoutMs: number;
  /** Nodes asked per claim before it fails. */
  maxAttempts: number;
}

export const PROVISIONING_DEFAULTS: ProvisioningSettings = Object.freeze({
  batcher: { idleMs: 0 },
  batchRejoinMs: 5,
  workerConcurrency: 64,
  lockDurationMs: 5_000,
  stalledIntervalMs: 2_000,
  claimTimeoutMs: 10_000,
  nodeTimeoutMs: 2_000,
  coldNodeTimeoutMs: 95_000,
  maxAttempts: 3,
});

/** The defaults with every setting `options` gives in their place. */
export function provisioningSettings(options: Partial<ProvisioningSettings>): ProvisioningSettings {
  const settings: ProvisioningSettings = { ...PROVISIONING_DEFAULTS };
  for (const name of Object.keys(PROVISIONING_DEFAULTS) as Array<keyof ProvisioningSettings>) {
    if (options[name] !== undefined) Object.assign(settings, { [name]: options[name] });
  }
  return settings;
}
