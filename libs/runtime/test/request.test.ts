import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { readJsonBody } from '../src/index.js';

const schema = z.object({ warm: z.number().int().min(0, 'warm must not be negative') });
const options = { maxBytes: 64, invalidMessage: 'invalid request body' };

function appWith(emptyAs?: unknown): Hono {
  const app = new Hono();
  app.post('/', async (c) => {
    const body = await readJsonBody(c, schema, { ...options, emptyAs });
    return body.ok ? c.json(body.value) : c.json({ error: body.error }, 400);
  });
  return app;
}

async function post(
  app: Hono,
  body: string | ReadableStream<Uint8Array>,
  headers: Record<string, string> = {},
): Promise<{ status: number; json: unknown }> {
  const res = await app.request('/', { method: 'POST', body, headers, duplex: 'half' } as RequestInit);
  return { status: res.status, json: await res.json() };
}

function chunked(text: string): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  return new ReadableStream({
    start(controller) {
      for (let i = 0; i < bytes.length; i += 16) controller.enqueue(bytes.slice(i, i + 16));
      controller.close();
    },
  });
}

describe('readJsonBody', () => {
  it('hands back the validated value', async () => {
    expect(await post(appWith(), '{"warm":3}')).toEqual({ status: 200, json: { warm: 3 } });
  });

  it('answers the contract message for JSON that does not parse', async () => {
    expect(await post(appWith(), '{"warm":')).toEqual({ status: 400, json: { error: 'invalid request body' } });
  });

  it('refuses a body whose declared length is over the cap without reading it', async () => {
    const big = JSON.stringify({ warm: 1, pad: 'x'.repeat(100) });
    expect(await post(appWith(), big, { 'content-length': String(big.length) })).toEqual({
      status: 400,
      json: { error: 'invalid request body' },
    });
  });

  it('refuses a chunked body once it grows over the cap', async () => {
    const big = JSON.stringify({ warm: 1, pad: 'x'.repeat(100) });
    expect(await post(appWith(), chunked(big))).toEqual({ status: 400, json: { error: 'invalid request body' } });
  });

  it('names the first schema issue with its path', async () => {
    expect(await post(appWith(), '{"warm":-1}')).toEqual({
      status: 400,
      json: { error: 'warm: warm must not be negative' },
    });
  });

  it('reads an empty body as emptyAs where every field may be absent', async () => {
    const lenient = new Hono();
    lenient.post('/', async (c) => {
      const body = await readJsonBody(c, z.object({ ttl: z.number().optional() }), { ...options, emptyAs: {} });
      return body.ok ? c.json(body.value) : c.json({ error: body.error }, 400);
    });
    expect(await post(lenient, '')).toEqual({ status: 200, json: {} });
    expect(await post(appWith(), '')).toEqual({ status: 400, json: { error: 'invalid request body' } });
  });
});
