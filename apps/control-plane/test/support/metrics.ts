// What a control plane says about itself over HTTP and on /metrics, for specs
// that observe it there rather than reaching into it.
import { eventually } from '@warmpool/harness';
import type { ControlPlane } from '../../src/options.js';

export interface Sample {
  labels: ReadonlyMap<string, string>;
  value: number;
}

/** Every sample of `name` whose labels include `labels`. */
export async function metricSamples(
  cp: ControlPlane,
  name: string,
  labels: Record<string, string> = {},
): Promise<Sample[]> {
  const samples: Sample[] = [];
  for (const line of (await cp.registry.metrics()).split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{([^}]*)\})? (\S+)$/.exec(line);
    if (match?.[1] !== name) continue;
    const given = new Map([...(match[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1] ?? '', m[2] ?? '']));
    if (Object.entries(labels).every(([key, value]) => given.get(key) === value))
      samples.push({ labels: given, value: Number(match[3]) });
  }
  return samples;
}

/** The sum of every sample of `name` whose labels include `labels`. */
export async function metricSum(cp: ControlPlane, name: string, labels: Record<string, string> = {}): Promise<number> {
  return (await metricSamples(cp, name, labels)).reduce((total, sample) => total + sample.value, 0);
}

/** Whether the replica's claim API can claim (Redis, caches): its /readyz/claims answers 200. */
export async function claimsReady(cp: ControlPlane): Promise<boolean> {
  if (cp.url === undefined) throw new Error('the control plane serves no health address');
  const res = await fetch(`${cp.url}/readyz/claims`);
  await res.body?.cancel();
  return res.status === 200;
}

const JANITOR_SWEEPS = 'warmpool_controlplane_claim_janitor_sweeps_total';

/** Waits for `sweeps` whole janitor sweeps of the control plane from now; fails on a partial one meanwhile. */
export async function janitorSweeps(cp: ControlPlane, sweeps: number, timeoutMs = 20_000): Promise<void> {
  const ok = { outcome: 'ok' };
  const before = await metricSum(cp, JANITOR_SWEEPS, ok);
  const partialBefore = await metricSum(cp, JANITOR_SWEEPS, { outcome: 'partial' });
  await eventually(async () => (await metricSum(cp, JANITOR_SWEEPS, ok)) >= before + sweeps, {
    what: `${sweeps} whole janitor sweeps (${JANITOR_SWEEPS})`,
    timeoutMs,
  });
  const partial = (await metricSum(cp, JANITOR_SWEEPS, { outcome: 'partial' })) - partialBefore;
  if (partial > 0) throw new Error(`${partial} janitor sweeps were partial`);
}
