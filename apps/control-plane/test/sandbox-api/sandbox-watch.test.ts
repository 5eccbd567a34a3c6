// A Sandbox watch as a stream (src/sandbox-api/watch.ts), in process: what
// the kubectl specs cannot make a client do — stop reading, hang up — and the
// resourceVersions a watch resumes from.
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { SandboxApiMetrics } from '../../src/sandbox-api/metrics.js';
import type { SandboxFacts } from '../../src/sandbox-api/sandbox-object.js';
import { SandboxView } from '../../src/sandbox-api/view.js';
import { OpenWatches, watchResponse, type WatchOptions } from '../../src/sandbox-api/watch.js';

const T0 = Date.parse('2026-12-01T10:00:00Z');

function facts(name: string, namespace = 'team'): SandboxFacts {
  return { namespace, name, id: `sb_${name}`, node: 'node-a', deadline: new Date(T0 + 300_000).toISOString() };
}

interface Setup {
  view: SandboxView;
  watches: OpenWatches;
  options: WatchOptions;
  /** The sandbox_api_watches gauge: the watches being streamed. */
  open: () => Promise<number>;
}

function setup(): Setup {
  const view = new SandboxView({ now: () => T0, tag: 7 });
  const watches = new OpenWatches();
  const registry = new Registry();
  const options: WatchOptions = {
    view,
    watches,
    metrics: new SandboxApiMetrics(registry, () => view.size),
    now: () => T0,
    bookmarkIntervalMs: 60_000,
    defaultWatchTimeoutMs: 60_000,
  };
  const open = async (): Promise<number> =>
    (await registry.getSingleMetric('warmpool_controlplane_sandbox_api_watches')!.get()).values[0]?.value ?? 0;
  return { view, watches, options, open };
}

interface WatchEvent {
  type: string;
  object: {
    kind?: string;
    code?: number;
    reason?: string;
    metadata?: { name?: string; annotations?: Record<string, string> };
  };
}

function watch(options: WatchOptions, query: Record<string, string>, namespace?: string): Response {
  return watchResponse(options, { namespace, query: (name) => query[name], representation: { as: 'object' } });
}

/** Reads what the stream holds until `lines` lines came, or it ended. */
async function readLines(response: Response, lines: number): Promise<{ events: WatchEvent[]; ended: boolean }> {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  let ended = false;
  while (text.split('\n').filter((l) => l !== '').length < lines) {
    const { done, value } = await reader.read();
    if (done) {
      ended = true;
      break;
    }
    text += decoder.decode(value);
  }
  reader.releaseLock();
  const events = text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as WatchEvent);
  return { events, ended };
}

describe('a Sandbox watch', () => {
  it('starts with the current objects and the end-of-initial-events bookmark, then streams changes in its namespace', async () => {
    const { view, options } = setup();
    view.applyClaimed(facts('job-1'), T0);
    view.applyClaimed(facts('other', 'elsewhere'), T0);
    const response = watch(options, { sendInitialEvents: 'true', allowWatchBookmarks: 'true' }, 'team');
    expect(response.status).toBe(200);
    expect(response.headers.get('transfer-encoding')).toBe('chunked');
    const first = await readLines(response, 2);
    expect(first.events.map((e) => e.type)).toEqual(['ADDED', 'BOOKMARK']);
    expect(first.events[1]?.object.metadata?.annotations).toEqual({ 'k8s.io/initial-events-end': 'true' });
    view.applyClaimed(facts('elsewhere-2', 'elsewhere'), T0);
    view.applyReleased('team', 'job-1', 'sb_job-1', T0);
    const next = await readLines(response, 1);
    expect(next.events.map((e) => `${e.type} ${e.object.metadata?.name}`)).toEqual(['DELETED job-1']);
  });

  it('resumes after a resourceVersion it handed out, and answers 410 Expired for one it never did', async () => {
    const { view, options } = setup();
    view.applyClaimed(facts('job-1'), T0);
    const since = view.resourceVersion;
    view.applyClaimed(facts('job-2'), T0);
    const resumed = await readLines(watch(options, { resourceVersion: since }), 1);
    expect(resumed.events.map((e) => `${e.type} ${e.object.metadata?.name}`)).toEqual(['ADDED job-2']);
    // One ERROR event, and the response ends: the client relists.
    const gone = (await watch(options, { resourceVersion: '12345' }).text()).trim().split('\n');
    expect(gone).toHaveLength(1);
    expect(JSON.parse(gone[0]!)).toMatchObject({
      type: 'ERROR',
      object: { kind: 'Status', code: 410, reason: 'Expired' },
    });
  });

  it('lets go of a client that stops reading once its backlog passes 16 MiB, rather than buffering without bound', async () => {
    const { view, options, open } = setup();
    const response = watch(options, {});
    expect(await open()).toBe(1);
    let claimed = 0;
    while ((await open()) === 1 && claimed < 200_000) {
      for (let i = 0; i < 1_000; i++, claimed++) view.applyClaimed(facts(`job-${claimed}`), T0);
    }
    expect(await open()).toBe(0);
    // What was queued is still delivered, then the stream ends: the client relists.
    const text = await response.text();
    expect(text.length).toBeGreaterThan(16 * 1024 * 1024);
    expect(text.length).toBeLessThan(17 * 1024 * 1024);
  });

  it('ends when the client hangs up, and every open watch when the server closes', async () => {
    const { watches, options, open } = setup();
    const hungUp = watch(options, {});
    const stays = watch(options, {});
    expect(await open()).toBe(2);
    await hungUp.body!.cancel();
    expect(await open()).toBe(1);
    watches.endAll();
    expect(await open()).toBe(0);
    expect((await readLines(stays, 1)).ended).toBe(true);
  });
});
