// The load of the claims bench: `concurrency` claims kept in flight against one
// path for a while, each answered claim's latency kept. Only a 200 is a claim
// (`claims` is always `latencies.length`); anything else, thrown or answered,
// is an error and leaves no latency behind.
import type { Pool } from 'undici';

export interface PathResult {
  latencies: number[];
  claims: number;
  errors: number;
  elapsedMs: number;
}

/** Keeps `concurrency` claims in flight for `durationMs`. */
export async function drive(
  pool: Pool,
  concurrency: number,
  durationMs: number,
  request: (i: number) => { path: string; body: string; authorization: string },
): Promise<PathResult> {
  const latencies: number[] = [];
  let errors = 0;
  let next = 0;
  const started = performance.now();
  const end = started + durationMs;
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
          if (res.statusCode === 200) latencies.push(performance.now() - t0);
          else errors++;
        } catch {
          errors++;
        }
      }
    }),
  );
  return { latencies, claims: latencies.length, errors, elapsedMs: performance.now() - started };
}

/**
 * Results that ran one after another, as one: their elapsed times add up. For results that ran side by side, take the
 * longest elapsed time instead.
 */
export function merge(results: PathResult[]): PathResult {
  return {
    latencies: results.flatMap((r) => r.latencies),
    claims: results.reduce((n, r) => n + r.claims, 0),
    errors: results.reduce((n, r) => n + r.errors, 0),
    elapsedMs: results.reduce((n, r) => n + r.elapsedMs, 0),
  };
}
