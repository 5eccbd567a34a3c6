import { request, type ServerResponse } from 'node:http';
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { serveApp } from '../src/index.js';

/** One request on a keep-alive connection; resolves with the status and the Connection header. */
function get(url: string): Promise<{ status: number; connection: string | undefined }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { connection: 'keep-alive' } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('serveApp', () => {
  it('keeps connections alive while serving, and closes the connection of an answer given while closing', async () => {
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const app = new Hono();
    app.get('/quick', (c) => c.text('ok'));
    app.get('/slow', async (c) => {
      await held;
      return c.text('late');
    });
    // The slow answer is written straight on Node's response, as a hot route may do; the rule holds either way.
    app.get('/direct', async (c) => {
      await held;
      const { outgoing } = c.env as { outgoing: ServerResponse };
      outgoing.writeHead(200, { 'content-type': 'text/plain' }).end('direct');
      return RESPONSE_ALREADY_SENT;
    });
    const server = await serveApp(app, { host: '127.0.0.1', port: 0 });
    expect(await get(`${server.url}/quick`)).toEqual({ status: 200, connection: 'keep-alive' });

    const slow = get(`${server.url}/slow`);
    const direct = get(`${server.url}/direct`);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const closed = server.close();
    release();
    expect(await slow).toEqual({ status: 200, connection: 'close' });
    expect(await direct).toEqual({ status: 200, connection: 'close' });
    await closed;
  });

  it('ends close() soon after an answer streamed since before close() ends, not at its timeout', async () => {
    let finish: () => void = () => undefined;
    const app = new Hono();
    // The head goes out at once; the body ends later, as the node agent's batch claim streams its lines.
    app.get('/stream', (c) => {
      const { outgoing } = c.env as { outgoing: ServerResponse };
      outgoing.writeHead(200, { 'content-type': 'text/plain' });
      outgoing.write('first\n');
      finish = () => outgoing.end('last\n');
      return RESPONSE_ALREADY_SENT;
    });
    const server = await serveApp(app, { host: '127.0.0.1', port: 0, closeTimeoutMs: 10_000 });
    const streamed = get(`${server.url}/stream`);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const started = performance.now();
    const closed = server.close();
    await new Promise((resolve) => setTimeout(resolve, 50));
    finish();
    // Its head was written before close(): the connection was kept alive, and goes once idle.
    expect(await streamed).toEqual({ status: 200, connection: 'keep-alive' });
    await closed;
    expect(performance.now() - started).toBeLessThan(2_000);
  });
});

describe('a handler ahead of the app', () => {
  it("answers the requests it takes on Node's objects, and leaves every other one to the app", async () => {
    const app = new Hono();
    app.get('/hot', (c) => c.text('app'));
    app.get('/cold', (c) => c.text('app'));
    let held: ServerResponse | undefined;
    const server = await serveApp(app, {
      host: '127.0.0.1',
      port: 0,
      ahead: (incoming, outgoing) => {
        if (incoming.url !== '/hot') return false;
        // Answered later, as a hop that waits for its upstream does.
        held = outgoing;
        return true;
      },
    });
    const hot = get(`${server.url}/hot`);
    expect(await get(`${server.url}/cold`)).toEqual({ status: 200, connection: 'keep-alive' });
    await new Promise((resolve) => setTimeout(resolve, 20));
    const closed = server.close();
    held?.writeHead(202).end();
    // The server's rules hold on that path too: an answer given while closing takes its connection with it.
    expect(await hot).toEqual({ status: 202, connection: 'close' });
    await closed;
  });
});
