// The agent as the process a DaemonSet runs: dist/main.js (run `npx tsc -b apps/node-agent` first).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ClaimResponse } from '@warmpool/api';
import { startFakeSandboxd, type RunningFakeSandboxd } from '@warmpool/fake-sandboxd';
import { eventually, runCommand, type RunResult } from '@warmpool/harness';
import { afterEach, describe, expect, it } from 'vitest';
import { AGENT_MAIN, call, FLEET_TOKEN, spawnAgent, type AgentProcess } from './helpers.js';

/** The agent run to its end (`--help`, a bad flag), behind the harness's watchdog. */
const run = (args: string[]): Promise<RunResult> =>
  runCommand({ command: process.execPath, args: [AGENT_MAIN, ...args] });
const cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function sandboxd(options: Parameters<typeof startFakeSandboxd>[0] = {}): Promise<RunningFakeSandboxd> {
  const node = await startFakeSandboxd({ apiToken: FLEET_TOKEN, coldBootMs: 20, ...options });
  cleanups.push(() => node.close());
  return node;
}

async function agent(args: string[], env: NodeJS.ProcessEnv = {}): Promise<AgentProcess> {
  const proc = await spawnAgent(args, env);
  cleanups.push(() => proc.stop());
  return proc;
}

function refusesConnections(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(true));
  });
}

describe('node agent process', () => {
  it('prints every flag with --help and exits 0', async () => {
    const { code, stdout } = await run(['--help']);
    expect(code).toBe(0);
    for (const flag of [
      '--listen',
      '--sandboxd-url',
      '--token-file',
      '--node-name',
      '--advertise-address',
      '--kubeconfig',
      '--publish-interval',
      '--min-publish-gap',
      '--sandboxd-timeout',
      '--max-claims-in-flight',
      '--drain-delay',
      '--shutdown-timeout',
      '--log-level',
    ]) {
      expect(stdout).toContain(flag);
    }
    expect(stdout).toContain('WARMPOOL_API_TOKEN');
  });

  it('exits 2 with the reason on a bad flag', async () => {
    const failed = await run(['--no-inventory', '--sandboxd-url', 'ftp://x']);
    expect(failed).toMatchObject({ code: 2, stderr: expect.stringMatching(/only http:\/\/ and unix: are supported/) });
    const unreadable = await run(['--no-inventory', '--token-file', '/nonexistent/token']);
    expect(unreadable).toMatchObject({ code: 2, stderr: expect.stringMatching(/--token-file: cannot read/) });
  });

  it('takes the fleet token from WARMPOOL_API_TOKEN and presents it to sandboxd', async () => {
    const node = await sandboxd();
    const proc = await agent(['--no-inventory', '--sandboxd-url', node.url], { WARMPOOL_API_TOKEN: FLEET_TOKEN });
    expect(
      (await call(proc.url, 'PUT', '/v1/pools', { body: { generation: 1, pools: [{ template: 'img', warm: 1 }] } }))
        .status,
    ).toBe(200);
    expect((await call(proc.url, 'GET', '/v1/info', { token: 'wrong' })).status).toBe(401);
  });

  it('reads the fleet token from --token-file, as mounted from a Secret (trailing newline and all)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'agent-token-'));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    const tokenFile = join(dir, 'token');
    writeFileSync(tokenFile, `${FLEET_TOKEN}\n`);
    const node = await sandboxd();
    const proc = await agent(['--no-inventory', '--sandboxd-url', node.url, '--token-file', tokenFile], {
      WARMPOOL_API_TOKEN: 'ignored-when-a-file-is-given',
    });
    expect((await call(proc.url, 'GET', '/v1/info')).status).toBe(200);
    expect((await call(proc.url, 'GET', '/v1/info', { token: 'ignored-when-a-file-is-given' })).status).toBe(401);
  });

  it('runs fail-closed without a token: it warns, and every guarded call answers 503', async () => {
    const node = await sandboxd();
    const proc = await agent(['--no-inventory', '--sandboxd-url', node.url]);
    expect((await call(proc.url, 'POST', '/v1/claim', { body: { template: 'img' } })).status).toBe(503);
    expect(proc.output()).toMatch(/no API token configured/);
  });

  it('on SIGTERM turns unready at once, keeps serving claims through --drain-delay, then stops accepting and exits 0', async () => {
    const node = await sandboxd();
    const proc = await agent(['--no-inventory', '--sandboxd-url', node.url, '--drain-delay', '4s'], {
      WARMPOOL_API_TOKEN: FLEET_TOKEN,
    });
    await call(proc.url, 'PUT', '/v1/pools', { body: { generation: 1, pools: [{ template: 'img', warm: 5 }] } });
    await eventually(async () => (await call(proc.url, 'GET', '/readyz', { token: null })).status === 200, {
      timeoutMs: 5_000,
      what: 'ready',
    });

    const signalled = performance.now();
    proc.child.kill('SIGTERM');
    const unready = await eventually(
      async () => {
        const answer = await call<{ reason: string; reasons: string[] }>(proc.url, 'GET', '/readyz', { token: null });
        return answer.status === 503 ? answer : undefined;
      },
      { timeoutMs: 3_000, what: '/readyz to turn 503' },
    );
    expect(unready.body).toMatchObject({ reason: 'NotReady', reasons: ['shutting down'] });
    // Still serving (were the listener closed, these would be refused): claims, and the control plane's probe.
    for (let i = 0; i < 3; i++) {
      expect(
        (await call(proc.url, 'POST', '/v1/claim', { body: { template: 'img', claim_ref: `ns/draining-${i}` } }))
          .status,
      ).toBe(200);
    }
    expect((await call(proc.url, 'GET', '/v1/info')).status).toBe(200);

    expect(await proc.exited).toEqual({ code: 0, signal: null });
    expect(performance.now() - signalled).toBeGreaterThanOrEqual(4_000);
    expect(await refusesConnections(proc.url)).toBe(true);
    expect(node.core.claimedCount).toBe(3);
    expect(proc.output()).toMatch(/"msg":"unready; serving on for the drain delay"/);
  });

  it('on SIGTERM (no drain delay) stops accepting, finishes the claims in flight, exits 0 and leaves the sandboxes running', async () => {
    const node = await sandboxd({ coldBootMs: 1_500 });
    const proc = await agent(['--no-inventory', '--sandboxd-url', node.url, '--drain-delay', '0s'], {
      WARMPOOL_API_TOKEN: FLEET_TOKEN,
    });
    await call(proc.url, 'PUT', '/v1/pools', { body: { generation: 1, pools: [{ template: 'img', warm: 0 }] } });

    // No warm sandbox: each claim boots cold and is in flight for 1.5 s.
    const claims = Array.from({ length: 5 }, (_, i) =>
      call<ClaimResponse>(proc.url, 'POST', '/v1/claim', { body: { template: 'img', claim_ref: `ns/claim-${i}` } }),
    );
    await new Promise((resolve) => setTimeout(resolve, 400));
    const signalled = performance.now();
    proc.child.kill('SIGTERM');
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await refusesConnections(proc.url)).toBe(true);

    const answers = await Promise.all(claims);
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
    expect(await proc.exited).toEqual({ code: 0, signal: null });
    expect(performance.now() - signalled).toBeLessThan(5_000);
    expect(node.core.claimedCount).toBe(5);
    for (const answer of answers) expect(node.core.get(answer.body.id)).toBeDefined();
    expect(proc.output()).toMatch(/"msg":"shutdown complete"/);
  });
});
