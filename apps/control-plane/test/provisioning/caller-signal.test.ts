// A caller who gives up: answered Timeout at once, the claim going on; a fresh
// sandbox served under a generated claimRef afterwards is released, nothing
// else is; the claim path stops listening once answered; and a call that
// needs an AbortSignal (a spilled claim's peer call) gets one that follows
// the caller.
import { describe, expect, it } from 'vitest';
import {
  abortSignalOf,
  answerUntilGivenUp,
  callerGoneWith,
  type CallerGone,
} from '../../src/provisioning/caller-signal.js';
import { ClaimFailure, type ClaimOrder, type ServedGrant } from '../../src/provisioning/claim-service.js';
import { aGrant } from '../support/grants.js';

/** A caller that gives up when told to, counting who listens. */
class Caller implements CallerGone {
  gone = false;
  readonly listeners = new Set<() => void>();

  onGone(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  giveUp(): void {
    this.gone = true;
    for (const listener of [...this.listeners]) {
      this.listeners.delete(listener);
      listener();
    }
  }
}

const ORDER: ClaimOrder = {
  namespace: 'ns',
  warmPool: 'pool',
  claimRef: 'c-1',
  ttlSeconds: 300,
  owner: { door: 'http', digest: 'd' },
  claimRefGenerated: true,
};

function grant(fresh: boolean): ServedGrant {
  return aGrant(fresh ? { fresh: true } : {});
}

function deferred<T>(): { promise: Promise<T>; resolve(value: T): void } {
  let resolve: (value: T) => void = () => undefined;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

describe('answerUntilGivenUp', () => {
  it('answers the grant, and stops listening once answered', async () => {
    const caller = new Caller();
    const served = grant(true);
    await expect(answerUntilGivenUp(ORDER, Promise.resolve(served), caller, () => undefined)).resolves.toBe(served);
    expect(caller.listeners.size).toBe(0);
  });

  it('answers Timeout when the caller gives up, and releases the fresh sandbox served after', async () => {
    const caller = new Caller();
    const answer = deferred<ServedGrant>();
    const released: string[] = [];
    const call = answerUntilGivenUp(ORDER, answer.promise, caller, (g, why) => released.push(`${g.id}: ${why}`));
    caller.giveUp();
    await expect(call).rejects.toEqual(new ClaimFailure('Timeout', 'the caller gave up'));
    answer.resolve(grant(true));
    await answer.promise;
    await Promise.resolve();
    expect(released).toEqual(['sb_1: the caller gave up']);
  });

  it('keeps what is not this call’s own: a replayed grant, or a claimRef the client chose', async () => {
    for (const [order, fresh] of [
      [ORDER, false],
      [{ ...ORDER, claimRefGenerated: false }, true],
    ] as const) {
      const caller = new Caller();
      caller.giveUp();
      const released: string[] = [];
      const call = answerUntilGivenUp(order, Promise.resolve(grant(fresh)), caller, (g) => released.push(g.id));
      await expect(call).rejects.toBeInstanceOf(ClaimFailure);
      await new Promise((resolve) => setImmediate(resolve));
      expect(released).toEqual([]);
    }
  });

  it('passes a failure through, and stops listening', async () => {
    const caller = new Caller();
    const failure = new ClaimFailure('NoCapacity', 'full');
    await expect(answerUntilGivenUp(ORDER, Promise.reject(failure), caller, () => undefined)).rejects.toBe(failure);
    expect(caller.listeners.size).toBe(0);
  });
});

describe('a caller from an AbortSignal, and an AbortSignal from a caller', () => {
  it('callerGoneWith follows the signal', () => {
    const controller = new AbortController();
    const caller = callerGoneWith(controller.signal);
    let heard = 0;
    caller.onGone(() => heard++);
    const stopped = caller.onGone(() => heard++);
    stopped();
    expect(caller.gone).toBe(false);
    controller.abort();
    expect(caller.gone).toBe(true);
    expect(heard).toBe(1);
  });

  it('abortSignalOf aborts when the caller gives up, or at once when it has', () => {
    const caller = new Caller();
    const { signal } = abortSignalOf(caller);
    expect(signal.aborted).toBe(false);
    caller.giveUp();
    expect(signal.aborted).toBe(true);
    expect(abortSignalOf(caller).signal.aborted).toBe(true);
  });

  it('abortSignalOf stops listening once its call is over', () => {
    const caller = new Caller();
    const { signal, stop } = abortSignalOf(caller);
    expect(caller.listeners.size).toBe(1);
    stop();
    expect(caller.listeners.size).toBe(0);
    caller.giveUp();
    expect(signal.aborted).toBe(false);
  });
});
