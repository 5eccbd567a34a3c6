// The request histogram keeps its own counters; what Prometheus scrapes must
// be what prom-client's own Histogram prints for the same observations.
import { Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { RequestDurations } from '../src/request-durations.js';

const NAME = 'warmpool_agent_http_request_duration_seconds';
const HELP = 'Time to answer an API request, by route, method and status';
const BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

const OBSERVATIONS: Array<[route: string, method: string, status: number, seconds: number]> = [
  ['claim', 'POST', 200, 0.00004],
  ['claim', 'POST', 200, 0.0001],
  ['claim', 'POST', 200, 0.00011],
  ['claim', 'POST', 429, 0.003],
  ['info', 'GET', 200, 0.25],
  ['claim', 'POST', 200, 12],
  ['not_found', 'PATCH', 404, 0],
];

function both(): {
  ours: RequestDurations;
  theirs: Histogram<'route' | 'method' | 'status'>;
  oursText: () => Promise<string>;
  theirsText: () => Promise<string>;
} {
  const ourRegistry = new Registry();
  const theirRegistry = new Registry();
  const ours = new RequestDurations({ name: NAME, help: HELP, buckets: BUCKETS, registry: ourRegistry });
  const theirs = new Histogram({
    name: NAME,
    help: HELP,
    labelNames: ['route', 'method', 'status'],
    buckets: BUCKETS,
    registers: [theirRegistry],
  });
  return { ours, theirs, oursText: () => ourRegistry.metrics(), theirsText: () => theirRegistry.metrics() };
}

describe('RequestDurations', () => {
  it('prints what a prom-client Histogram prints for the same observations', async () => {
    const { ours, theirs, oursText, theirsText } = both();
    for (const [route, method, status, seconds] of OBSERVATIONS) {
      ours.series(route, method, status).observe(seconds);
      theirs.labels(route, method, String(status)).observe(seconds);
    }
    expect(await oursText()).toBe(await theirsText());
    expect(await oursText()).toContain(`${NAME}_count{route="claim",method="POST",status="200"} 4`);
  });

  it('hands back the same series for the same labels, and zeroes them on reset', async () => {
    const { ours, theirs, oursText, theirsText } = both();
    const series = ours.series('claim', 'POST', 200);
    expect(ours.series('claim', 'POST', 200)).toBe(series);
    series.observe(0.001);
    theirs.labels('claim', 'POST', '200').observe(0.001);
    ours.reset();
    theirs.zero({ route: 'claim', method: 'POST', status: '200' });
    expect(await oursText()).toBe(await theirsText());
  });
});
