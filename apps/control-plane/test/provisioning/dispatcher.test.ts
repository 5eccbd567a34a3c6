// The dispatcher's answers when a batch cannot be queued: its callers are
// answered Unavailable at once, naming Redis; and since an add that timed out
// may still run (Redis reads it once it answers again), a late reply of that
// job releases the sandbox it served a caller who can never come back for it
// (a generated claimRef), as a timed-out job's late reply does.
import type { BatchJob, BatchReply, ClaimRecord } from '@warmpool/api';
import type { Batch } from '@warmpool/batcher';
import { silentLogger } from '@warmpool/runtime';
import type { Queue } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { ClaimFailure, type ClaimGrant, type ClaimOrder } from '../../src/provisioning/claim-service.js';
import { ClaimDispatcher } from '../../src/provisioning/dispatcher.js';
import type { ProvisioningMetrics } from '../../src/provisioning/metrics.js';
import type { PendingClaim, Provisioner } from '../../src/provisioning/provisioner.js';

const POOL = { namespace: 'ns', name: 'python', key: { template: 'tpl', net: 'none', size: 'small' } };

/** A queue whose add fails as a Redis that stopped answering fails it. */
function stalledQueue(jobIds: string[]): Queue<BatchJob> {
  const queue = {
    add(_name: string, _data: BatchJob, opts: { jobId: string }): Promise<never> {
      jobIds.push(opts.jobId);
      return Promise.reject(new Error('Command timed out'));
    },
  };
  return queue as unknown as Queue<BatchJob>;
}

function pending(claimRef: string, generated: boolean): { item: PendingClaim; answer: Promise<unknown> } {
  const order: ClaimOrder = {
    namespace: POOL.namespace,
    warmPool: POOL.name,
    claimRef,
    ttlSeconds: 60,
    owner: { door: 'http', digest: 'a'.repeat(64) },
    ...(generated ? { claimRefGenerated: true } : {}),
  };
  let item: PendingClaim | undefined;
  const answer = new Promise<unknown>((resolve, reject) => {
    item = { order, addedAt: performance.now(), resolve, reject };
  });
  if (item === undefined) throw new Error('unreachable');
  return { item, answer: answer.catch((err: unknown) => err) };
}

function grantOf(claimRef: string, id: string): ClaimRecord {
  return {
    id,
    token: 'tok',
    deadline: new Date(Date.now() + 60_000).toISOString(),
    ownerAddr: '127.0.0.1:1',
    node: 'node-0',
    namespace: POOL.namespace,
    warmPool: POOL.name,
    claimRef,
    tier: 'warm',
    door: 'http',
    owner: 'mark',
  };
}

describe('the claim dispatcher when Redis cannot take a batch', () => {
  it('answers Unavailable naming Redis, and a late reply of that job releases what it served a generated claimRef', async () => {
    const jobIds: string[] = [];
    const released: Array<[ClaimGrant, string]> = [];
    const dispatcher = new ClaimDispatcher({
      queue: stalledQueue(jobIds),
      replica: 'cp-0',
      claimTimeoutMs: 10_000,
      metrics: { batch: () => undefined } as unknown as ProvisioningMetrics,
      releaseUnanswered: (grant, why) => released.push([grant, why]),
      logger: silentLogger,
    });
    try {
      const generated = pending('gen-1', true);
      const chosen = pending('chosen-1', false);
      const batch: Batch<PendingClaim> = { id: 1, items: [generated.item, chosen.item], windowMs: 0, closedBy: 'idle' };
      await dispatcher.dispatch(POOL as unknown as Provisioner, batch);
      for (const answer of [await generated.answer, await chosen.answer]) {
        expect(answer).toBeInstanceOf(ClaimFailure);
        expect(answer).toMatchObject({ reason: 'Unavailable', message: 'Redis is not reachable: Command timed out' });
      }

      // Redis ran the add after all: the worker's reply comes back late.
      const reply: BatchReply = {
        jobId: jobIds[0] ?? '',
        outcomes: [
          { index: 0, ok: true, claimRef: 'gen-1', grant: grantOf('gen-1', 'sb_gen'), fresh: true },
          { index: 1, ok: true, claimRef: 'chosen-1', grant: grantOf('chosen-1', 'sb_chosen'), fresh: true },
        ],
      };
      dispatcher.onReply(reply);
      // The generated claimRef's sandbox goes; the client-chosen one is kept for the client's retry.
      expect(released.map(([grant]) => grant.id)).toEqual(['sb_gen']);
    } finally {
      dispatcher.close();
    }
  });
});
