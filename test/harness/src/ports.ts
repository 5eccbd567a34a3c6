// Free loopback ports. The OS picks one, we release it and hand it out; the
// short window in which another process could take it is accepted for tests.
import { createServer } from 'node:net';

/** Whether `host:port` can be bound right now. */
export function canListen(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

// Ports for processes a spec starts and restarts on the same port. Taken below
// the kernel's ephemeral range (32768+ on Linux), so no outgoing connection can
// grab one between our check and the child's listen; a clash with another
// test's pick is still possible, so starters retry on EADDRINUSE.
const QUIET_LOW = 20_000;
const QUIET_SPAN = 12_000;

/** A loopback port below the ephemeral range that is free right now. */
export async function quietPort(host = '127.0.0.1'): Promise<number> {
  for (;;) {
    const port = QUIET_LOW + Math.floor(Math.random() * QUIET_SPAN);
    if (await canListen(host, port)) return port;
  }
}

/** Whether a child's log says its port was taken meanwhile (retry on another). */
export function addressInUse(log: string): boolean {
  return log.includes('EADDRINUSE');
}

export function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen({ host, port: 0, exclusive: true }, () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => (port > 0 ? resolve(port) : reject(new Error('no port assigned'))));
    });
  });
}

/** `count` distinct free ports (held open together so none repeats). */
export async function freePorts(count: number, host = '127.0.0.1'): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<ReturnType<typeof createServer>>((resolve, reject) => {
          const server = createServer();
          server.once('error', reject);
          server.listen({ host, port: 0, exclusive: true }, () => resolve(server));
        }),
    ),
  );
  const ports = servers.map((s) => {
    const address = s.address();
    return typeof address === 'object' && address !== null ? address.port : 0;
  });
  await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  return ports;
}
