// The create route ahead of Hono hears its caller give up from the response
// itself: a caller that hangs up before its answer is gone, and is heard; one
// that hung up before anyone listened (while it was reviewed, say) reads as
// gone; a response answered in full never is, though it closes too.
import { once } from 'node:events';
import { createServer, request, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ResponseGone } from '../../src/http/claims/response-gone.js';

/** A server that hands each response to the spec, and a client that sends one request to it. */
async function exchange(): Promise<{ outgoing: ServerResponse; hangUp(): void; answered: Promise<string> }> {
  let handOver: (outgoing: ServerResponse) => void = () => undefined;
  const handed = new Promise<ServerResponse>((resolve) => (handOver = resolve));
  server = createServer((_incoming, outgoing) => handOver(outgoing));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const call = request({ host: '127.0.0.1', port, method: 'POST', path: '/' });
  const answered = new Promise<string>((resolve) => {
    call.on('response', (res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString()));
      res.on('end', () => resolve(text));
    });
    call.on('error', () => resolve('(hung up)'));
  });
  call.end('{}');
  return { outgoing: await handed, hangUp: () => call.destroy(), answered };
}

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  server = undefined;
});

describe('ResponseGone', () => {
  it('is gone, and heard once, when the caller hangs up before its answer', async () => {
    const { outgoing, hangUp } = await exchange();
    const gone = new ResponseGone(outgoing);
    let heard = 0;
    gone.onGone(() => heard++);
    expect(gone.gone).toBe(false);
    hangUp();
    await once(outgoing, 'close');
    expect(gone.gone).toBe(true);
    expect(heard).toBe(1);
  });

  it('reads as gone when the caller hung up before anyone listened', async () => {
    const { outgoing, hangUp } = await exchange();
    hangUp();
    await once(outgoing, 'close');
    expect(new ResponseGone(outgoing).gone).toBe(true);
  });

  it('is never gone when the answer was written in full, though the response closes', async () => {
    const { outgoing, answered } = await exchange();
    const gone = new ResponseGone(outgoing);
    let heard = 0;
    gone.onGone(() => heard++);
    outgoing.end('{"ok":true}');
    expect(await answered).toBe('{"ok":true}');
    if (!outgoing.closed) await once(outgoing, 'close');
    expect(gone.gone).toBe(false);
    expect(heard).toBe(0);
  });

  it('hears nothing once the claim path stopped listening', async () => {
    const { outgoing, hangUp } = await exchange();
    const gone = new ResponseGone(outgoing);
    let heard = 0;
    gone.onGone(() => heard++)();
    hangUp();
    await once(outgoing, 'close');
    expect(heard).toBe(0);
    expect(outgoing.listenerCount('close')).toBe(0);
  });
});
