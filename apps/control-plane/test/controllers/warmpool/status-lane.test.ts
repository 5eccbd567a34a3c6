// A term's status lane: the latest batch wins, one loop writes, and no batch
// handed over is left behind while the term lasts.
import { describe, expect, it, vi } from 'vitest';
import { StatusLane, type StatusBatch } from '../../../src/controllers/warmpool/status-queue.js';

const batch = (now: number): StatusBatch => ({ statuses: [], now });

describe('StatusLane', () => {
  it('writes only the latest of the batches handed over while a write is in flight', async () => {
    const written: number[] = [];
    let release = (): void => undefined;
    const lane = new StatusLane(new AbortController().signal, async (b) => {
      written.push(b.now);
      if (b.now === 1) await new Promise<void>((resolve) => (release = resolve));
    });
    lane.submit(batch(1));
    for (let now = 2; now <= 5; now++) lane.submit(batch(now));
    release();
    await vi.waitFor(() => expect(written).toEqual([1, 5]));
  });

  it.each([0, 1, 2, 3, 4, 5])(
    'writes a batch handed over as its loop finishes (submitted %i microtasks later)',
    async (depth) => {
      const written: number[] = [];
      const lane = new StatusLane(new AbortController().signal, async (b) => {
        written.push(b.now);
      });
      lane.submit(batch(1));
      let later = Promise.resolve();
      for (let i = 0; i < depth; i++) later = later.then(() => undefined);
      void later.then(() => lane.submit(batch(2)));
      await vi.waitFor(() => expect(written).toEqual([1, 2]));
    },
  );

  it('writes nothing once the term has ended', async () => {
    const written: number[] = [];
    const term = new AbortController();
    const lane = new StatusLane(term.signal, async (b) => {
      written.push(b.now);
    });
    term.abort();
    lane.submit(batch(1));
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(written).toEqual([]);
  });
});
