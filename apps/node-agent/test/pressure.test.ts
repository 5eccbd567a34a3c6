// The agent under a flood of slow claims, as processes (dist/main.js of the
// agent and of fake-sandboxd; build both first): its health path and control
// traffic must not queue behind the claims, and claims past its bound are
// refused at once instead of waiting.
import type { NodeInfo } from '@warmpool/api';
import { Pool } from 'undici';
import { eventually } from '@warmpool/harness';
import { afterEach, describe, expect, it } from 'vitest';
import { call, FLEET_TOKEN, spawnAgent, spawnFakeSandboxd, startNode } from './helpers.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Answer {
  status: number;
  body: string;
  retryAfter: string | undefined;
  ms: number;
  /** When the answer was complete (performance.now()). */
  at: number;
}

async function send(client: Pool, method: 'GET' | 'POST' | 'PUT', path: string, body?: unknown): Promise<Answer> {
  const started = performance.now();
  const res = await client.request({
    method,
    path,
    headers: { authorization: `Bearer ${FLEET_TOKEN}`, 'content-type': 'application/json' },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    headersTimeout: 60_000,
    bodyTimeout: 60_000,
  });
  const text = await res.body.text();
  const retryAfter = res.headers['retry-after'];
  const at = performance.now();
  return {
    status: res.statusCode,
    body: text,
    retryAfter: Array.isArray(retryAfter) ? retryAfter[0] : retryAfter,
    ms: at - started,
    at,
  };
}

describe('the agent under 300 slow claims', () => {
  it(
    'answers /v1/info, SetPools and /readyz promptly, and refuses claims past its bound with an immediate 429',
    { timeout: 90_000 },
    async () => {
      // Every claim takes 8 s at sandboxd, warm or cold.
      const sandboxd = await spawnFakeSandboxd([
        '--warm-claim-ms',
        '8s',
        '--cold-boot-ms',
        '8s',
        '--boot-ms',
        '10ms',
        '--max-claims',
        '1000',
        '--room',
        '2000',
      ]);
      cleanups.push(() => sandboxd.stop());
      const agent = await spawnAgent(
        [
          '--no-inventory',
          '--sandboxd-url',
          sandboxd.url,
          '--max-claims-in-flight',
          '200',
          '--sandboxd-timeout',
          '30s',
        ],
        { WARMPOOL_API_TOKEN: FLEET_TOKEN },
      );
      cleanups.push(() => agent.stop());
      const client = new Pool(agent.url, { connections: 400 });
      cleanups.push(() => client.close());

      expect(
        (await send(client, 'PUT', '/v1/pools', { generation: 1, pools: [{ template: 'img', warm: 100 }] })).status,
      ).toBe(200);
      await eventually(
        async () => (JSON.parse((await send(client, 'GET', '/v1/info')).body) as NodeInfo).pools[0]?.warm === 100,
        { timeoutMs: 20_000, what: 'a warm pool' },
      );

      const claims = Array.from({ length: 300 }, (_, i) =>
        send(client, 'POST', '/v1/claim', { template: 'img', claim_ref: `ns/c-${i}` }),
      );
      // Until the first claim is answered (8 s), 200 are held at sandboxd.
      await eventually(
        async () => /warmpool_agent_claims_in_flight 200\b/.test((await send(client, 'GET', '/metrics')).body),
        { timeoutMs: 15_000, what: '200 claims in flight' },
      );

      // With 200 claims held at sandboxd: the control plane's probe, a push and the kubelet's probe
      // (a generous bound on a shared machine: the point is that they do not wait for the claims).
      const info = await send(client, 'GET', '/v1/info');
      expect(info.status).toBe(200);
      expect(info.ms).toBeLessThan(3_000);
      const push = await send(client, 'PUT', '/v1/pools', { generation: 2, pools: [{ template: 'img', warm: 100 }] });
      expect(push.status).toBe(200);
      expect(push.ms).toBeLessThan(3_000);
      expect((await send(client, 'GET', '/readyz')).status).toBe(200);

      const answers = await Promise.all(claims);
      const held = answers.filter((a) => a.status === 200);
      const refused = answers.filter((a) => a.status === 429);
      expect(held).toHaveLength(200);
      expect(refused).toHaveLength(100);
      // Refused at once: each 429 came back before sandboxd let go of the first held claim.
      expect(Math.min(...held.map((a) => a.ms))).toBeGreaterThanOrEqual(7_900);
      const firstHeld = Math.min(...held.map((a) => a.at));
      for (const answer of refused) {
        expect(JSON.parse(answer.body)).toMatchObject({ reason: 'TooManyClaimsInFlight', limit: 200 });
        expect(answer.retryAfter).toBe('1');
        expect(answer.at).toBeLessThan(firstHeld);
      }
      const metrics = await send(client, 'GET', '/metrics');
      expect(metrics.body).toMatch(/warmpool_agent_claims_refused_in_flight_limit_total 100\b/);
      expect(metrics.body).toMatch(/warmpool_agent_claims_in_flight 0\b/);
    },
  );
});

describe('one deadline per sandboxd call', () => {
  it(
    'counts the wait for a connection: a claim still queued at its deadline answers 503 SandboxdBusy and is never sent; the control pool stays free',
    { timeout: 30_000 },
    async () => {
      // 20 connections for claims, and no bound of the agent's own in the way: 40 of 60 claims queue.
      const n = await startNode(
        { sandboxdConnections: 20, maxClaimsInFlight: 1_000, sandboxdTimeoutMs: 1_500 },
        { warmClaimLatencyMs: 3_000 },
      );
      cleanups.push(() => n.close());
      expect(
        (await call(n.url, 'PUT', '/v1/pools', { body: { generation: 1, pools: [{ template: 'img', warm: 60 }] } }))
          .status,
      ).toBe(200);
      await eventually(() => n.sandboxd.core.info().pools[0]?.warm === 60, { timeoutMs: 10_000, what: 'a warm pool' });

      const claims = Array.from({ length: 60 }, (_, i) =>
        call<{ reason: string }>(n.url, 'POST', '/v1/claim', { body: { template: 'img', claim_ref: `ns/q-${i}` } }),
      );
      await eventually(() => n.sandboxd.core.claimedCount === 20, { timeoutMs: 5_000, what: '20 claims at sandboxd' });
      const started = performance.now();
      expect((await call(n.url, 'GET', '/v1/info')).status).toBe(200);
      expect(performance.now() - started).toBeLessThan(1_000);

      const answers = await Promise.all(claims);
      const sent = answers.filter((a) => a.status === 504);
      const queued = answers.filter((a) => a.status === 503);
      expect(sent.length + queued.length).toBe(60);
      for (const a of sent) {
        expect(a.body.reason).toBe('OutcomeUnknown');
        expect(a.headers.get('retry-after')).toBeNull();
      }
      // How many were still queued when their deadline fired depends on event order: every call's deadline is
      // the same length, and a held connection frees at its own call's deadline, in the same millisecond as the
      // queued calls' deadlines (on a loaded machine most of the 40 answer 503, on a quiet one possibly none).
      // What must hold either way: a 503 was never sent, a 504 was, and nothing else is answered.
      for (const a of queued) {
        expect(a.body.reason).toBe('SandboxdBusy');
        expect(a.headers.get('retry-after')).toBe('1');
      }
      // Every claim answered "sent" reached sandboxd, and none answered "not sent" did, even once connections freed up.
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(n.sandboxd.core.claimedCount).toBe(sent.length);
    },
  );
});
