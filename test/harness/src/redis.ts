// A private redis-server for one test file: free loopback port, no persistence,
// a temp dir that goes away with it.
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findOnPath } from './binaries.js';
import { forgetRemoveAtExit, ManagedChild, removeAtExit } from './children.js';
import { freePort } from './ports.js';
import { eventually } from './wait.js';

export interface TestRedis {
  /** redis://127.0.0.1:<port> */
  readonly url: string;
  readonly host: string;
  readonly port: number;
  readonly pid: number;
  stop(): Promise<void>;
  /** Same as stop(). */
  close(): Promise<void>;
}

export interface StartRedisOptions {
  readyTimeoutMs?: number;
  /** Listen on this port (e.g. to restart a stopped one where its clients reconnect); default a free one. */
  port?: number;
}

/** One PING over a raw socket: true on +PONG. */
export function ping(host: string, port: number, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    let answer = '';
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.on('error', () => done(false));
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk: Buffer) => {
      answer += chunk.toString('utf8');
      if (answer.includes('\r\n')) done(answer.startsWith('+PONG'));
    });
  });
}

export async function startRedis(options: StartRedisOptions = {}): Promise<TestRedis> {
  const command = findOnPath('redis-server');
  if (command === undefined)
    throw new Error('redis-server not found on PATH: run `make redis` (installs the Debian redis-server package)');
  const host = '127.0.0.1';
  const port = options.port ?? (await freePort(host));
  const dir = mkdtempSync(join(tmpdir(), 'warmpool-redis-'));
  removeAtExit(dir);
  const child = new ManagedChild({
    name: 'redis-server',
    command,
    args: [
      '--port',
      String(port),
      '--bind',
      host,
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      dir,
      '--daemonize',
      'no',
      '--loglevel',
      'warning',
    ],
    logFile: join(dir, 'redis.log'),
    orphanCleanupDir: dir,
  });
  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    await child.stop();
    rmSync(dir, { recursive: true, force: true });
    forgetRemoveAtExit(dir);
  };
  try {
    await eventually(() => ping(host, port), {
      timeoutMs: options.readyTimeoutMs ?? 15_000,
      intervalMs: 50,
      what: () => `redis-server on ${host}:${port} does not answer PING; last log lines:\n${child.logTail()}`,
      abort: () => (child.running ? undefined : `redis-server exited (${JSON.stringify(child.exitStatus)})`),
    });
  } catch (error) {
    await stop();
    throw error;
  }
  return { url: `redis://${host}:${port}`, host, port, pid: child.pid, stop, close: stop };
}
