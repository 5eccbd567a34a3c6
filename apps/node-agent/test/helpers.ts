// Shared set-up for the agent's specs: a real fake-sandboxd over HTTP, an agent
// in front of it, and a small HTTP client that speaks bearer tokens.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeSandboxd, type RunningFakeSandboxd, type StartFakeSandboxdOptions } from '@warmpool/fake-sandboxd';
import { httpCall, ManagedChild, type ChildExit, type HttpAnswer } from '@warmpool/harness';
import { createNodeAgent, type NodeAgent, type NodeAgentOptions } from '@warmpool/node-agent';

export const FLEET_TOKEN = 'fleet-token-for-tests';

export type Answer<T = unknown> = HttpAnswer<T>;

export interface CallOptions {
  token?: string | null;
  body?: unknown;
  /** Sent as is (not JSON-encoded). */
  rawBody?: string | ReadableStream<Uint8Array>;
}

/** One HTTP call with the fleet token unless told otherwise; `token: null` sends no Authorization header. */
export function call<T = unknown>(
  baseUrl: string,
  method: string,
  path: string,
  options: CallOptions = {},
): Promise<Answer<T>> {
  return httpCall<T>(baseUrl, method, path, {
    ...options,
    token: options.token === undefined ? FLEET_TOKEN : options.token,
  });
}

export interface Node {
  sandboxd: RunningFakeSandboxd;
  agent: NodeAgent;
  url: string;
  close(): Promise<void>;
}

/** A fake sandboxd (sharing the fleet token) with an agent in front, both on loopback. */
export async function startNode(
  agentOptions: Partial<NodeAgentOptions> = {},
  sandboxdOptions: StartFakeSandboxdOptions = {},
): Promise<Node> {
  const sandboxd = await startFakeSandboxd({ apiToken: FLEET_TOKEN, coldBootMs: 20, ...sandboxdOptions });
  const agent = createNodeAgent({ sandboxdUrl: sandboxd.url, token: FLEET_TOKEN, pollIntervalMs: 50, ...agentOptions });
  const { url } = await agent.start();
  return {
    sandboxd,
    agent,
    url,
    async close() {
      await agent.close();
      await sandboxd.close();
    },
  };
}

export const AGENT_MAIN = new URL('../dist/main.js', import.meta.url).pathname;
const FAKE_SANDBOXD_MAIN = new URL('../../fake-sandboxd/dist/main.js', import.meta.url).pathname;

export interface SandboxdProcess {
  url: string;
  /** Everything it logged so far. */
  output(): string;
  stop(): Promise<void>;
}

export interface SpawnFakeSandboxdOptions {
  /** The root token from this file (re-read when it changes) instead of the fleet token. */
  tokenFile?: string;
}

/** Runs fake-sandboxd's dist/main.js (with the fleet token) on a free loopback port, behind the harness's watchdog. */
export async function spawnFakeSandboxd(
  args: string[],
  options: SpawnFakeSandboxdOptions = {},
): Promise<SandboxdProcess> {
  const dir = mkdtempSync(join(tmpdir(), 'warmpool-sandboxd-'));
  const token =
    options.tokenFile === undefined ? ['--api-token', FLEET_TOKEN] : ['--api-token-file', options.tokenFile];
  const child = new ManagedChild({
    name: 'fake-sandboxd',
    command: process.execPath,
    args: [FAKE_SANDBOXD_MAIN, '--listen', '127.0.0.1:0', ...token, ...args],
    env: { PATH: process.env['PATH'] },
    logFile: join(dir, 'sandboxd.log'),
    orphanCleanupDir: dir,
  });
  const address = await servingOrStopped(
    child,
    dir,
    child.logged((line) => /"msg":"serving","address":"([^"]+)"/.exec(line)?.[1], {
      timeoutMs: 15_000,
      what: 'fake-sandboxd to serve',
    }),
  );
  return {
    url: `http://${address}`,
    output: () => child.log(),
    async stop() {
      await child.stop('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface AgentProcess {
  /** Behind the harness's watchdog: it dies with the test process, even on SIGKILL. */
  child: ManagedChild;
  url: string;
  /** Everything it logged so far. */
  output(): string;
  exited: Promise<ChildExit>;
  stop(): Promise<void>;
}

/** Runs dist/main.js on a free loopback port and waits until it logs that it serves. */
export async function spawnAgent(args: string[], env: NodeJS.ProcessEnv = {}): Promise<AgentProcess> {
  const dir = mkdtempSync(join(tmpdir(), 'warmpool-agent-'));
  const child = new ManagedChild({
    name: 'node-agent',
    command: process.execPath,
    args: [AGENT_MAIN, '--listen', '127.0.0.1:0', ...args],
    env: { PATH: process.env['PATH'], ...env },
    logFile: join(dir, 'agent.log'),
    orphanCleanupDir: dir,
  });
  const url = await servingOrStopped(
    child,
    dir,
    child.logged((line) => /"msg":"node agent serving","url":"([^"]+)"/.exec(line)?.[1], {
      timeoutMs: 15_000,
      what: 'the agent to serve',
    }),
  );
  return {
    child,
    url,
    output: () => child.log(),
    exited: child.exited,
    async stop() {
      await child.stop('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** What a child logs when it serves; a child that never does is stopped and its directory removed. */
async function servingOrStopped<T>(child: ManagedChild, dir: string, serving: Promise<T>): Promise<T> {
  try {
    return await serving;
  } catch (err) {
    await child.stop('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}
