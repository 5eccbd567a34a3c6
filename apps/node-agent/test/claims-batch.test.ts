// POST /v1/claims over real HTTP, in front of a real fake-sandboxd: each item
// answered as POST /v1/claim would answer it, streamed back as soon as it is
// answered; a malformed envelope, or a caller without the fleet token, claims
// nothing.
import {
  agentBatchClaimResultSchema,
  BATCH_CLAIM_RESULTS_MEDIA_TYPE,
  MAX_BATCH_CLAIMS,
  type ClaimResponse,
} from '@warmpool/api';
import { eventually } from '@warmpool/harness';
import { afterEach, describe, expect, it } from 'vitest';
import { call, FLEET_TOKEN, startNode, type Node } from './helpers.js';

/** The spec's node, closed after each test. */
let started: Node | undefined;
afterEach(async () => {
  await started?.close();
  started = undefined;
});
async function node(...args: Parameters<typeof startNode>): Promise<Node> {
  started = await startNode(...args);
  return started;
}

async function withWarmPool(n: Node, warm: number): Promise<void> {
  const push = await call(n.url, 'PUT', '/v1/pools', { body: { generation: 1, pools: [{ template: 'img', warm }] } });
  expect(push.status).toBe(200);
  await eventually(() => n.sandboxd.core.info().pools[0]?.warm === warm, { timeoutMs: 5_000, what: 'a warm pool' });
}

const claimed = (n: Node): number => n.sandboxd.core.info().claimed;

interface Result {
  status: number;
  body: unknown;
}

/**
 * POST /v1/claims with the fleet token; its result lines as they came, and the results in item order. `onLine` sees
 * each line as it arrives.
 */
async function claimBatch(
  n: Node,
  body: unknown,
  onLine: (index: number) => void = () => {},
): Promise<{ status: number; results: Result[]; order: number[] }> {
  const res = await fetch(`${n.url}/v1/claims`, {
    method: 'POST',
    headers: { authorization: `Bearer ${FLEET_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe(BATCH_CLAIM_RESULTS_MEDIA_TYPE);
  const results: Result[] = [];
  const order: number[] = [];
  const decoder = new TextDecoder();
  let rest = '';
  for await (const chunk of res.body ?? []) {
    const lines = (rest + decoder.decode(chunk as Uint8Array, { stream: true })).split('\n');
    rest = lines.pop() ?? '';
    for (const line of lines.filter(Boolean)) {
      const { index, status, body: resultBody } = agentBatchClaimResultSchema.parse(JSON.parse(line));
      expect(results[index], `one line for item ${index}`).toBeUndefined();
      results[index] = { status, body: resultBody };
      order.push(index);
      onLine(index);
    }
  }
  expect(rest).toBe('');
  return { status: res.status, results, order };
}

/** The batch's three ways in: all must answer alike. */
const PATHS: ReadonlyArray<[string, (n: Node, init: RequestInit) => Promise<Response>]> = [
  ["directly, on Node's own response (served over HTTP)", (n, init) => fetch(`${n.url}/v1/claims`, init)],
  ['through the app over HTTP (a query string)', (n, init) => fetch(`${n.url}/v1/claims?via=app`, init)],
  ["through the app's Request and Response (app.request)", async (n, init) => n.agent.app.request('/v1/claims', init)],
];

/** What an answer says, for comparing paths: status, content type, and each line's status and reason (or body's). */
async function outcomeOf(res: Response): Promise<unknown> {
  const text = await res.text();
  const type = res.headers.get('content-type');
  if (type !== BATCH_CLAIM_RESULTS_MEDIA_TYPE) {
    const body = JSON.parse(text) as { reason?: string };
    return { status: res.status, type, reason: body.reason, authenticate: res.headers.get('www-authenticate') };
  }
  const lines = text
    .split('\n')
    .filter(Boolean)
    .map((line) => agentBatchClaimResultSchema.parse(JSON.parse(line)))
    .sort((a, b) => a.index - b.index)
    .map(({ status, body }) => ({ status, reason: (body as { reason?: string } | null)?.reason }));
  return { status: res.status, type, lines };
}

describe('POST /v1/claims', () => {
  it('answers alike on each of its paths: results, and refusals of the caller, the body and the envelope', async () => {
    const n = await node();
    await withWarmPool(n, 3);
    const auth = { authorization: `Bearer ${FLEET_TOKEN}`, 'content-type': 'application/json' };
    const item = { template: 'img' };
    const cases: Array<[string, RequestInit]> = [
      ['a served batch', { headers: auth, body: JSON.stringify({ claims: [item, { template: 'img', volumes: [] }] }) }],
      ['no token', { headers: { 'content-type': 'application/json' }, body: JSON.stringify({ claims: [item] }) }],
      ['not JSON', { headers: auth, body: '{"claims": [' }],
      ['over 1 MiB', { headers: auth, body: JSON.stringify({ claims: [item], pad: 'x'.repeat(1024 * 1024) }) }],
      ['an empty list', { headers: auth, body: JSON.stringify({ claims: [] }) }],
    ];
    for (const [what, init] of cases) {
      const outcomes = [];
      for (const [path, send] of PATHS)
        outcomes.push({ path, outcome: await outcomeOf(await send(n, { method: 'POST', ...init })) });
      const [first] = outcomes;
      for (const other of outcomes.slice(1))
        expect({ what, ...other }).toEqual({ what, path: other.path, outcome: first?.outcome });
    }
    // Each path served one batch of one claim (the second item refused): three sandboxes, no more.
    expect(claimed(n)).toBe(3);
  });

  it('goes on claiming when the caller hangs up before the last line, and keeps serving', async () => {
    const n = await node({}, { coldBootMs: 1_000 });
    await withWarmPool(n, 2);
    const hangUp = new AbortController();
    const res = await fetch(`${n.url}/v1/claims`, {
      method: 'POST',
      headers: { authorization: `Bearer ${FLEET_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        claims: [
          { template: 'cold-img', claim_ref: 'ns/hung-up-cold' },
          { template: 'img', claim_ref: 'ns/hung-up-warm' },
        ],
      }),
      signal: hangUp.signal,
    });
    await res.body?.getReader().read(); // the warm claim's line
    hangUp.abort();
    await eventually(() => claimed(n) === 2, { timeoutMs: 5_000, what: 'the cold claim served after the hang-up' });
    const next = await claimBatch(n, { claims: [{ template: 'img', claim_ref: 'ns/after-hang-up' }] });
    expect(next.results.map((r) => r.status)).toEqual([200]);
  });

  it('answers every item as POST /v1/claim would, in item order; a bad item gets its own 400', async () => {
    const n = await node();
    await withWarmPool(n, 3);
    const answer = await claimBatch(n, {
      claims: [
        { template: 'img', ttl_seconds: 60, claim_ref: 'ns/a' },
        { template: 'img', volumes: [] },
        { template: 'img', claim_ref: 'ns/b', no_redirect: true },
        { template: '' },
      ],
    });
    expect(answer.status).toBe(200);
    const [a, unsupported, b, invalid] = answer.results;
    expect(a?.status).toBe(200);
    expect(b?.status).toBe(200);
    expect(unsupported).toEqual({
      status: 400,
      body: expect.objectContaining({ reason: 'UnsupportedField', fields: ['volumes'] }) as unknown,
    });
    expect(invalid).toEqual({ status: 400, body: expect.objectContaining({ reason: 'BadRequest' }) as unknown });
    // The same refusals the single verb gives.
    const single = await call(n.url, 'POST', '/v1/claim', { body: { template: 'img', volumes: [] } });
    expect(single.status).toBe(400);
    expect(single.json).toEqual(unsupported?.body);
    // Each grant is the node's claim under its own claim_ref.
    for (const [result, ref] of [
      [a, 'ns/a'],
      [b, 'ns/b'],
    ] as const) {
      const grant = result?.body as ClaimResponse;
      expect(grant).toMatchObject({
        id: expect.stringMatching(/^sb_/) as unknown,
        token: expect.any(String) as unknown,
      });
      const rows = await call<{ sandboxes: Array<{ id: string }> }>(n.url, 'GET', `/v1/sandboxes?claim_ref=${ref}`);
      expect(rows.body.sandboxes.map((r) => r.id)).toEqual([grant.id]);
    }
    expect(claimed(n)).toBe(2);
  });

  it('streams each result as soon as its item is answered: a claim that boots cold holds back no warm one', async () => {
    const n = await node({}, { coldBootMs: 1_500 });
    await withWarmPool(n, 1);
    const claimedAtFirstLine: number[] = [];
    const answer = await claimBatch(
      n,
      {
        claims: [
          { template: 'cold-img', claim_ref: 'ns/cold' },
          { template: 'img', claim_ref: 'ns/warm' },
        ],
      },
      () => claimedAtFirstLine.push(claimed(n)),
    );
    // The warm claim's line came while the cold one was still booting (only one sandbox claimed then).
    expect(answer.order).toEqual([1, 0]);
    expect(claimedAtFirstLine[0]).toBe(1);
    expect(answer.results.map((r) => r.status)).toEqual([200, 200]);
    expect(claimed(n)).toBe(2);
  });

  it("passes sandboxd's refusals on per item with the single verb's status and body", async () => {
    const n = await node();
    await withWarmPool(n, 1);
    expect((await call(n.url, 'POST', '/v1/drain')).status).toBe(200);
    const single = await call(n.url, 'POST', '/v1/claim', { body: { template: 'img', claim_ref: 'ns/x' } });
    const answer = await claimBatch(n, {
      claims: [
        { template: 'img', claim_ref: 'ns/y' },
        { template: 'img', claim_ref: 'ns/z' },
      ],
    });
    expect(single.status).toBe(429);
    expect(answer.status).toBe(200);
    expect(answer.results).toEqual([
      { status: 429, body: single.json },
      { status: 429, body: single.json },
    ]);
    expect(claimed(n)).toBe(0);
  });

  it('refuses a malformed envelope with one 400 and a machine-readable reason, and claims nothing', async () => {
    const n = await node();
    await withWarmPool(n, 2);
    const item = { template: 'img', claim_ref: 'ns/env' };
    const cases: Array<[string, { body?: unknown; rawBody?: string }, string]> = [
      ['not JSON', { rawBody: '{"claims": [' }, 'InvalidBody'],
      ['an array', { body: [item] }, 'BadRequest'],
      ['no claims', { body: {} }, 'BadRequest'],
      ['claims not a list', { body: { claims: item } }, 'BadRequest'],
      ['an empty list', { body: { claims: [] } }, 'BadRequest'],
      ['too many', { body: { claims: Array.from({ length: MAX_BATCH_CLAIMS + 1 }, () => item) } }, 'BadRequest'],
      ['an unknown field', { body: { claims: [item], dry_run: true } }, 'UnsupportedField'],
      ['over 1 MiB', { body: { claims: [item], pad: 'x'.repeat(1024 * 1024) } }, 'BodyTooLarge'],
    ];
    for (const [what, options, reason] of cases) {
      const answer = await call<{ reason: string; error: string }>(n.url, 'POST', '/v1/claims', options);
      expect({ what, status: answer.status, reason: answer.body.reason }).toEqual({ what, status: 400, reason });
    }
    const tooMany = await call<{ error: string }>(n.url, 'POST', '/v1/claims', {
      body: { claims: Array.from({ length: MAX_BATCH_CLAIMS + 1 }, () => item) },
    });
    expect(tooMany.body.error).toContain(`at most ${MAX_BATCH_CLAIMS} claims`);
    expect(claimed(n)).toBe(0);
  });

  it('refuses a missing or wrong token with 401 before claiming anything', async () => {
    const n = await node();
    await withWarmPool(n, 2);
    const body = { claims: [{ template: 'img', claim_ref: 'ns/auth' }] };
    for (const token of [null, 'not-the-fleet-token']) {
      const answer = await call<{ reason: string }>(n.url, 'POST', '/v1/claims', { token, body });
      expect(answer.status).toBe(401);
      expect(answer.body.reason).toBe('Unauthenticated');
      expect(answer.headers.get('www-authenticate')).toBe('Bearer');
    }
    expect(claimed(n)).toBe(0);
  });

  it('counts every item against the bound on claims in flight: past it, items are refused at once with 429', async () => {
    const n = await node({ maxClaimsInFlight: 2 }, { warmClaimLatencyMs: 300 });
    await withWarmPool(n, 5);
    const answer = await claimBatch(n, {
      claims: Array.from({ length: 5 }, (_, i) => ({ template: 'img', claim_ref: `ns/bound-${i}` })),
    });
    expect(answer.status).toBe(200);
    expect(answer.results.map((r) => r.status)).toEqual([200, 200, 429, 429, 429]);
    for (const refused of answer.results.slice(2))
      expect(refused.body).toMatchObject({ reason: 'TooManyClaimsInFlight', limit: 2 });
    expect(claimed(n)).toBe(2);
    // The slots were given back: the next batch is served.
    const next = await claimBatch(n, { claims: [{ template: 'img', claim_ref: 'ns/bound-next' }] });
    expect(next.results.map((r) => r.status)).toEqual([200]);
  });

  it("answers an item sandboxd could not be reached for with the single verb's 503", async () => {
    const n = await node({ sandboxdTimeoutMs: 2_000 });
    await withWarmPool(n, 1);
    await n.sandboxd.close();
    const answer = await claimBatch(n, { claims: [{ template: 'img', claim_ref: 'ns/gone' }] });
    expect(answer.status).toBe(200);
    expect(answer.results).toEqual([
      { status: 503, body: expect.objectContaining({ reason: 'SandboxdUnreachable' }) as unknown },
    ]);
  });
});
