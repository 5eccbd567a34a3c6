// RedisClose: a graceful close that waits on Redis gets at most the Redis
// timeout (time its own work runs not counted); past it, or once Redis is
// seen away, its connections are cut and every later close is cut at once.
import { silentLogger } from '@warmpool/runtime';
import { describe, expect, it } from 'vitest';
import { RedisClose, type Draining } from '../../src/provisioning/redis-close.js';

const TIMEOUT_MS = 200;

/** A graceful close that ends when it is cut (its connections dropped), or when `finish()` is called. */
function gracefulClose(): { closing: Promise<void>; cut: () => void; finish: () => void; cuts: () => number } {
  let end: () => void = () => undefined;
  let cuts = 0;
  const closing = new Promise<void>((resolve) => (end = resolve));
  return {
    closing,
    cut: () => {
      cuts++;
      end();
    },
    finish: () => end(),
    cuts: () => cuts,
  };
}

/** Work a close drains (a worker's batches): `start` runs one for `ms`, then calls `then`. */
function work(): { draining: Draining; start: (ms: number, then: () => void) => void } {
  const running = new Set<Promise<void>>();
  return {
    start: (ms, then) => {
      const one: Promise<void> = new Promise<void>((resolve) => setTimeout(resolve, ms)).then(() => {
        running.delete(one);
        then();
      });
      running.add(one);
    },
    draining: {
      drained: async () => {
        while (running.size > 0) await Promise.all([...running]);
      },
      busy: () => running.size > 0,
    },
  };
}

describe('RedisClose', () => {
  it('waits for a close that Redis answers, and cuts nothing', async () => {
    const close = new RedisClose({ timeoutMs: 5_000, answering: () => true, logger: silentLogger });
    const graceful = gracefulClose();
    setTimeout(graceful.finish, 50);
    await close.closeOrCut('a queue', graceful.closing, graceful.cut);
    expect(graceful.cuts()).toBe(0);
  });

  it('cuts a close that waits longer than the Redis timeout, and every later one at once', async () => {
    const close = new RedisClose({ timeoutMs: TIMEOUT_MS, answering: () => true, logger: silentLogger });
    const first = gracefulClose();
    const started = performance.now();
    await close.closeOrCut('a worker', first.closing, first.cut);
    expect(first.cuts()).toBe(1);
    expect(performance.now() - started).toBeGreaterThanOrEqual(TIMEOUT_MS - 5);

    const second = gracefulClose();
    const then = performance.now();
    await close.closeOrCut('a queue', second.closing, second.cut);
    expect(second.cuts()).toBe(1);
    expect(performance.now() - then).toBeLessThan(TIMEOUT_MS);
  });

  it('does not count the time work runs in the Redis timeout: work that starts while it waits is drained too', async () => {
    const close = new RedisClose({ timeoutMs: TIMEOUT_MS, answering: () => true, logger: silentLogger });
    const graceful = gracefulClose();
    const batches = work();
    // Handed in after the close began (as BullMQ hands a worker the job a completion fetched), running past T; the
    // graceful close ends once it is done.
    setTimeout(() => batches.start(3 * TIMEOUT_MS, () => setTimeout(graceful.finish, 20)), 20);
    await close.closeOrCut('a worker', graceful.closing, graceful.cut, batches.draining);
    expect(graceful.cuts()).toBe(0);
  });

  it('cuts at once while the commands connection says Redis is away', async () => {
    const close = new RedisClose({ timeoutMs: 5_000, answering: () => false, logger: silentLogger });
    const graceful = gracefulClose();
    await close.closeOrCut('a worker', graceful.closing, graceful.cut);
    expect(graceful.cuts()).toBe(1);
  });

  it('leaves a cut close that still waits on Redis after a second, so a shutdown is never held by it', async () => {
    const close = new RedisClose({ timeoutMs: 5_000, answering: () => false, logger: silentLogger });
    const never = new Promise<void>(() => undefined);
    const started = performance.now();
    // BullMQ disconnects a connection only once its handshake has settled; with Redis stopped that waits its timeout.
    await close.closeOrCut('a worker', never, () => never);
    expect(performance.now() - started).toBeLessThan(2_000);
  });

  it("passes on a graceful close's own failure, and never leaves it unhandled while it cuts", async () => {
    const answering = new RedisClose({ timeoutMs: 5_000, answering: () => true, logger: silentLogger });
    await expect(
      answering.closeOrCut('a queue', Promise.reject(new Error('QUIT refused')), () => undefined),
    ).rejects.toThrow('QUIT refused');

    const away = new RedisClose({ timeoutMs: 5_000, answering: () => false, logger: silentLogger });
    let fail: (err: Error) => void = () => undefined;
    const closing = new Promise<void>((_resolve, reject) => (fail = reject));
    await away.closeOrCut('a worker', closing, async () => {
      fail(new Error('Connection is closed'));
      await new Promise((resolve) => setTimeout(resolve, 20));
    });
  });
});
