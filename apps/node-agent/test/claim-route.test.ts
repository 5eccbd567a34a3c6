// The claim has two ways to answer: served over HTTP it writes on Node's
// response directly (`POST /v1/claim` taken by the server ahead of the Hono
// app, or reaching the app's route with a query string), elsewhere
// (app.request()) it goes through Hono's Request and Response. All must
// answer alike, and pass sandboxd's answer through as it came. sandboxd is a
// stub here, so its answers can be odd.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createNodeAgent, SandboxdClient, type NodeAgent } from '@warmpool/node-agent';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { FLEET_TOKEN } from './helpers.js';

interface StubAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

const INFO = JSON.stringify({ pools: [], claimed: 0 });

/** A sandboxd that answers every claim with `answer`, and remembers what it was sent. */
async function stubSandboxd(answer: StubAnswer): Promise<{ url: string; received: Received[]; server: Server }> {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (req.url === '/v1/info') {
        res.writeHead(200, { 'content-type': 'application/json' }).end(INFO);
        return;
      }
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString() });
      res.writeHead(answer.status, answer.headers).end(answer.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received, server };
}

const open: Array<() => Promise<void>> = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const close of open.splice(0).reverse()) await close();
});

async function agentBefore(sandboxdUrl: string): Promise<{ agent: NodeAgent; url: string }> {
  // A client still sending an over-large body keeps its connection busy in Node's eyes: close() need not wait long for
  // it.
  const agent = createNodeAgent({
    sandboxdUrl,
    token: FLEET_TOKEN,
    pollIntervalMs: 60_000,
    sandboxdTimeoutMs: 2_000,
    closeTimeoutMs: 500,
  });
  const { url } = await agent.start();
  open.push(() => agent.close());
  return { agent, url };
}

async function withStub(answer: StubAnswer): Promise<{ agent: NodeAgent; url: string; received: Received[] }> {
  const stub = await stubSandboxd(answer);
  open.push(() => new Promise((resolve) => stub.server.close(() => resolve())));
  return { ...(await agentBefore(stub.url)), received: stub.received };
}

interface Seen {
  status: number;
  body: string;
  contentType: string | null;
  retryAfter: string | null;
  challenge: string | null;
}

async function seen(res: Response): Promise<Seen> {
  return {
    status: res.status,
    body: await res.text(),
    contentType: res.headers.get('content-type'),
    retryAfter: res.headers.get('retry-after'),
    challenge: res.headers.get('www-authenticate'),
  };
}

type Send = (body: string, headers?: Record<string, string>) => Promise<Seen>;

/**
 * The same claim, sent over HTTP (the direct path, ahead of the app and through its route) and through app.request()
 * (the Hono path).
 */
function everyPath(agent: NodeAgent, url: string): Array<[string, Send]> {
  const init = (body: string, headers: Record<string, string>): RequestInit => ({
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json', ...headers },
  });
  const auth = { authorization: `Bearer ${FLEET_TOKEN}` };
  return [
    ['over HTTP', async (body, headers = auth) => seen(await fetch(`${url}/v1/claim`, init(body, headers)))],
    [
      "over HTTP through the app's route",
      async (body, headers = auth) => seen(await fetch(`${url}/v1/claim?via=app`, init(body, headers))),
    ],
    [
      'through app.request()',
      async (body, headers = auth) => seen(await agent.app.request('/v1/claim', init(body, headers))),
    ],
  ];
}

describe('the claim route', () => {
  it("answers on Node's response directly when served over HTTP, and through Hono otherwise", async () => {
    const { agent, url } = await withStub({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: '{"id":"sb_1"}',
    });
    const direct = vi.spyOn(SandboxdClient.prototype, 'claimInto');
    const viaHono = vi.spyOn(SandboxdClient.prototype, 'claim');
    const [[, overHttp], [, throughRoute], [, throughApp]] = everyPath(agent, url) as [
      [string, Send],
      [string, Send],
      [string, Send],
    ];
    await overHttp('{"template":"img"}');
    expect([direct.mock.calls.length, viaHono.mock.calls.length]).toEqual([1, 0]);
    await throughRoute('{"template":"img"}');
    expect([direct.mock.calls.length, viaHono.mock.calls.length]).toEqual([2, 0]);
    await throughApp('{"template":"img"}');
    expect([direct.mock.calls.length, viaHono.mock.calls.length]).toEqual([2, 1]);
  });

  it("passes sandboxd's answer through byte for byte: status, body, content type and Retry-After", async () => {
    const odd = {
      status: 429,
      headers: { 'content-type': 'application/problem+json', 'retry-after': '7' },
      body: '{ "error" : "node is full" }',
    };
    const { agent, url } = await withStub(odd);
    for (const [path, send] of everyPath(agent, url)) {
      expect(await send('{"template":"img"}'), path).toEqual({
        status: 429,
        body: odd.body,
        contentType: 'application/problem+json',
        retryAfter: '7',
        challenge: null,
      });
    }
  });

  it('passes an answer without a body through alike on every path: no content type, Retry-After kept', async () => {
    const { agent, url } = await withStub({ status: 503, headers: { 'retry-after': '3' }, body: '' });
    for (const [path, send] of everyPath(agent, url)) {
      expect(await send('{"template":"img"}'), path).toEqual({
        status: 503,
        body: '',
        contentType: null,
        retryAfter: '3',
        challenge: null,
      });
    }
  });

  it("forwards the validated claim (defaults filled in, no_redirect set) with the fleet token, not the client's bytes", async () => {
    const { agent, url, received } = await withStub({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: '{"id":"sb_1"}',
    });
    for (const [path, send] of everyPath(agent, url)) {
      expect((await send('{"template":"img","ttl_seconds":60}')).status, path).toBe(200);
    }
    expect(received.map((r) => r.body)).toEqual(
      Array(3).fill('{"template":"img","net":"none","size":"small","ttl_seconds":60,"no_redirect":true}'),
    );
    for (const { headers } of received)
      expect(headers).toMatchObject({ authorization: `Bearer ${FLEET_TOKEN}`, 'content-type': 'application/json' });
  });

  it('refuses a field warmpool does not support with 400 UnsupportedField on every path, and sends nothing', async () => {
    const { agent, url, received } = await withStub({ status: 200, headers: {}, body: '{}' });
    for (const [path, send] of everyPath(agent, url)) {
      const answer = await send('{"template":"img","volumes":[{"name":"v"}],"extra":true}');
      expect(answer.status, path).toBe(400);
      expect(JSON.parse(answer.body), path).toEqual({
        error: 'unsupported fields volumes, extra: warmpool does not support them (refused, never dropped)',
        reason: 'UnsupportedField',
        fields: ['volumes', 'extra'],
      });
    }
    expect(received).toHaveLength(0);
  });

  it("refuses sandboxd's require_promoted (warmpool never follows redirects) on every path, never drops it", async () => {
    const { agent, url, received } = await withStub({ status: 200, headers: {}, body: '{}' });
    for (const [path, send] of everyPath(agent, url)) {
      const answer = await send('{"template":"img","require_promoted":true}');
      expect(answer.status, path).toBe(400);
      expect(JSON.parse(answer.body), path).toMatchObject({ reason: 'UnsupportedField', fields: ['require_promoted'] });
    }
    expect(received).toHaveLength(0);
  });

  it.each([
    ['no bearer token', '{"template":"img"}', {}, 401],
    ['a wrong token', '{"template":"img"}', { authorization: 'Bearer nope' }, 401],
    ['a body that is not JSON', '{"template":', undefined, 400],
    ['an empty body', '', undefined, 400],
    ['a claim the schema refuses', '{"template":"a b","ttl_seconds":-1}', undefined, 400],
    ['a claim zod has to judge (astral characters)', JSON.stringify({ template: '😀'.repeat(200) }), undefined, 200],
    ['a body over 1 MiB', JSON.stringify({ template: 'img', claim_ref: 'x'.repeat(1024 * 1024) }), undefined, 400],
  ] as const)('answers %s the same way on every path', async (_case, body, headers, status) => {
    const { agent, url, received } = await withStub({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: '{"id":"sb_1"}',
    });
    const answers = [];
    for (const [, send] of everyPath(agent, url)) answers.push(await send(body, headers));
    expect(answers[0]?.status).toBe(status);
    expect(answers.slice(1)).toEqual([answers[0], answers[0]]);
    expect(received).toHaveLength(status === 200 ? 3 : 0);
  });

  it('reads a body that arrives in many chunks, and refuses one that grows over 1 MiB', async () => {
    const { url, received } = await withStub({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: '{"id":"sb_1"}',
    });
    const chunked = (parts: string[]): ReadableStream<Uint8Array> =>
      new ReadableStream({
        pull(controller) {
          const part = parts.shift();
          if (part === undefined) controller.close();
          else controller.enqueue(new TextEncoder().encode(part));
        },
      });
    const post = (body: ReadableStream<Uint8Array>): Promise<Response> =>
      fetch(`${url}/v1/claim`, {
        method: 'POST',
        body,
        headers: { authorization: `Bearer ${FLEET_TOKEN}` },
        duplex: 'half',
      } as RequestInit);
    expect((await post(chunked(['{"temp', 'late":"im', 'g"}']))).status).toBe(200);
    expect(received.map((r) => r.body)).toEqual(['{"template":"img","net":"none","size":"small","no_redirect":true}']);
    const tooBig = await post(
      chunked(['{"template":"img","claim_ref":"', ...Array<string>(17).fill('x'.repeat(64 * 1024)), '"}']),
    );
    expect(await seen(tooBig)).toMatchObject({
      status: 400,
      body: '{"error":"invalid request body","reason":"BodyTooLarge"}',
    });
    expect(received).toHaveLength(1);
  });

  it('answers 503 with Retry-After on every path when sandboxd cannot be reached', async () => {
    const stub = await stubSandboxd({ status: 200, headers: {}, body: '' });
    const { agent, url } = await agentBefore(stub.url);
    await new Promise<void>((resolve) => stub.server.close(() => resolve()));
    stub.server.closeAllConnections();
    for (const [path, send] of everyPath(agent, url)) {
      expect(await send('{"template":"img"}'), path).toEqual({
        status: 503,
        body: '{"error":"sandboxd unreachable (ECONNREFUSED); the call was not sent, retry","reason":"SandboxdUnreachable"}',
        contentType: 'application/json',
        retryAfter: '1',
        challenge: null,
      });
    }
  });
});
