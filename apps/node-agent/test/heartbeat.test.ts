// The heartbeat write: at most one publish interval after the last write, and
// spread over that interval's last tenth at random, so a fleet whose writes one
// event lined up (a new leader's push to every node) drifts apart instead of
// writing in lockstep every interval ever after.
import type { NodeInfo, NodeInventoryStatus } from '@warmpool/api';
import {
  AgentMetrics,
  GenerationGuard,
  HEARTBEAT_JITTER,
  InventoryPublisher,
  OwnerAddress,
  type InventoryWriter,
} from '@warmpool/node-agent';
import { silentLogger } from '@warmpool/runtime';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

const INTERVAL_MS = 30_000;
const INFO: NodeInfo = {
  pools: [{ key: { template: 't', net: 'none', size: 'small' }, target: 2, warm: 2, refilling: 0 }],
  claimed: 0,
};

/** A writer that records when each status write happened (fake time), and answers at once. */
function recordingWriter(writes: number[]): InventoryWriter {
  return {
    readStatus: () => Promise.resolve(undefined),
    nodeOwner: () => Promise.resolve(undefined),
    applyObject: () => Promise.resolve(),
    applyStatus: (_name: string, _status: NodeInventoryStatus) => {
      writes.push(Date.now());
      return Promise.resolve({ spec: { nodeName: 'node-a', address: '127.0.0.1:1' } });
    },
  };
}

function publisher(writes: number[], random: () => number): InventoryPublisher {
  return new InventoryPublisher({
    writer: recordingWriter(writes),
    nodeName: 'node-a',
    address: '127.0.0.1:1',
    generations: new GenerationGuard({ recovered: false }),
    currentInfo: () => INFO,
    ownerAddress: new OwnerAddress(silentLogger),
    publishIntervalMs: INTERVAL_MS,
    minPublishGapMs: 5_000,
    random,
    logger: silentLogger,
    metrics: new AgentMetrics(),
  });
}

describe('the heartbeat write', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 0 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('comes within the publish interval, shortened by up to a tenth as the random draw says', async () => {
    const writes: number[] = [];
    const draws = [0, 0.5, 0.999];
    const p = publisher(writes, () => draws.shift() ?? 0);
    p.start();
    await vi.advanceTimersByTimeAsync(4 * INTERVAL_MS);
    await p.close();
    const gaps = writes.slice(1, 4).map((at, i) => at - (writes[i] as number));
    expect(gaps).toEqual([
      INTERVAL_MS,
      INTERVAL_MS * (1 - HEARTBEAT_JITTER * 0.5),
      Math.round(INTERVAL_MS * (1 - HEARTBEAT_JITTER * 0.999)),
    ]);
  });

  it('drifts two nodes apart that wrote at the same instant', async () => {
    const a: number[] = [];
    const b: number[] = [];
    const nodes = [publisher(a, Math.random), publisher(b, Math.random)];
    for (const node of nodes) node.start();
    await vi.advanceTimersByTimeAsync(10 * INTERVAL_MS);
    for (const node of nodes) await node.close();
    expect(a[0]).toBe(b[0]);
    expect(a.slice(1)).not.toEqual(b.slice(1));
    for (const writes of [a, b])
      for (let i = 1; i < writes.length; i++) {
        const gap = (writes[i] as number) - (writes[i - 1] as number);
        expect(gap).toBeLessThanOrEqual(INTERVAL_MS);
        expect(gap).toBeGreaterThanOrEqual(INTERVAL_MS * (1 - HEARTBEAT_JITTER) - 1);
      }
  });
});
