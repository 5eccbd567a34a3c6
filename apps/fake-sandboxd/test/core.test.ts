import { claimRequestSchema, poolTargetSchema, type ClaimRequest, type NodeInfo, type PoolTarget } from '@warmpool/api';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeSandboxd, SandboxdRefusal, type FakeSandboxdOptions } from '../src/index.js';
import { ManualClock } from '@warmpool/harness';

const BOOT_MS = 100;
const nodes: FakeSandboxd[] = [];

function node(options: FakeSandboxdOptions = {}): { core: FakeSandboxd; clock: ManualClock } {
  const clock = new ManualClock();
  const core = new FakeSandboxd({
    coldBootMs: BOOT_MS,
    refillRate: 1_000_000,
    refillConcurrency: 1_000,
    room: 10_000,
    maxClaims: 5_000,
    clock,
    ...options,
  });
  nodes.push(core);
  return { core, clock };
}

afterEach(() => {
  for (const core of nodes.splice(0)) core.close();
});

const pool = (template: string, warm: number, extra: Partial<PoolTarget> = {}): PoolTarget =>
  poolTargetSchema.parse({ template, warm, ...extra });
const claimOf = (template: string, extra: Partial<ClaimRequest> = {}): ClaimRequest =>
  claimRequestSchema.parse({ template, ...extra });
const poolOf = (info: NodeInfo, template: string) => info.pools.find((p) => p.key.template === template);

async function refusal(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof SandboxdRefusal) return err.reason;
    throw err;
  }
  throw new Error('expected a refusal');
}

describe('FakeSandboxd refill', () => {
  it('boots a new pool up to its target, each boot taking bootMs', () => {
    const { core, clock } = node();
    const info = core.setPools([pool('img', 3)]);
    expect(poolOf(info, 'img')).toEqual({
      key: { template: 'img', net: 'none', size: 'small' },
      warm: 0,
      refilling: 3,
      target: 3,
      golden: false,
    });
    clock.advance(BOOT_MS - 1);
    expect(poolOf(core.info(), 'img')).toMatchObject({ warm: 0, refilling: 3 });
    clock.advance(1);
    expect(poolOf(core.info(), 'img')).toMatchObject({ warm: 3, refilling: 0, golden: true });
  });

  it('never has more than refillConcurrency boots in flight node-wide', () => {
    const { core, clock } = node({ refillConcurrency: 5 });
    core.setPools([pool('a', 20), pool('b', 20)]);
    for (let step = 0; step < 10; step++) {
      const info = core.info();
      expect(info.pools.reduce((n, p) => n + p.refilling, 0)).toBeLessThanOrEqual(5);
      clock.advance(BOOT_MS / 2);
    }
    const info = core.info();
    expect(info.pools.reduce((n, p) => n + p.warm, 0)).toBe(25); // 5 per boot round, 5 rounds landed
  });

  it('shares the boots in flight fairly between short pools', () => {
    const { core } = node({ refillConcurrency: 10 });
    const info = core.setPools([pool('a', 100), pool('b', 100)]);
    expect(info.pools.map((p) => p.refilling)).toEqual([5, 5]);
  });

  it('starts no more boots than refillRate per second (plus its burst)', () => {
    const { core, clock } = node({ refillRate: 10, refillBurst: 2, bootMs: 10 });
    core.setPools([pool('img', 1_000)]);
    for (let seconds = 1; seconds <= 5; seconds++) {
      clock.advance(1_000);
      const p = poolOf(core.info(), 'img');
      const started = (p?.warm ?? 0) + (p?.refilling ?? 0);
      expect(started).toBeLessThanOrEqual(2 + 10 * seconds);
      expect(started).toBeGreaterThanOrEqual(10 * seconds - 1);
    }
  });

  it('refills the key of a warm claim at once', async () => {
    const { core, clock } = node({ refillRate: 1, refillBurst: 1 });
    core.setPools([pool('img', 2)]);
    clock.advance(3_000); // two boots paced one per second, then landed
    expect(poolOf(core.info(), 'img')).toMatchObject({ warm: 2, refilling: 0 });
    await core.claim(claimOf('img'));
    expect(poolOf(core.info(), 'img')).toMatchObject({ warm: 1, refilling: 1 });
  });

  it('loses a refill boot that fails, and boots again', () => {
    let failNext = true;
    const { core, clock } = node({ bootFailureRate: 0.5, random: () => (failNext ? ((failNext = false), 0) : 0.9) });
    core.setPools([pool('img', 2)]);
    clock.advance(BOOT_MS);
    expect(poolOf(core.info(), 'img')).toMatchObject({ warm: 1, refilling: 1 });
    expect(core.stats.bootsFailed).toBe(1);
    clock.advance(BOOT_MS);
    expect(poolOf(core.info(), 'img')).toMatchObject({ warm: 2, refilling: 0 });
  });
});

describe('FakeSandboxd room', () => {
  it('parks refill and reports at_capacity while the node is full', async () => {
    const { core, clock } = node({ room: 4 });
    core.setPools([pool('img', 6)]);
    clock.advance(BOOT_MS);
    const full = core.info();
    expect(poolOf(full, 'img')).toMatchObject({ warm: 4, refilling: 0 });
    expect(full.at_capacity).toBe(true);
    expect(full.at_capacity_reason).toMatch(/room 4/);

    const claim = await core.claim(claimOf('img'));
    expect(core.info().at_capacity).toBe(true); // 3 warm + 1 claimed: still full
    core.release(claim.id);
    const refilling = core.info();
    expect(poolOf(refilling, 'img')).toMatchObject({ warm: 3, refilling: 1 });
    expect(refilling.at_capacity).toBe(true);
  });

  it('drops at_capacity once the targets fit', () => {
    const { core, clock } = node({ room: 4 });
    core.setPools([pool('img', 6)]);
    clock.advance(BOOT_MS);
    const info = core.setPools([pool('img', 4)]);
    expect(info.at_capacity).toBeUndefined();
    expect(info.at_capacity_reason).toBeUndefined();
  });

  it('is not at capacity when refill is merely paced or has nothing to do', () => {
    const { core } = node({ room: 100, refillRate: 1, refillBurst: 1 });
    expect(core.setPools([pool('img', 50)]).at_capacity).toBeUndefined();
    expect(core.setPools([]).at_capacity).toBeUndefined();
  });

  it('refuses a cold claim when there is no room to boot it', async () => {
    const { core, clock } = node({ room: 2 });
    core.setPools([pool('a', 2), pool('b', 0)]);
    clock.advance(BOOT_MS);
    expect(await refusal(core.claim(claimOf('b')))).toBe('no-room');
    expect(core.info().claimed).toBe(0);
  });
});

describe('FakeSandboxd claims', () => {
  it('hands over a warm sandbox immediately with id, token, deadline and owner_addr', async () => {
    const { core, clock } = node({ advertise: '10.0.0.7:7070' });
    core.setPools([pool('img', 1)]);
    clock.advance(BOOT_MS);
    const answer = await core.claim(claimOf('img'));
    expect(answer.id).toMatch(/^sb_[A-Za-z0-9_-]{8,}$/);
    expect(answer.token.length).toBeGreaterThanOrEqual(32);
    expect(answer.owner_addr).toBe('10.0.0.7:7070');
    expect(Date.parse(answer.deadline)).toBe(clock.now() + 300_000);
    expect(core.stats).toMatchObject({ claimsWarm: 1, claimsCold: 0 });
  });

  it('boots a cold sandbox when none is warm, answering after coldBootMs', async () => {
    const { core, clock } = node({ coldBootMs: 250, bootMs: 50 });
    core.setPools([pool('img', 0)]);
    let answered = false;
    const pending = core.claim(claimOf('img')).then((a) => ((answered = true), a));
    clock.advance(249);
    await Promise.resolve();
    expect(answered).toBe(false);
    clock.advance(1);
    const answer = await pending;
    expect(Date.parse(answer.deadline)).toBe(clock.now() + 300_000);
    expect(core.stats).toMatchObject({ claimsWarm: 0, claimsCold: 1 });
  });

  it('clones on a warm miss of a key whose golden is ready, answering after cloneMs, not coldBootMs', async () => {
    const { core, clock } = node({ coldBootMs: 90_000, cloneMs: 800, bootMs: 50 });
    core.setPools([pool('img', 1)]);
    clock.advance(50); // the refill boot lands: the golden is ready
    await core.claim(claimOf('img'));
    core.setPools([pool('img', 0)]);
    let answered = false;
    const clone = core.claim(claimOf('img')).then(() => (answered = true));
    clock.advance(799);
    await Promise.resolve();
    expect(answered).toBe(false);
    clock.advance(1);
    await clone;
    // A key without a pool (no golden) still boots cold.
    let coldAnswered = false;
    const cold = core.claim(claimOf('other')).then(() => (coldAnswered = true));
    clock.advance(89_999);
    await Promise.resolve();
    expect(coldAnswered).toBe(false);
    clock.advance(1);
    await cold;
  });

  it('delays a warm claim answer by warmClaimLatencyMs when configured', async () => {
    const { core, clock } = node({ warmClaimLatencyMs: 5 });
    core.setPools([pool('img', 1)]);
    clock.advance(BOOT_MS);
    const pending = core.claim(claimOf('img'));
    expect(core.info().claimed).toBe(1); // taken at once, answered later
    clock.advance(5);
    await expect(pending).resolves.toMatchObject({ owner_addr: expect.any(String) });
  });

  it('boots a key outside the current pool set cold, without adding a pool', async () => {
    const { core, clock } = node();
    core.setPools([pool('img', 0)]);
    const other = core.claim(claimOf('other', { claim_ref: 'ns/a' }));
    const large = core.claim(claimOf('img', { size: 'large' }));
    expect(core.info().claimed).toBe(0); // still booting
    clock.advance(BOOT_MS);
    const [a, b] = await Promise.all([other, large]);
    expect(core.get(a.id)?.key).toEqual({ template: 'other', net: 'none', size: 'small' });
    expect(core.get(b.id)?.key).toEqual({ template: 'img', net: 'none', size: 'large' });
    expect(core.info().pools.map((p) => p.key)).toEqual([{ template: 'img', net: 'none', size: 'small' }]);
    expect(core.stats.claimsCold).toBe(2);
  });

  it('refuses a cold boot of a key outside the pool set when the node has no room', async () => {
    const { core, clock } = node({ room: 1 });
    core.setPools([pool('img', 1)]);
    clock.advance(BOOT_MS);
    expect(await refusal(core.claim(claimOf('other')))).toBe('no-room');
  });

  it('refuses claims beyond maxClaims, counting cold boots under way', async () => {
    const { core, clock } = node({ maxClaims: 2 });
    core.setPools([pool('img', 0)]);
    const first = core.claim(claimOf('img'));
    const second = core.claim(claimOf('img'));
    expect(await refusal(core.claim(claimOf('img')))).toBe('max-claims');
    clock.advance(BOOT_MS);
    await Promise.all([first, second]);
    expect(await refusal(core.claim(claimOf('img')))).toBe('max-claims');
    expect(core.info().claimed).toBe(2);
  });

  it('fails a claim with provisioning-failed as configured, taking nothing', async () => {
    const { core, clock } = node({ claimFailureRate: 1 });
    core.setPools([pool('img', 1)]);
    clock.advance(BOOT_MS);
    expect(await refusal(core.claim(claimOf('img')))).toBe('provisioning-failed');
    expect(poolOf(core.info(), 'img')).toMatchObject({ warm: 1 });
    expect(core.info().claimed).toBe(0);
  });

  it('fails a cold claim whose boot fails', async () => {
    const { core, clock } = node({ bootFailureRate: 1 });
    core.setPools([pool('img', 0)]);
    const pending = refusal(core.claim(claimOf('img')));
    clock.advance(BOOT_MS);
    expect(await pending).toBe('provisioning-failed');
    expect(core.info().claimed).toBe(0);
  });

  it('lists claims by exact claim_ref, never with tokens', async () => {
    const { core, clock } = node();
    core.setPools([pool('img', 3)]);
    clock.advance(BOOT_MS);
    const a = await core.claim(claimOf('img', { claim_ref: 'ns/a' }));
    await core.claim(claimOf('img', { claim_ref: 'ns/ab' }));
    await core.claim(claimOf('img'));
    expect(core.list('ns/a').map((r) => r.id)).toEqual([a.id]);
    expect(core.list('ns/')).toEqual([]);
    expect(core.list()).toHaveLength(3);
    expect(core.list().some((r) => 'token' in r)).toBe(false);
    core.release(a.id);
    expect(core.list('ns/a')).toEqual([]);
  });
});

describe('FakeSandboxd leases', () => {
  it('reaps a claim exactly at its deadline', async () => {
    const { core, clock } = node();
    core.setPools([pool('img', 1)]);
    clock.advance(BOOT_MS);
    const { id } = await core.claim(claimOf('img', { ttl_seconds: 10 }));
    clock.advance(9_999);
    expect(core.get(id)).toBeDefined();
    clock.advance(1);
    expect(core.get(id)).toBeUndefined();
    expect(core.stats.reaps).toBe(1);
  });

  it('keeps one timer for every deadline however many claims it holds', async () => {
    const { core, clock } = node({ bootMs: 0 });
    core.setPools([pool('img', 500)]);
    clock.advance(0);
    for (let i = 0; i < 500; i++) await core.claim(claimOf('img', { ttl_seconds: 1 + (i % 97) }));
    clock.advance(0); // let the refill triggered by the claims land
    expect(clock.pending).toBeLessThanOrEqual(2); // the deadline timer (+ at most a pacing timer)
    clock.advance(97_000);
    expect(core.info().claimed).toBe(0);
    expect(core.stats.reaps).toBe(500);
  });

  it('resets the lease from now on renew, clamped to 24 h', async () => {
    const { core, clock } = node();
    core.setPools([pool('img', 1)]);
    clock.advance(BOOT_MS);
    const { id } = await core.claim(claimOf('img', { ttl_seconds: 10 }));
    clock.advance(5_000);
    expect(core.renew(id, 20)).toEqual({ deadline: new Date(clock.now() + 20_000).toISOString() });
    clock.advance(19_999);
    expect(core.get(id)).toBeDefined();
    expect(core.renew(id, 10 * 24 * 3600)).toEqual({ deadline: new Date(clock.now() + 24 * 3600_000).toISOString() });
    expect(core.renew(id, undefined)).toEqual({ deadline: new Date(clock.now() + 300_000).toISOString() });
    expect(core.renew('sb_missing', 10)).toBeUndefined();
  });

  it('grants the default lease for ttl_seconds 0 and caps long ones at 24 h', async () => {
    const { core, clock } = node({ defaultTtlSeconds: 60 });
    core.setPools([pool('img', 2)]);
    clock.advance(BOOT_MS);
    const zero = await core.claim(claimOf('img', { ttl_seconds: 0 }));
    const long = await core.claim(claimOf('img', { ttl_seconds: 1e9 }));
    expect(Date.parse(zero.deadline)).toBe(clock.now() + 60_000);
    expect(Date.parse(long.deadline)).toBe(clock.now() + 24 * 3600_000);
  });

  it('releases a claim once; the second release finds nothing', async () => {
    const { core, clock } = node();
    core.setPools([pool('img', 1)]);
    clock.advance(BOOT_MS);
    const { id } = await core.claim(claimOf('img'));
    expect(core.release(id)).toBe(true);
    expect(core.release(id)).toBe(false);
    expect(core.stats.releases).toBe(1);
  });
});

describe('FakeSandboxd pool set', () => {
  it('drains a key left out: its warm sandboxes go, the entry retires, its claims live on', async () => {
    const { core, clock } = node();
    core.setPools([pool('a', 2), pool('b', 2)]);
    clock.advance(BOOT_MS);
    const claimed = await core.claim(claimOf('b'));
    clock.advance(BOOT_MS);
    const info = core.setPools([pool('a', 2)]);
    expect(info.pools.map((p) => p.key.template)).toEqual(['a']);
    expect(info.claimed).toBe(1);
    expect(core.get(claimed.id)).toBeDefined();
    expect(core.stats.warmDestroyed).toBe(2);
    const cold = core.claim(claimOf('b'));
    clock.advance(BOOT_MS);
    await cold;
    expect(core.stats.claimsCold).toBe(1);
    expect(core.info().pools.map((p) => p.key.template)).toEqual(['a']);
  });

  it('reads warm_max 0 as no ceiling above warm', () => {
    const { core, clock } = node();
    core.setPools([pool('a', 2, { warm_max: 0 })]);
    clock.advance(BOOT_MS);
    expect(poolOf(core.info(), 'a')).toMatchObject({ warm: 2, target: 2 });
  });

  it('counts the warm sandboxes a new set trims, and how long destroying them takes', async () => {
    const { core, clock } = node({ trimMsPerVm: 1_000, refillConcurrency: 2 });
    core.setPools([pool('a', 3), pool('b', 2)]);
    for (let round = 0; round < 3; round++) clock.advance(BOOT_MS); // five boots, two at a time
    const { trimmed } = core.replacePools([pool('a', 1)]);
    expect(trimmed).toBe(4);
    expect(core.trimDurationMs(trimmed)).toBe(2_000); // two at a time
    let done = false;
    const waiting = core.awaitTrim(trimmed).then(() => (done = true));
    clock.advance(1_999);
    await Promise.resolve();
    expect(done).toBe(false);
    clock.advance(1);
    await waiting;
  });

  it('refuses a set with an egress key on a node without an egress attachment, applying none of it', () => {
    const { core, clock } = node();
    core.setPools([pool('a', 1)]);
    clock.advance(BOOT_MS);
    const before = core.info();
    expect(() => core.setPools([pool('b', 1), pool('a', 1, { net: 'egress' })])).toThrow(SandboxdRefusal);
    expect(core.info()).toEqual(before);
  });

  it('destroys the boots of a retired key when they land', () => {
    const { core, clock } = node({ room: 3 });
    core.setPools([pool('b', 3)]);
    core.setPools([pool('a', 3)]); // the node is full of b's boots until they land
    expect(poolOf(core.info(), 'a')).toMatchObject({ refilling: 0 });
    expect(core.info().at_capacity).toBe(true);
    clock.advance(BOOT_MS);
    expect(core.info().pools.map((p) => p.key.template)).toEqual(['a']);
    expect(core.stats.warmDestroyed).toBe(3);
    expect(poolOf(core.info(), 'a')).toMatchObject({ refilling: 3 });
  });

  it('keeps the boots of a key that comes back before they land', () => {
    const { core, clock } = node();
    core.setPools([pool('b', 3)]);
    core.setPools([]);
    core.setPools([pool('b', 3)]);
    expect(poolOf(core.info(), 'b')).toMatchObject({ refilling: 3 });
    clock.advance(BOOT_MS);
    expect(poolOf(core.info(), 'b')).toMatchObject({ warm: 3, refilling: 0 });
  });

  it('destroys warm sandboxes above warm_max (or the target) when the target drops', () => {
    const { core, clock } = node();
    core.setPools([pool('a', 5), pool('b', 5)]);
    clock.advance(BOOT_MS);
    const info = core.setPools([pool('a', 2, { warm_max: 4 }), pool('b', 1)]);
    expect(poolOf(info, 'a')).toMatchObject({ warm: 4, target: 2 });
    expect(poolOf(info, 'b')).toMatchObject({ warm: 1, target: 1 });
  });

  it('lists pools in the order of the last pool set', () => {
    const { core } = node();
    core.setPools([pool('a', 0), pool('b', 0)]);
    expect(core.setPools([pool('b', 0), pool('a', 0)]).pools.map((p) => p.key.template)).toEqual(['b', 'a']);
  });
});

describe('FakeSandboxd drain', () => {
  it('refuses new claims and destroys warm sandboxes, keeping live claims', async () => {
    const { core, clock } = node();
    core.setPools([pool('img', 3)]);
    clock.advance(BOOT_MS);
    const live = await core.claim(claimOf('img'));
    const info = core.drain();
    expect(info.draining).toBe(true);
    expect(poolOf(info, 'img')).toMatchObject({ warm: 0 });
    expect(info.claimed).toBe(1);
    expect(await refusal(core.claim(claimOf('img')))).toBe('draining');
    clock.advance(BOOT_MS * 5);
    expect(poolOf(core.info(), 'img')).toMatchObject({ warm: 0, refilling: 0 }); // no refill while draining
    expect(core.get(live.id)).toBeDefined();
  });

  it('lifts the drain and refills', () => {
    const { core, clock } = node();
    core.setPools([pool('img', 3)]);
    core.drain();
    clock.advance(BOOT_MS); // boots landing during the drain are destroyed
    expect(poolOf(core.info(), 'img')).toMatchObject({ warm: 0, refilling: 0 });
    const info = core.undrain();
    expect(info.draining).toBeUndefined();
    expect(poolOf(info, 'img')).toMatchObject({ refilling: 3 });
    clock.advance(BOOT_MS);
    expect(poolOf(core.info(), 'img')).toMatchObject({ warm: 3 });
  });
});

describe('FakeSandboxd close', () => {
  it('clears every timer and rejects claims still booting', async () => {
    const { core, clock } = node({ refillRate: 1, refillBurst: 1 });
    core.setPools([pool('img', 5), pool('cold', 0)]);
    const pending = refusal(core.claim(claimOf('cold')));
    core.close();
    expect(await pending).toBe('closed');
    expect(clock.pending).toBe(0);
    expect(await refusal(core.claim(claimOf('img')))).toBe('closed');
  });

  it('rejects options out of range', () => {
    expect(() => new FakeSandboxd({ bootFailureRate: 2 })).toThrow(RangeError);
    expect(() => new FakeSandboxd({ room: -1 })).toThrow(RangeError);
    expect(() => new FakeSandboxd({ defaultTtlSeconds: 0 })).toThrow(RangeError);
  });
});
