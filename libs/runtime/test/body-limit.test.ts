// Oversized bodies over real HTTP: refused without reading past the cap, and
// the connection closed after the answer, so neither the app nor Node's
// keep-alive reads the rest, and a client stalled mid-body cannot hold close();
// closed gently, so a client still sending the body reads the answer, not a
// reset.
import { connect, type Socket } from 'node:net';
import type { IncomingMessage } from 'node:http';
import type { HttpBindings } from '@hono/node-server';
import { Hono } from 'hono';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { readIncomingJson, readJsonBody, serveApp, TOO_LARGE, type HttpServer } from '../src/index.js';

const MAX = 1024 * 1024;
const options = { maxBytes: MAX, invalidMessage: 'invalid request body' };

const open: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
});

/** An app with both readers, remembering the request of each refusal. */
async function serve(closeTimeoutMs = 20_000): Promise<{ server: HttpServer; refused: IncomingMessage[] }> {
  const refused: IncomingMessage[] = [];
  const app = new Hono<{ Bindings: HttpBindings }>();
  app.post('/json', async (c) => {
    const body = await readJsonBody(c, z.object({}).loose(), options);
    if (body.ok) return c.json({ ok: true });
    refused.push(c.env.incoming);
    return c.json({ error: body.error, problem: body.problem }, 400);
  });
  app.post(
    '/direct',
    (c) =>
      new Promise<Response>((resolve) => {
        readIncomingJson(c.env.incoming, MAX, (json) => {
          if (json === TOO_LARGE) refused.push(c.env.incoming);
          resolve(json === TOO_LARGE ? c.json({ problem: 'too_large' }, 400) : c.json({ ok: true }));
        });
      }),
  );
  const server = await serveApp(app, { host: '127.0.0.1', port: 0, closeTimeoutMs });
  open.push(() => server.close());
  return { server, refused };
}

interface RawExchange {
  socket: Socket;
  /** Everything the server sent, once it closed the connection. */
  closed: Promise<string>;
}

function raw(server: HttpServer, head: string): RawExchange {
  const socket = connect(server.address.port, '127.0.0.1');
  open.push(() => void socket.destroy());
  socket.on('error', () => undefined);
  let received = '';
  socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
  const closed = new Promise<string>((resolve) => socket.on('close', () => resolve(received)));
  socket.write(head);
  return { socket, closed };
}

const headOf = (path: string, framing: string): string =>
  `POST ${path} HTTP/1.1\r\nhost: test\r\ncontent-type: application/json\r\n${framing}\r\n\r\n`;

describe('a body over the cap', () => {
  it.each(['/json', '/direct'])(
    '%s: a chunked body is read no further than the cap, answered 400, and its connection closed',
    async (path) => {
      const { server, refused } = await serve();
      const { socket, closed } = raw(server, headOf(path, 'transfer-encoding: chunked'));
      // 10 MiB on offer, as fast as the connection takes it, until the server closes it.
      const chunk = Buffer.alloc(64 * 1024, 'x');
      const frame = Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')]);
      let offered = 0;
      const pump = (): void => {
        while (offered < 160 && !socket.destroyed) {
          offered += 1;
          if (!socket.write(frame)) {
            socket.once('drain', pump);
            return;
          }
        }
      };
      pump();
      const answer = await closed;
      expect(answer).toMatch(/^HTTP\/1\.1 400 /);
      expect(answer.toLowerCase()).toContain('connection: close');
      expect(answer).toContain('too_large');
      // What Node read off the socket: the cap and what was in flight, not 16 times the cap.
      const bytesRead = refused[0]?.socket?.bytesRead ?? Number.NaN;
      expect(bytesRead).toBeGreaterThan(MAX);
      expect(bytesRead).toBeLessThan(2 * MAX);
    },
  );

  it.each(['/json', '/direct'])(
    '%s: a declared length over the cap is refused unread, and a client stalled mid-body does not hold close()',
    async (path) => {
      const { server } = await serve(20_000);
      const { socket, closed } = raw(server, headOf(path, `content-length: ${2 * MAX}`));
      socket.write(Buffer.alloc(64 * 1024, 'x'));
      // The client sends nothing more: the server answers and closes the connection all the same.
      const answer = await closed;
      expect(answer).toMatch(/^HTTP\/1\.1 400 /);
      expect(answer.toLowerCase()).toContain('connection: close');
      const started = performance.now();
      await server.close();
      expect(performance.now() - started).toBeLessThan(5_000);
    },
  );

  it.each(['/json', '/direct'])(
    '%s: a client still sending a refused body reads the answer and its end before the connection goes, never a reset',
    async (path) => {
      const { server, refused } = await serve();
      const socket = connect({ port: server.address.port, host: '127.0.0.1', allowHalfOpen: true });
      open.push(() => void socket.destroy());
      const errors: unknown[] = [];
      socket.on('error', (err) => errors.push(err));
      let received = '';
      socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
      const ended = new Promise<void>((resolve) => socket.once('end', resolve));
      const closed = new Promise<void>((resolve) => socket.once('close', resolve));
      let serverEnded = false;
      void ended.then(() => (serverEnded = true));
      // 64 MiB declared and on offer, as fast as the connection takes it, while the server has not ended its side.
      socket.write(headOf(path, `content-length: ${64 * MAX}`));
      const chunk = Buffer.alloc(256 * 1024, 'x');
      let offered = 0;
      const pump = (): void => {
        while (offered < 256 && !serverEnded && !socket.destroyed) {
          offered += 1;
          if (!socket.write(chunk)) {
            socket.once('drain', pump);
            return;
          }
        }
      };
      pump();
      // A reset closes the socket without an end: either way, whichever comes first.
      await Promise.race([ended, closed]);
      // Answered, the server's side ended, and the connection still held: the client's writes cannot fail under it.
      expect(received).toMatch(/^HTTP\/1\.1 400 /);
      expect(received.toLowerCase()).toContain('connection: close');
      expect(errors).toEqual([]);
      expect(refused[0]?.socket?.destroyed).toBe(false);
      // The server lets the connection go by itself, having read nothing more of the body meanwhile.
      await closed;
      expect(refused[0]?.socket?.bytesRead).toBeLessThan(2 * MAX);
    },
  );

  it('keeps the connection of a small declared body the app did not read', async () => {
    const app = new Hono();
    app.post('/ignores-body', (c) => c.body(null, 204));
    const server = await serveApp(app, { host: '127.0.0.1', port: 0 });
    open.push(() => server.close());
    // The answer comes before the body is sent: still unread, but small.
    const { socket } = raw(
      server,
      'POST /ignores-body HTTP/1.1\r\nhost: test\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n',
    );
    const answer = await new Promise<string>((resolve) =>
      socket.once('data', (chunk: Buffer) => resolve(chunk.toString())),
    );
    expect(answer).toMatch(/^HTTP\/1\.1 204 /);
    expect(answer.toLowerCase()).toContain('connection: keep-alive');
    socket.write('{}');
    socket.write('POST /ignores-body HTTP/1.1\r\nhost: test\r\ncontent-length: 0\r\n\r\n');
    const second = await new Promise<string>((resolve) =>
      socket.once('data', (chunk: Buffer) => resolve(chunk.toString())),
    );
    expect(second).toMatch(/^HTTP\/1\.1 204 /);
  });

  it('keeps the connection of a body read in full alive', async () => {
    const { server } = await serve();
    const body = '{"a":1}';
    const { socket } = raw(
      server,
      `POST /json HTTP/1.1\r\nhost: test\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`,
    );
    const answer = await new Promise<string>((resolve) =>
      socket.once('data', (chunk: Buffer) => resolve(chunk.toString())),
    );
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    expect(answer.toLowerCase()).toContain('connection: keep-alive');
  });
});
