// Free loopback ports for the processes tests start. We check one, release it
// and hand it out; the short window in which another test could pick the same
// one is accepted, and starters that restart retry on EADDRINUSE.
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

/**
 * A free loopback port for a child to listen on. Always a quiet one: a port
 * from the ephemeral range can be taken by any outgoing connection between our
 * check and the child's listen, the child's own connections to etcd, the
 * apiserver or Redis included (seen in CI as EADDRINUSE).
 */
export function freePort(host = '127.0.0.1'): Promise<number> {
  return quietPort(host);
}

/** `count` distinct free quiet ports. */
export async function freePorts(count: number, host = '127.0.0.1'): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await quietPort(host));
  return [...ports];
}
