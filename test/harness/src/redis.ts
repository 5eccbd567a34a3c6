// A private redis-server for one test file: free loopback port, no persistence,
// a temp dir that goes away with it. Optionally with a password, TLS, or as a
// replica of another (the Sentinel topology, redis-sentinel.ts, builds on it).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findOnPath } from './binaries.js';
import { forgetRemoveAtExit, ManagedChild, removeAtExit } from './children.js';
import { freePort } from './ports.js';
import { respCommand, type RespTarget } from './resp.js';
import { eventually } from './wait.js';

export interface TestRedis {
  /** redis://127.0.0.1:<port>, or rediss:// with TLS; never with the password in it. */
  readonly url: string;
  readonly host: string;
  readonly port: number;
  readonly pid: number;
  /** How the harness itself reaches it (respCommand): address, password, CA. */
  readonly target: RespTarget;
  /** SIGKILL, as a crash: no shutdown, nothing flushed. Resolves once the process is reaped. */
  kill(): Promise<void>;
  stop(): Promise<void>;
  /** Same as stop(). */
  close(): Promise<void>;
}

export interface StartRedisOptions {
  readyTimeoutMs?: number;
  /** Listen on this port (e.g. to restart a stopped one where its clients reconnect); default a free one. */
  port?: number;
  /** `requirepass` (and `masterauth`, for a replica or a demoted primary). */
  password?: string;
  /** Serve TLS only (no plaintext port) with this certificate; the URL is then rediss://. */
  tls?: RedisTls;
  /** Start as a replica of this primary. */
  replicaOf?: { host: string; port: number };
  /** For messages and the temp dir's name (default "redis-server"). */
  name?: string;
}

export interface RedisTls {
  certPem: string;
  keyPem: string;
  /** The CA that signed certPem, which the harness's own checks trust (default: certPem, self-signed). */
  caPem?: string;
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
  const name = options.name ?? 'redis-server';
  const dir = mkdtempSync(join(tmpdir(), 'warmpool-redis-'));
  removeAtExit(dir);
  const child = new ManagedChild({
    name,
    command,
    args: [
      ...listenArgs(port, dir, options.tls),
      ...(options.password !== undefined ? ['--requirepass', options.password, '--masterauth', options.password] : []),
      ...(options.replicaOf !== undefined
        ? ['--replicaof', options.replicaOf.host, String(options.replicaOf.port)]
        : []),
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
  const kill = async (): Promise<void> => {
    child.kill('SIGKILL');
    await child.exited;
  };
  const target: RespTarget = {
    host,
    port,
    ...(options.password !== undefined ? { password: options.password } : {}),
    ...(options.tls !== undefined ? { tlsCa: options.tls.caPem ?? options.tls.certPem } : {}),
  };
  try {
    await eventually(
      () =>
        respCommand(target, ['PING']).then(
          (reply) => reply === 'PONG',
          () => false,
        ),
      {
        timeoutMs: options.readyTimeoutMs ?? 15_000,
        intervalMs: 50,
        what: () => `${name} on ${host}:${port} does not answer PING; last log lines:\n${child.logTail()}`,
        abort: () => (child.running ? undefined : `${name} exited (${JSON.stringify(child.exitStatus)})`),
      },
    );
  } catch (error) {
    await stop();
    throw error;
  }
  const scheme = options.tls !== undefined ? 'rediss' : 'redis';
  return { url: `${scheme}://${host}:${port}`, host, port, pid: child.pid, target, kill, stop, close: stop };
}

/** The plaintext port, or with TLS a TLS port only (clients need not present a certificate). */
function listenArgs(port: number, dir: string, tls: RedisTls | undefined): string[] {
  if (tls === undefined) return ['--port', String(port)];
  const certFile = join(dir, 'tls.crt');
  const keyFile = join(dir, 'tls.key');
  writeFileSync(certFile, tls.certPem, { mode: 0o600 });
  writeFileSync(keyFile, tls.keyPem, { mode: 0o600 });
  return [
    '--port',
    '0',
    '--tls-port',
    String(port),
    '--tls-cert-file',
    certFile,
    '--tls-key-file',
    keyFile,
    '--tls-auth-clients',
    'no',
  ];
}

/**
 * Calls per command since the server started (INFO commandstats), commands a
 * Lua script runs included: what a spec or benchmark counts a protocol's cost in.
 */
export async function commandStats(redis: { info(section: string): Promise<string> }): Promise<Map<string, number>> {
  const text = await redis.info('commandstats');
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = /^cmdstat_([^:]+):calls=(\d+)/.exec(line.trim());
    if (m !== null) out.set(m[1] ?? '', Number(m[2]));
  }
  return out;
}
