// Loopback ports for the processes the specs start. Taken below the kernel's
// ephemeral range (32768+ on Linux), so no outgoing connection can grab one
// between our check and the child's listen; a clash with another test's pick
// is still possible, so starters retry on EADDRINUSE.
import { createServer } from 'node:net';

const LOW = 20_000;
const SPAN = 12_000;

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen({ host: '127.0.0.1', port, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

export async function quietPort(): Promise<number> {
  for (;;) {
    const port = LOW + Math.floor(Math.random() * SPAN);
    if (await canListen(port)) return port;
  }
}

export function addressInUse(log: string): boolean {
  return log.includes('EADDRINUSE');
}
