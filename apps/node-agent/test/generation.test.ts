import { GenerationGuard } from '@warmpool/node-agent';
import { describe, expect, it } from 'vitest';

function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

const ok = (): Promise<number> => Promise.resolve(200);
const accepted = (status: number): boolean => status === 200;

describe('GenerationGuard', () => {
  it('applies the first push on a node that never had one', async () => {
    const guard = new GenerationGuard({ recovered: true });
    expect(await guard.apply(0, ok, accepted)).toEqual({ outcome: 'applied', result: 200 });
    expect(guard.applied).toBe(0);
  });

  it('refuses a push older than the applied generation without running it', async () => {
    const guard = new GenerationGuard({ recovered: true });
    await guard.apply(5, ok, accepted);
    let ran = false;
    const outcome = await guard.apply(
      4,
      async () => {
        ran = true;
        return 200;
      },
      accepted,
    );
    expect(outcome).toEqual({ outcome: 'stale', appliedGeneration: 5 });
    expect(ran).toBe(false);
  });

  it('runs an equal generation again (a retried push is idempotent)', async () => {
    const guard = new GenerationGuard({ recovered: true });
    await guard.apply(5, ok, accepted);
    expect((await guard.apply(5, ok, accepted)).outcome).toBe('applied');
  });

  it('runs pushes one at a time, in arrival order, so a later arrival is judged after an earlier one applied', async () => {
    const guard = new GenerationGuard({ recovered: true });
    const first = deferred<number>();
    const order: number[] = [];
    const newer = guard.apply(
      7,
      async () => {
        order.push(7);
        return first.promise;
      },
      accepted,
    );
    const older = guard.apply(
      6,
      async () => {
        order.push(6);
        return 200;
      },
      accepted,
    );
    await Promise.resolve();
    expect(order).toEqual([7]);
    first.resolve(200);
    expect(await newer).toEqual({ outcome: 'applied', result: 200 });
    expect(await older).toEqual({ outcome: 'stale', appliedGeneration: 7 });
    expect(order).toEqual([7]);
  });

  it('keeps the applied generation when sandboxd refuses the push or cannot be reached', async () => {
    const guard = new GenerationGuard({ recovered: true });
    await guard.apply(3, ok, accepted);
    expect(await guard.apply(4, () => Promise.resolve(400), accepted)).toEqual({ outcome: 'rejected', result: 400 });
    await expect(guard.apply(5, () => Promise.reject(new Error('down')), accepted)).rejects.toThrow('down');
    expect(guard.applied).toBe(3);
    expect((await guard.apply(4, ok, accepted)).outcome).toBe('applied');
  });

  it('counts a push that failed after sandboxd may have taken it as applied, and nothing else that failed', async () => {
    const guard = new GenerationGuard({ recovered: true });
    const sentNoAnswer = (err: unknown): boolean => (err as Error).message === 'sent, no answer';
    await expect(guard.apply(3, () => Promise.reject(new Error('not sent')), accepted, sentNoAnswer)).rejects.toThrow();
    expect(guard.applied).toBeUndefined();
    await expect(
      guard.apply(5, () => Promise.reject(new Error('sent, no answer')), accepted, sentNoAnswer),
    ).rejects.toThrow();
    expect(guard.applied).toBe(5);
    expect(await guard.apply(4, ok, accepted)).toEqual({ outcome: 'stale', appliedGeneration: 5 });
    expect((await guard.apply(5, ok, accepted)).outcome).toBe('applied');
  });

  it('refuses every push until the generation applied before a restart is recovered', async () => {
    const guard = new GenerationGuard({ recovered: false });
    expect(await guard.apply(9, ok, accepted)).toEqual({ outcome: 'not-recovered' });
    guard.recover(8);
    expect(await guard.apply(7, ok, accepted)).toEqual({ outcome: 'stale', appliedGeneration: 8 });
    expect((await guard.apply(9, ok, accepted)).outcome).toBe('applied');
  });

  it('recovers to "no generation" for a node that never published one', async () => {
    const guard = new GenerationGuard({ recovered: false });
    guard.recover(undefined);
    expect((await guard.apply(0, ok, accepted)).outcome).toBe('applied');
  });

  it('does not take a read-back number no control plane can issue as its floor', async () => {
    for (const impossible of [-1, 1.5, Number.MAX_SAFE_INTEGER + 2]) {
      const guard = new GenerationGuard({ recovered: false });
      guard.recover(impossible);
      expect(guard.applied).toBeUndefined();
      expect((await guard.apply(0, ok, accepted)).outcome).toBe('applied');
    }
  });

  it('tells listeners when the applied generation moves, and only then', async () => {
    const guard = new GenerationGuard({ recovered: true });
    const seen: number[] = [];
    guard.onApplied((g) => seen.push(g));
    await guard.apply(1, ok, accepted);
    await guard.apply(1, ok, accepted);
    await guard.apply(2, ok, accepted);
    expect(seen).toEqual([1, 2]);
  });
});
