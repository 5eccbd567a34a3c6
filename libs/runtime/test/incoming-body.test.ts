// readIncomingBody calls `done` once, whenever it is asked: a body read after
// its client went away (a caller held up, say by an access review) must
// settle too, or whoever awaits it waits forever.
import { createServer, type IncomingMessage } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { expect, it } from 'vitest';
import { readIncomingBody, UNREADABLE, type IncomingBody } from '../src/index.js';

it('answers UNREADABLE for a request whose client went away before its body was read', async () => {
  const closed = new Promise<IncomingMessage>((resolve) => {
    const server = createServer((incoming) => {
      incoming.once('close', () => {
        server.close();
        resolve(incoming);
      });
    });
    server.listen(0, '127.0.0.1', () => {
      const client = connect((server.address() as AddressInfo).port, '127.0.0.1');
      client.write('POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}', () => {
        setTimeout(() => client.destroy(), 20);
      });
    });
  });
  const incoming = await closed;
  const body = await Promise.race([
    new Promise<IncomingBody>((resolve) => readIncomingBody(incoming, 1024, resolve)),
    new Promise<'never settled'>((resolve) => setTimeout(() => resolve('never settled'), 200)),
  ]);
  expect(body).toBe(UNREADABLE);
});
