// The provisioning metrics read from Redis at scrape time (the jobs waiting and
// active, whether the claim index recovers): a scrape answers while Redis
// stalls (a stopped process, a partition that drops packets), keeping the last
// values, so /metrics still shows everything else when it matters most.
import { startRedis, type TestRedis } from '@warmpool/harness';
import { Redis } from 'ioredis';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClaimIndex } from '../../src/provisioning/claim-index.js';
import { ProvisioningMetrics } from '../../src/provisioning/metrics.js';

const RECOVERING = 'warmpool_controlplane_claim_index_recovering';

describe('the provisioning metrics read at scrape time (real Redis)', () => {
  let server: TestRedis;
  let redis: Redis;
  let index: ClaimIndex;

  beforeAll(async () => {
    server = await startRedis({ name: 'metrics-scrape' });
    // As the pipeline's commands connection: fails at once while disconnected, never queues behind a reconnect.
    redis = new Redis(server.url, { enableOfflineQueue: false, maxRetriesPerRequest: 1 });
    await new Promise<void>((resolve, reject) => {
      redis.once('ready', resolve);
      redis.once('error', reject);
    });
    index = new ClaimIndex(redis, { prefix: 'scrape:' });
  });
  afterAll(async () => {
    process.kill(server.pid, 'SIGCONT');
    index?.close();
    redis?.disconnect();
    await server?.stop();
  });

  it('answers a scrape while Redis stalls, keeping the last values', { timeout: 30_000 }, async () => {
    const registry = new Registry();
    new ProvisioningMetrics(registry, {
      jobCounts: async () => {
        await redis.ping();
        return { waiting: 2, active: 1 };
      },
      recovering: async () => (await index.recovering()) !== undefined,
    });
    const before = await registry.metrics();
    // A server the index never saw: it may have lost entries, so it recovers.
    expect(before).toContain(`${RECOVERING} 1`);
    expect(before).toContain('warmpool_controlplane_claim_jobs{state="waiting"} 2');

    process.kill(server.pid, 'SIGSTOP');
    try {
      const during = await registry.metrics();
      expect(during).toContain(`${RECOVERING} 1`);
      expect(during).toContain('warmpool_controlplane_claim_jobs{state="waiting"} 2');
    } finally {
      process.kill(server.pid, 'SIGCONT');
    }
  });
});
