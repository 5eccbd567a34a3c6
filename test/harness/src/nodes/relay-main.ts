#!/usr/bin/env node
// Runs inside the cluster's network namespace: accepts on a Unix socket (paths
// are not namespaced, so the host side can reach it) and connects each stream
// to HOST:PORT as seen from inside the namespace.
//
//   node relay-main.js <unix-socket> <host> <port>
import { rmSync } from 'node:fs';
import { connect, createServer } from 'node:net';

const [socketPath, host, portText] = process.argv.slice(2);
if (socketPath === undefined || host === undefined || portText === undefined) {
  console.error('usage: relay-main.js <unix-socket> <host> <port>');
  process.exit(2);
}
rmSync(socketPath, { force: true });
const server = createServer((client) => {
  const upstream = connect({ host, port: Number(portText) });
  client.pipe(upstream).pipe(client);
  const close = (): void => {
    client.destroy();
    upstream.destroy();
  };
  client.on('error', close);
  upstream.on('error', close);
  client.on('close', close);
  upstream.on('close', close);
});
server.listen(socketPath, () => console.error(`relaying ${socketPath} -> ${host}:${portText}`));
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => server.close(() => process.exit(0)));
