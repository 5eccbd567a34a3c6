// The Controller keeps one Provisioner per driven pool; a Provisioner batches
// claims and answers each with its own result; deleting one refuses new claims
// and still serves the enqueued ones.
import type { SandboxTemplate, SandboxWarmPool } from '@warmpool/api';
import { poolObject, templateObject } from '@warmpool/harness';
import type { Batch, BatcherOptions } from '@warmpool/batcher';
import type { Lister } from '@warmpool/kube';
import { silentLogger } from '@warmpool/runtime';
import { describe, expect, it, vi } from 'vitest';
import { ClaimFailure, ownerMark, type ClaimOrder, type ServedGrant } from '../../src/provisioning/claim-service.js';
import { ProvisionerRegistry } from '../../src/provisioning/provisioners.js';
import { Provisioner, type PendingClaim } from '../../src/provisioning/provisioner.js';

function lister<T extends { metadata?: { namespace?: string; name?: string } }>(items: () => T[]): Lister<T> {
  return {
    list: () => items(),
    get: (namespace: string, name?: string) =>
      items().find((i) => i.metadata?.namespace === namespace && i.metadata?.name === name),
    get size() {
      return items().length;
    },
  } as unknown as Lister<T>;
}

const order = (warmPool: string, claimRef: string): ClaimOrder => ({
  namespace: 'ns',
  warmPool,
  claimRef,
  ttlSeconds: 60,
  owner: { door: 'http', digest: '0123456789abcdef0123456789abcdef' },
});

/** What a node grants a claim of `warmPool`. */
const grantOf = (item: PendingClaim, warmPool: string): ServedGrant => ({
  id: `sb_${item.order.claimRef}`,
  token: 't',
  deadline: '',
  ownerAddr: '',
  node: 'n',
  namespace: 'ns',
  warmPool,
  claimRef: item.order.claimRef,
  tier: 'warm',
  door: item.order.owner.door,
  owner: ownerMark(item.order.owner),
});

describe('ProvisionerRegistry', () => {
  function setup(batcher = { idleMs: 5, maxDurationMs: 50 }, rejoinMs?: number) {
    let pools: SandboxWarmPool[] = [
      poolObject('ns', 'py', 'py-tpl', 2),
      poolObject('ns', 'up', 'up-tpl', 1),
      poolObject('ns', 'orphan', 'missing', 1),
    ];
    const templates: SandboxTemplate[] = [
      templateObject('ns', 'py-tpl', 'img:1'),
      templateObject('ns', 'up-tpl', 'img:2', { optIn: false }),
    ];
    const batches: Array<{ pool: string; claimRefs: string[] }> = [];
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    const dispatch = async (provisioner: Provisioner, batch: Batch<PendingClaim>): Promise<void> => {
      batches.push({ pool: provisioner.name, claimRefs: batch.items.map((i) => i.order.claimRef) });
      await gate;
      for (const item of batch.items) item.resolve(grantOf(item, provisioner.name));
    };
    const controller = new ProvisionerRegistry({
      pools: lister(() => pools),
      templates: lister(() => templates),
      dispatch,
      batcher,
      ...(rejoinMs !== undefined ? { rejoinMs } : {}),
      logger: silentLogger,
    });
    return { controller, batches, release, setPools: (next: SandboxWarmPool[]) => (pools = next) };
  }

  it('keeps a Provisioner for each driven pool only', () => {
    const { controller } = setup();
    controller.sync();
    expect(controller.list().map((p) => `${p.namespace}/${p.name}`)).toEqual(['ns/py']);
    expect(controller.get('ns', 'py')?.key).toEqual({ template: 'img:1', net: 'none', size: 'small' });
  });

  it('says why a pool has none: PoolNotFound, or NotDriven', () => {
    const { controller } = setup();
    controller.sync();
    expect(controller.refusal('ns', 'nope').reason).toBe('PoolNotFound');
    expect(controller.refusal('ns', 'up').reason).toBe('NotDriven');
    expect(controller.refusal('ns', 'orphan').reason).toBe('NotDriven');
  });

  it('batches concurrent claims into one dispatch, answering each its own result', async () => {
    const { controller, batches, release } = setup();
    controller.sync();
    const provisioner = controller.get('ns', 'py') as Provisioner;
    const answers = Promise.all(['a', 'b', 'c'].map((ref) => provisioner.add(order('py', ref))));
    release();
    expect((await answers).map((g) => g.id)).toEqual(['sb_a', 'sb_b', 'sb_c']);
    expect(batches).toEqual([{ pool: 'py', claimRefs: ['a', 'b', 'c'] }]);
  });

  it('with idle 0, sends a claim at the end of its turn while no batch is out, and holds claims until the out batch is answered', async () => {
    const { controller, batches, release } = setup({ idleMs: 0, maxDurationMs: 60_000 });
    controller.sync();
    const provisioner = controller.get('ns', 'py') as Provisioner;
    const first = provisioner.add(order('py', 'a'));
    await new Promise((resolve) => setImmediate(resolve));
    expect(batches).toEqual([{ pool: 'py', claimRefs: ['a'] }]);
    const later = ['b', 'c'].map((ref) => provisioner.add(order('py', ref)));
    await new Promise((resolve) => setImmediate(resolve));
    expect(batches).toHaveLength(1);
    release();
    await expect(first).resolves.toMatchObject({ id: 'sb_a' });
    expect((await Promise.all(later)).map((g) => g.id)).toEqual(['sb_b', 'sb_c']);
    expect(batches).toEqual([
      { pool: 'py', claimRefs: ['a'] },
      { pool: 'py', claimRefs: ['b', 'c'] },
    ]);
    await controller.close();
  });

  describe('with a rejoin gap, claims held behind an answered batch wait for its callers to ask again', () => {
    const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
    /** A Provisioner whose batches are only recorded: the spec answers their claims itself. */
    const answeredByHand = (rejoinMs: number, batcher: Partial<BatcherOptions> = {}) => {
      const sent: Array<readonly PendingClaim[]> = [];
      const provisioner = new Provisioner({
        namespace: 'ns',
        name: 'py',
        key: { template: 'img:1', net: 'none', size: 'small' },
        batcher: { idleMs: 0, maxDurationMs: 60_000, ...batcher },
        rejoinMs,
        dispatch: async (_, batch) => {
          sent.push(batch.items);
        },
      });
      /** The claimRefs of each batch sent so far. */
      const refs = (): string[][] => sent.map((items) => items.map((i) => i.order.claimRef));
      const answerAll = (): void => {
        for (const items of sent) for (const item of items) item.resolve(grantOf(item, 'py'));
      };
      return { provisioner, sent, refs, answerAll };
    };

    it('goes as soon as as many new claims came as the batch answered: the held and the returning claims together', async () => {
      const { controller, batches, release } = setup({ idleMs: 0, maxDurationMs: 60_000 }, 60_000);
      controller.sync();
      const provisioner = controller.get('ns', 'py') as Provisioner;
      const out = ['a', 'b'].map((ref) => provisioner.add(order('py', ref)));
      await turn();
      const held = provisioner.add(order('py', 'c'));
      // Each caller of the answered batch asks again as soon as it has its answer (a closed loop).
      const again = out.map(async (answer, i) => {
        await answer;
        return provisioner.add(order('py', `again-${i}`));
      });
      release();
      expect((await Promise.all([held, ...(await Promise.all(again))])).map((g) => g.id)).toEqual([
        'sb_c',
        'sb_again-0',
        'sb_again-1',
      ]);
      expect(batches).toEqual([
        { pool: 'py', claimRefs: ['a', 'b'] },
        { pool: 'py', claimRefs: ['c', 'again-0', 'again-1'] },
      ]);
      await controller.close();
    });

    it('does not wait again for callers answered early and back before the batch’s last answer', async () => {
      const { provisioner, sent, refs } = answeredByHand(60_000);
      const a = provisioner.add(order('py', 'a'));
      const b = provisioner.add(order('py', 'b'));
      await turn();
      const [first, second] = sent[0] ?? [];
      // a is answered first (its node answered sooner) and its caller asks again before b's answer.
      first?.resolve(grantOf(first, 'py'));
      await a;
      const aAgain = provisioner.add(order('py', 'a-again'));
      second?.resolve(grantOf(second, 'py'));
      await b;
      const bAgain = provisioner.add(order('py', 'b-again'));
      await turn();
      expect(refs()).toEqual([
        ['a', 'b'],
        ['a-again', 'b-again'],
      ]);
      for (const item of sent[1] ?? []) item.resolve(grantOf(item, 'py'));
      await Promise.all([aAgain, bAgain]);
      await provisioner.stop();
    });

    it('goes at the gap when fewer come back, and never later than the max duration', async () => {
      // On a fake clock, so that a stall of the machine cannot pass the gap between two steps; turns stay real.
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
      try {
        const { controller, batches, release } = setup({ idleMs: 0, maxDurationMs: 60_000 }, 40);
        controller.sync();
        const provisioner = controller.get('ns', 'py') as Provisioner;
        const out = ['a', 'b'].map((ref) => provisioner.add(order('py', ref)));
        await turn();
        const held = provisioner.add(order('py', 'c'));
        release();
        await Promise.all(out);
        const returned = provisioner.add(order('py', 'again'));
        vi.advanceTimersByTime(39);
        await turn();
        expect(batches).toHaveLength(1);
        vi.advanceTimersByTime(1);
        await expect(Promise.all([held, returned])).resolves.toMatchObject([{ id: 'sb_c' }, { id: 'sb_again' }]);
        expect(batches[1]).toEqual({ pool: 'py', claimRefs: ['c', 'again'] });
        await controller.close();

        // The max duration bounds a held claim whatever the gap.
        const bounded = setup({ idleMs: 0, maxDurationMs: 30 }, 60_000);
        bounded.controller.sync();
        const pool = bounded.controller.get('ns', 'py') as Provisioner;
        const first = pool.add(order('py', 'a'));
        await turn();
        const waiting = pool.add(order('py', 'b'));
        bounded.release();
        await first;
        // Nobody comes back: the 30 ms bound sends it, long before the 60 s gap.
        vi.advanceTimersByTime(30);
        await expect(waiting).resolves.toMatchObject({ id: 'sb_b' });
        await bounded.controller.close();
      } finally {
        vi.useRealTimers();
      }
    });

    it('stops waiting once a gap passed with the callers not back, and waits again once they come back within a gap of an answer', async () => {
      // The gap and the probe's window on a fake clock, so that a stall of the machine cannot pass them; turns stay real.
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
      try {
        const { provisioner, sent, refs } = answeredByHand(40);
        const answer = async (batch: number): Promise<void> => {
          for (const item of sent[batch] ?? []) item.resolve(grantOf(item, 'py'));
          await turn();
        };
        const claims = [provisioner.add(order('py', 'a'))];
        await turn();
        claims.push(provisioner.add(order('py', 'b')));
        await answer(0);
        // a's caller does not ask again (a one-shot claim): b waits the whole gap.
        vi.advanceTimersByTime(39);
        await turn();
        expect(refs()).toEqual([['a']]);
        vi.advanceTimersByTime(1);
        await turn();
        expect(refs()).toEqual([['a'], ['b']]);

        // From now on a held claim goes on the answer.
        claims.push(provisioner.add(order('py', 'c')));
        await answer(1);
        expect(refs()).toEqual([['a'], ['b'], ['c']]);

        // b's caller asks again within a gap of b's answer (at its edge): the hold waits for callers again, here c's.
        vi.advanceTimersByTime(40);
        claims.push(provisioner.add(order('py', 'b-again')));
        await answer(2);
        expect(refs()).toEqual([['a'], ['b'], ['c']]);
        claims.push(provisioner.add(order('py', 'c-again')));
        await turn();
        expect(refs()).toEqual([['a'], ['b'], ['c'], ['b-again', 'c-again']]);
        await answer(3);
        await Promise.all(claims);
        await provisioner.stop();
      } finally {
        vi.useRealTimers();
      }
    });

    it('sends every claim held behind an answered batch, a full batch and its remainder alike, within the max duration', async () => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
      try {
        const { provisioner, refs, answerAll } = answeredByHand(60_000, { maxDurationMs: 100, maxItems: 3 });
        const claims = [provisioner.add(order('py', 'a'))];
        await turn();
        for (const ref of ['b', 'c', 'd', 'e']) claims.push(provisioner.add(order('py', ref)));
        await turn();
        // The hold ends as b, c, d fill a batch: e, read in the same turn, goes with them rather than wait a hold.
        expect(refs()).toEqual([['a'], ['b', 'c', 'd'], ['e']]);
        vi.advanceTimersByTime(1);
        claims.push(provisioner.add(order('py', 'f')));
        await turn();
        vi.advanceTimersByTime(100);
        await turn();
        expect(refs()).toEqual([['a'], ['b', 'c', 'd'], ['e'], ['f']]);
        answerAll();
        await Promise.all(claims);
        await provisioner.stop();
      } finally {
        vi.useRealTimers();
      }
    });

    it('does not hold a full batch behind a batch out: each goes at once, not a max duration apart', async () => {
      const { provisioner, refs, answerAll } = answeredByHand(60_000, { maxItems: 2 });
      const claims = [provisioner.add(order('py', 'a'))];
      await turn();
      for (const ref of ['b', 'c', 'd', 'e', 'f', 'g']) claims.push(provisioner.add(order('py', ref)));
      await turn();
      expect(refs()).toEqual([['a'], ['b', 'c'], ['d', 'e'], ['f', 'g']]);
      answerAll();
      await Promise.all(claims);
      await provisioner.stop();
    });
  });

  it('deleting a pool stops its Provisioner: new claims are refused, enqueued ones are still served', async () => {
    const { controller, release, setPools } = setup();
    controller.sync();
    const provisioner = controller.get('ns', 'py') as Provisioner;
    const enqueued = provisioner.add(order('py', 'early'));
    setPools([]);
    controller.sync();
    expect(controller.list()).toEqual([]);
    await expect(provisioner.add(order('py', 'late'))).rejects.toBeInstanceOf(ClaimFailure);
    release();
    await expect(enqueued).resolves.toMatchObject({ id: 'sb_early' });
    await controller.close();
  });
});
