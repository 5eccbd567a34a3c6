// AgentClient.claim coalesces: the claims made to one agent in one event-loop
// turn go as one POST /v1/claims, and each caller gets the answer its own
// POST /v1/claim would have got, as soon as its result line comes. Against a real node agent (processes) for
// what is served, and a scripted agent on loopback for what an agent may do
// wrong: not know the verb (an older agent), not answer, answer nonsense.
import { serveApp, silentLogger, type HttpServer } from '@warmpool/runtime';
import { Hono } from 'hono';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AgentClient, type ClaimAnswer } from '../../src/agents/client.js';
import { startLoneAgent, type LoneAgent } from '../support/lone-agent.js';
import { requireBuilt } from '../support/fleet.js';

const TOKEN = 'coalescing-fleet-token';
const KEY = { template: 'img', net: 'none', size: 'small' };
const GRANT = { id: 'sb_1', token: 'tok', deadline: '2030-01-01T00:00:00Z', owner_addr: '127.0.0.1:9000' };

/** A POST /v1/claims answer: one NDJSON line per result, as given (any order; nonsense too). */
function lines(results: readonly unknown[]): Response {
  const text = results.map((r) => `${typeof r === 'string' ? r : JSON.stringify(r)}\n`).join('');
  return new Response(text, { status: 200, headers: { 'content-type': 'application/x-ndjson' } });
}

const clients: AgentClient[] = [];
function client(options: Partial<ConstructorParameters<typeof AgentClient>[0]> = {}): AgentClient {
  const made = new AgentClient({ token: () => TOKEN, timeoutMs: 5_000, logger: silentLogger, ...options });
  clients.push(made);
  return made;
}
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
});

/**
 * How many requests the agent answered on `route` (its request-duration histogram's counts; route "claim" counts every
 * claim answered, each item of a POST /v1/claims included).
 */
function requests(metrics: string, route: 'claim' | 'claims'): number {
  const counts = metrics.matchAll(/^warmpool_agent_http_request_duration_seconds_count\{([^}]*)\} (\d+)$/gm);
  let total = 0;
  for (const [, labels, count] of counts) if (labels?.includes(`route="${route}"`)) total += Number(count);
  return total;
}

describe('claims coalesced to a real node agent', () => {
  let agent: LoneAgent;

  beforeAll(async () => {
    requireBuilt();
    agent = await startLoneAgent(TOKEN);
    const push = await fetch(`${agent.url}/v1/pools`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ generation: 1, pools: [{ template: 'img', warm: 20 }] }),
    });
    expect(push.status).toBe(200);
  }, 60_000);
  afterAll(async () => {
    await agent?.stop();
  });

  it('sends the claims of one turn as one POST /v1/claims, and answers each caller its own claim', async () => {
    const agents = client();
    const before = await agent.metrics();
    const refs = ['ns/a', 'ns/b', 'ns/c'];
    const answers = await Promise.all([
      ...refs.map((ref) => agents.claim(agent.address, KEY, 60, ref)),
      // A key the agent refuses (not printable): refused alone, the others served.
      agents.claim(agent.address, { ...KEY, template: 'bad\u0000' }, 60, 'ns/d'),
    ]);
    const after = await agent.metrics();
    // One request; every item still counted as a claim answered (route "claim"), by its own status.
    expect(requests(after, 'claims') - requests(before, 'claims')).toBe(1);
    expect(requests(after, 'claim') - requests(before, 'claim')).toBe(4);
    const served = answers.slice(0, 3).map((a) => (a.ok ? a.claim.id : a.refusal.kind));
    expect(new Set(served).size).toBe(3);
    for (const [i, ref] of refs.entries()) {
      const rows = await agents.findByClaimRef(agent.address, ref);
      expect(rows.map((r) => r.id)).toEqual([served[i]]);
    }
    expect(answers[3]).toMatchObject({ ok: false, refusal: { kind: 'refused', status: 400 } });
  });

  it('sends a claim alone in its turn with POST /v1/claim, and claims of other turns or timeouts apart', async () => {
    const agents = client();
    const before = await agent.metrics();
    expect((await agents.claim(agent.address, KEY, 60, 'ns/alone')).ok).toBe(true);
    // Two turns; in the second, two claims with different timeouts.
    expect((await agents.claim(agent.address, KEY, 60, 'ns/turn-1')).ok).toBe(true);
    const apart = await Promise.all([
      agents.claim(agent.address, KEY, 60, 'ns/t-1', 4_000),
      agents.claim(agent.address, KEY, 60, 'ns/t-2', 3_000),
    ]);
    expect(apart.map((a) => a.ok)).toEqual([true, true]);
    const after = await agent.metrics();
    expect(requests(after, 'claim') - requests(before, 'claim')).toBe(4);
    expect(requests(after, 'claims') - requests(before, 'claims')).toBe(0);
  });

  it('answers every claim of a batch full when the node is draining', async () => {
    const agents = client();
    const drain = (method: string) =>
      fetch(`${agent.url}/v1/drain`, { method, headers: { authorization: `Bearer ${TOKEN}` } });
    expect((await drain('POST')).status).toBe(200);
    try {
      const answers = await Promise.all(['ns/dr-1', 'ns/dr-2'].map((r) => agents.claim(agent.address, KEY, 60, r)));
      for (const answer of answers) expect(answer).toMatchObject({ ok: false, refusal: { kind: 'full', status: 429 } });
    } finally {
      expect((await drain('DELETE')).status).toBe(200);
    }
  });
});

describe('claims coalesced to a scripted agent', () => {
  let server: HttpServer;
  let address: string;
  let seen: string[] = [];
  /** How the scripted agent answers POST /v1/claims (POST /v1/claim always grants). */
  let batch: (claims: unknown[]) => Response | Promise<Response> = () => new Response(null, { status: 500 });
  const grant = (n: number) => ({ ...GRANT, id: `sb_${n}` });

  beforeAll(async () => {
    let granted = 0;
    const app = new Hono();
    app.post('/v1/claim', (c) => {
      seen.push('POST /v1/claim');
      return c.json(grant(++granted));
    });
    app.post('/v1/claims', async (c) => {
      seen.push('POST /v1/claims');
      const { claims } = await c.req.json<{ claims: unknown[] }>();
      return batch(claims);
    });
    server = await serveApp(app, { host: '127.0.0.1', port: 0 });
    address = `127.0.0.1:${server.address.port}`;
  });
  beforeEach(() => {
    seen = [];
  });
  afterAll(async () => {
    await server?.close();
  });

  const three = (agents: AgentClient): Promise<ClaimAnswer[]> =>
    Promise.all(['ns/1', 'ns/2', 'ns/3'].map((ref) => agents.claim(address, KEY, 60, ref)));

  it.each([404, 405])(
    'falls back to single claims for an agent that answers POST /v1/claims %i, remembers it for a while, then tries again',
    async (status) => {
      batch = () => Response.json({ error: 'not found', reason: 'NotFound' }, { status });
      const agents = client({ singleClaimsForMs: 300 });
      const first = await three(agents);
      expect(first.map((a) => a.ok)).toEqual([true, true, true]);
      expect(seen).toEqual(['POST /v1/claims', ...Array(3).fill('POST /v1/claim')]);
      seen = [];
      await three(agents);
      expect(seen).toEqual(Array(3).fill('POST /v1/claim'));
      seen = [];
      await new Promise((resolve) => setTimeout(resolve, 350));
      await three(agents);
      expect(seen[0]).toBe('POST /v1/claims');
    },
  );

  it('answers every claim of a batch that gets no answer unreachable (the node may have served them)', async () => {
    batch = () => new Promise<Response>((resolve) => setTimeout(() => resolve(lines([])), 1_000));
    const agents = client({ timeoutMs: 100 });
    const answers = await three(agents);
    for (const answer of answers) expect(answer).toMatchObject({ ok: false, refusal: { kind: 'unreachable' } });
    expect(seen).toEqual(['POST /v1/claims']);
  });

  it('answers unreachable each claim whose result never came or was unreadable, or whose batch answered 500; the others keep theirs', async () => {
    const agents = client();
    const cases: Array<[() => Response, boolean[]]> = [
      [() => lines([{ index: 0, status: 200, body: grant(1) }]), [true, false, false]],
      [() => lines(['no', '{"index": 2']), [false, false, false]],
      [() => lines([0, 1, 2].map((index) => ({ index, status: '200', body: grant(1) }))), [false, false, false]],
      [() => lines([{ index: 7, status: 200, body: grant(1) }]), [false, false, false]],
      [
        () =>
          lines([
            { index: 1, status: 200, body: grant(2) },
            { index: 1, status: 429, body: { error: 'node full' } },
          ]),
        [false, true, false],
      ],
      [() => Response.json({ error: 'boom', reason: 'Internal' }, { status: 500 }), [false, false, false]],
    ];
    for (const [answer, served] of cases) {
      batch = answer;
      const answers = await three(agents);
      expect(answers.map((a) => a.ok)).toEqual(served);
      for (const a of answers.filter((x) => !x.ok)) expect(a).toMatchObject({ refusal: { kind: 'unreachable' } });
    }
  });

  it('answers each claim as its line comes: one answered at once is not held back by another that never comes', async () => {
    batch = () =>
      new Response(
        new ReadableStream<Uint8Array>({
          start(controller) {
            controller.enqueue(
              new TextEncoder().encode(`${JSON.stringify({ index: 1, status: 200, body: grant(9) })}\n`),
            );
          },
        }),
        { status: 200, headers: { 'content-type': 'application/x-ndjson' } },
      );
    const agents = client({ timeoutMs: 500 });
    const settled: string[] = [];
    const answers = await Promise.all(
      ['ns/1', 'ns/2', 'ns/3'].map((ref) =>
        agents.claim(address, KEY, 60, ref).then((answer) => {
          settled.push(ref);
          return answer;
        }),
      ),
    );
    expect(settled[0]).toBe('ns/2');
    expect(answers[1]).toMatchObject({ ok: true, claim: { id: 'sb_9' } });
    for (const i of [0, 2]) expect(answers[i]).toMatchObject({ ok: false, refusal: { kind: 'unreachable' } });
  });

  it('refuses every claim as the single verb would when the agent refuses the batch itself (401)', async () => {
    batch = () =>
      Response.json({ error: 'missing or invalid bearer token', reason: 'Unauthenticated' }, { status: 401 });
    const answers = await three(client());
    for (const a of answers) expect(a).toMatchObject({ ok: false, refusal: { kind: 'refused', status: 401 } });
    expect(seen).toEqual(['POST /v1/claims']);
  });

  it("reads each result as the single verb's answer: a grant, a refusal, an unknown outcome, a redirect", async () => {
    batch = (claims) => {
      expect(claims).toHaveLength(4);
      return lines([
        { index: 3, status: 200, body: { redirect: ['10.0.0.6:7777'] } },
        { index: 0, status: 200, body: grant(7) },
        { index: 2, status: 504, body: { error: 'no answer', reason: 'OutcomeUnknown' } },
        { index: 1, status: 429, body: { error: 'node full' } },
      ]);
    };
    const agents = client();
    const answers = await Promise.all(['ns/g', 'ns/f', 'ns/u', 'ns/r'].map((r) => agents.claim(address, KEY, 60, r)));
    expect(answers[0]).toEqual({
      ok: true,
      claim: { id: 'sb_7', token: 'tok', deadline: GRANT.deadline, ownerAddr: '127.0.0.1:9000' },
    });
    expect(answers[1]).toEqual({ ok: false, refusal: { kind: 'full', status: 429, message: 'node full' } });
    expect(answers[2]).toMatchObject({ ok: false, refusal: { kind: 'unreachable' } });
    expect(answers[3]).toMatchObject({ ok: false, refusal: { kind: 'redirected', candidates: ['10.0.0.6:7777'] } });
  });
});
