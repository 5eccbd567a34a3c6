// The apiserver's own count of the requests it served
// (apiserver_request_total), scraped from its /metrics with the admin client
// certificate. Two scrapes give the writes per resource in between: this is
// how the benchmarks prove the load is O(pools + nodes), never per sandbox.
import { request } from 'node:https';
import type { TlsClientAuth } from '@warmpool/harness';
import { parseSamples, type Sample } from './prom-text.ts';

export const WRITE_VERBS = new Set(['POST', 'PUT', 'PATCH', 'DELETE', 'APPLY']);

/** `resource[/subresource]` → requests, for the write verbs only. */
export type WriteCounts = Map<string, number>;

export function fetchMetrics(server: string, tls: TlsClientAuth): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(`${server}/metrics`, { ...tls, agent: false, timeout: 10_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () =>
        res.statusCode === 200
          ? resolve(Buffer.concat(chunks).toString('utf8'))
          : reject(new Error(`GET /metrics: ${res.statusCode}`)),
      );
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('GET /metrics timed out')));
    req.on('error', reject);
    req.end();
  });
}

export function parseWrites(metrics: string): WriteCounts {
  const counts: WriteCounts = new Map();
  for (const sample of parseSamples(metrics, 'apiserver_request_total{')) {
    if (!WRITE_VERBS.has(sample.labels.get('verb') ?? '')) continue;
    const resource = sample.labels.get('resource') ?? '';
    const sub = sample.labels.get('subresource') ?? '';
    const key = sub === '' ? resource : `${resource}/${sub}`;
    counts.set(key, (counts.get(key) ?? 0) + sample.value);
  }
  return counts;
}

/** The apiserver's own request series: durations and counts. */
export async function scrapeLatencies(server: string, tls: TlsClientAuth): Promise<Sample[]> {
  const text = await fetchMetrics(server, tls);
  return [
    'apiserver_request_duration_seconds_',
    'apiserver_flowcontrol_request_wait_duration_seconds_',
    'etcd_request_duration_seconds_',
    'apiserver_request_total{',
  ].flatMap((prefix) => parseSamples(text, prefix));
}

export async function scrapeWrites(server: string, tls: TlsClientAuth): Promise<WriteCounts> {
  return parseWrites(await fetchMetrics(server, tls));
}

/**
 * Objects a claim could be written as; anything else written meanwhile is background (leases, inventories, reviews).
 */
export const CLAIM_RESOURCES: ReadonlySet<string> = new Set([
  'sandboxclaims',
  'sandboxclaims/status',
  'sandboxes',
  'sandboxes/status',
  'secrets',
]);

/** The writes between two scrapes: all of them, those to `claimKinds`, and each resource's (`none` when none). */
export function claimKindWrites(
  before: WriteCounts,
  after: WriteCounts,
  claimKinds: ReadonlySet<string>,
): { total: number; claimKinds: number; byResource: string } {
  const delta = writesBetween(before, after);
  let ofClaimKinds = 0;
  for (const [resource, n] of delta) if (claimKinds.has(resource)) ofClaimKinds += n;
  const byResource = [...delta].map(([resource, n]) => `${resource} ${n}`).join(', ');
  return { total: total(delta), claimKinds: ofClaimKinds, byResource: byResource || 'none' };
}

/** after − before, dropping resources with no writes in between. */
export function writesBetween(before: WriteCounts, after: WriteCounts): WriteCounts {
  const delta: WriteCounts = new Map();
  for (const [key, value] of after) {
    const d = value - (before.get(key) ?? 0);
    if (d > 0) delta.set(key, d);
  }
  return delta;
}

export function total(counts: WriteCounts): number {
  let sum = 0;
  for (const value of counts.values()) sum += value;
  return sum;
}
