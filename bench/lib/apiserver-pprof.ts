// The kube-apiserver's own CPU profile (Go's /debug/pprof/profile, served when
// the harness starts it with `apiserverProfiling`) and its own count of the
// requests it served and the watches it holds, all read with the admin client
// certificate. A profile is written as the gzipped protobuf `go tool pprof`
// reads; several windows' files merge with `go tool pprof -top a.pb.gz b.pb.gz`.
import { createWriteStream } from 'node:fs';
import { request } from 'node:https';
import { pipeline } from 'node:stream/promises';
import type { TlsClientAuth } from '@warmpool/harness';
import { parseSamples } from './prom-text.ts';

/**
 * Starts a CPU profile of `seconds` (whole seconds: the endpoint's unit) and resolves once the apiserver has sent it and
 * it is in `file`. The apiserver samples from the moment it takes the request; only one profile runs at a time.
 */
export function profileApiserver(server: string, tls: TlsClientAuth, seconds: number, file: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const url = `${server}/debug/pprof/profile?seconds=${seconds}`;
    const req = request(url, { ...tls, agent: false, timeout: (seconds + 30) * 1000 }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        reject(new Error(`GET ${url}: ${res.statusCode} (was the cluster started with apiserverProfiling?)`));
        return;
      }
      pipeline(res, createWriteStream(file)).then(resolve, reject);
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${url} timed out`)));
    req.on('error', reject);
    req.end();
  });
}

/** `VERB resource[/subresource]` → requests served (every verb, WATCH and LIST included). */
export type RequestCounts = Map<string, number>;

export function parseRequests(metrics: string): RequestCounts {
  const counts: RequestCounts = new Map();
  for (const sample of parseSamples(metrics, 'apiserver_request_total{')) {
    const sub = sample.labels.get('subresource') ?? '';
    const resource = sample.labels.get('resource') ?? '';
    const key = `${sample.labels.get('verb') ?? ''} ${resource === '' ? '(non-resource)' : resource}${sub === '' ? '' : `/${sub}`}`;
    counts.set(key, (counts.get(key) ?? 0) + sample.value);
  }
  return counts;
}

/** Σ of the nonzero samples of `metric` (name and `{`) by the key `keyOf` makes of their labels. */
function countBy(metrics: string, metric: string, keyOf: (labels: Map<string, string>) => string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const sample of parseSamples(metrics, metric)) {
    if (sample.value === 0) continue;
    const key = keyOf(sample.labels);
    counts.set(key, (counts.get(key) ?? 0) + sample.value);
  }
  return counts;
}

/** Open long-running requests (watches, mostly) by `VERB resource`, from apiserver_longrunning_requests. */
export function parseLongRunning(metrics: string): Map<string, number> {
  return countBy(
    metrics,
    'apiserver_longrunning_requests{',
    (l) => `${l.get('verb') ?? ''} ${l.get('resource') ?? ''}`,
  );
}

/** Watchers the watch cache fans out to, by kind (apiserver_registered_watchers, where the apiserver exports it). */
export function parseWatchers(metrics: string): Map<string, number> {
  return countBy(
    metrics,
    'apiserver_registered_watchers{',
    (l) => `${l.get('group') ?? ''}/${l.get('kind') ?? l.get('resource') ?? ''}`,
  );
}

/** Adds after − before of every key into `into`. */
export function addDelta(into: Map<string, number>, before: Map<string, number>, after: Map<string, number>): void {
  for (const [key, value] of after) {
    const d = value - (before.get(key) ?? 0);
    if (d !== 0) into.set(key, (into.get(key) ?? 0) + d);
  }
}
