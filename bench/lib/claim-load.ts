// The load of the claims bench: `concurrency` claims kept in flight against one
// path for a while, each answered claim's latency kept. Only a 200 is a claim
// (`claims` is always `latencies.length`); anything else, thrown or answered,
// is an error and leaves no latency behind.
import type { Pool } from 'undici';

export interface PathResult {
  latencies: number[];
  /**
   * The latencies of the claims asked once the turn's first OPENING_MS had passed: the turn opens with all its
   * callers asking at once, a burst no steady load has, whose first batches are often the turn's slowest.
   */
  afterOpening: number[];
  claims: number;
  errors: number;
  elapsedMs: number;
}

/** How long a turn's opening lasts, for PathResult.afterOpening. */
export const OPENING_MS = 500;

/** Keeps `concurrency` claims in flight for `durationMs`. */
export async function drive(
  pool: Pool,
  concurrency: number,
  durationMs: number,
  request: (i: number) => { path: string; body: string; authorization: string },
): Promise<PathResult> {
  const latencies: number[] = [];
  const afterOpening: number[] = [];
  let errors = 0;
  let next = 0;
  const started = performance.now();
  const end = started + durationMs;
  const opened = started + OPENING_MS;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        const { path, body, authorization } = request(next++);
        const t0 = performance.now();
        try {
          const res = await pool.request({
            method: 'POST',
            path,
            body,
            headers: { authorization, 'content-type': 'application/json' },
          });
          await res.body.text();
          if (res.statusCode === 200) {
            const latency = performance.now() - t0;
            latencies.push(latency);
            if (t0 >= opened) afterOpening.push(latency);
          } else errors++;
        } catch {
          errors++;
        }
      }
    }),
  );
  return { latencies, afterOpening, claims: latencies.length, errors, elapsedMs: performance.now() - started };
}

/**
 * Results that ran one after another, as one: their elapsed times add up. For results that ran side by side, take the
 * longest elapsed time instead.
 */
export function merge(results: PathResult[]): PathResult {
  return {
    latencies: results.flatMap((r) => r.latencies),
    afterOpening: results.flatMap((r) => r.afterOpening),
    claims: results.reduce((n, r) => n + r.claims, 0),
    errors: results.reduce((n, r) => n + r.errors, 0),
    elapsedMs: results.reduce((n, r) => n + r.elapsedMs, 0),
  };
}
