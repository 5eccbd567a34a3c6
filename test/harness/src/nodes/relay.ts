// A loopback port on the host that reaches HOST:PORT inside the cluster's
// network namespace: 127.0.0.1:<port> -> a Unix socket -> relay-main.js,
// which runs in the namespace. Test traffic from the host never leaves loopback.
import { fileURLToPath } from 'node:url';
import { connect, createServer, type Server } from 'node:net';
import { ManagedChild } from '../children.js';
import { eventually } from '../wait.js';
import { existsSync } from 'node:fs';

const RELAY_SCRIPT = fileURLToPath(new URL('../../dist/nodes/relay-main.js', import.meta.url));

export interface Relay {
  /** 127.0.0.1:<port> */
  readonly address: string;
  readonly port: number;
  close(): Promise<void>;
}

export async function startRelay(options: {
  name: string;
  /** The command prefix that enters the namespace (nsenter --net=...). */
  enter: string[];
  socketPath: string;
  target: { host: string; port: number };
  logFile: string;
  /** 0: any free port. */
  hostPort?: number;
}): Promise<Relay> {
  const [command = 'nsenter', ...prefix] = options.enter;
  const inside = new ManagedChild({
    name: `relay ${options.name}`,
    command,
    args: [
      ...prefix,
      process.execPath,
      RELAY_SCRIPT,
      options.socketPath,
      options.target.host,
      String(options.target.port),
    ],
    logFile: options.logFile,
  });
  await eventually(() => existsSync(options.socketPath), {
    timeoutMs: 10_000,
    what: `the relay socket ${options.socketPath}`,
    abort: () => (inside.running ? undefined : `relay exited: ${inside.logTail()}`),
  });
  const open = new Set<{ destroy(): void }>();
  const server: Server = createServer((client) => {
    const upstream = connect(options.socketPath);
    open.add(client);
    open.add(upstream);
    client.pipe(upstream).pipe(client);
    const close = (): void => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
    };
    for (const end of [client, upstream]) {
      end.on('error', close);
      end.on('close', close);
    }
  });
  const port = await new Promise<number>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: '127.0.0.1', port: options.hostPort ?? 0 }, () => {
      const address = server.address();
      resolve(typeof address === 'object' && address !== null ? address.port : 0);
    });
  });
  server.unref();
  return {
    address: `127.0.0.1:${port}`,
    port,
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of open) socket.destroy();
      await closed;
      await inside.stop('SIGTERM', 2000);
    },
  };
}
