// Rotating the fleet token under load: the real agent and fake-sandboxd
// processes (dist/main.js of each; `make test` builds first), each reading the
// token from its own file, the files replaced at different moments, a client
// claiming all along and switching to the new token once the agent has it.
// Every holder accepts the replaced token for --token-grace, and the agent
// falls back to the other token when sandboxd refuses the one it sent, so not
// one claim may fail whichever side reads the new token first.
import { eventually } from '@warmpool/harness';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ClaimResponse } from '@warmpool/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, spawnAgent, spawnFakeSandboxd, type AgentProcess, type SandboxdProcess } from './helpers.js';

const TOKENS = ['rotation-token-one', 'rotation-token-two', 'rotation-token-three'] as const;

/** As kubelet swaps a Secret volume: the new content appears at once, never half written. */
function replaceFile(path: string, content: string): void {
  writeFileSync(`${path}.new`, `${content}\n`);
  renameSync(`${path}.new`, path);
}

function reloads(output: string): number {
  return output.split('\n').filter((line) => line.includes('token reloaded')).length;
}

/** Claims (each released again) with up to `concurrency` in flight, until stopped; every answer is kept. */
function claimLoop(
  agentUrl: string,
  token: () => string,
  concurrency: number,
): { stop(): Promise<Map<number, number>>; done(): number } {
  const statuses = new Map<number, number>();
  let running = true;
  let done = 0;
  const count = (status: number): void => {
    statuses.set(status, (statuses.get(status) ?? 0) + 1);
  };
  const worker = async (): Promise<void> => {
    while (running) {
      const claimed = await call<ClaimResponse>(agentUrl, 'POST', '/v1/claim', {
        token: token(),
        body: { template: 'img', ttl_seconds: 60 },
      });
      count(claimed.status);
      if (claimed.status === 200)
        count((await call(agentUrl, 'POST', `/v1/sandboxes/${claimed.body.id}/release`, { token: token() })).status);
      done++;
    }
  };
  const workers = Array.from({ length: concurrency }, () => worker());
  return {
    async stop() {
      running = false;
      await Promise.all(workers);
      return statuses;
    },
    done: () => done,
  };
}

describe('fleet token rotation under load', () => {
  let dir: string;
  let sandboxd: SandboxdProcess;
  let agent: AgentProcess;
  let clientToken: string = TOKENS[0];
  const agentFile = (): string => join(dir, 'agent-token');
  const sandboxdFile = (): string => join(dir, 'sandboxd-token');

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'warmpool-rotation-'));
    replaceFile(agentFile(), TOKENS[0]);
    replaceFile(sandboxdFile(), TOKENS[0]);
    sandboxd = await spawnFakeSandboxd(
      [
        '--token-grace',
        '5m',
        '--cold-boot-ms',
        '1ms',
        '--refill-rate',
        '10000',
        '--room',
        '1000',
        '--max-claims',
        '1000',
      ],
      { tokenFile: sandboxdFile() },
    );
    agent = await spawnAgent([
      '--no-inventory',
      '--sandboxd-url',
      sandboxd.url,
      '--token-file',
      agentFile(),
      '--token-grace',
      '5m',
      '--poll-interval',
      '200ms',
    ]);
    const pools = await call(agent.url, 'PUT', '/v1/pools', {
      token: clientToken,
      body: { generation: 1, pools: [{ template: 'img', warm: 20 }] },
    });
    expect(pools.status).toBe(200);
  }, 60_000);

  afterAll(async () => {
    await agent?.stop();
    await sandboxd?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('fails no claim when sandboxd reads the new token first, then the agent, then the client switches', async () => {
    const load = claimLoop(agent.url, () => clientToken, 8);
    try {
      await eventually(() => load.done() > 20, { timeoutMs: 20_000, what: 'claims to flow' });
      replaceFile(sandboxdFile(), TOKENS[1]);
      await eventually(() => reloads(sandboxd.output()) === 1, {
        timeoutMs: 30_000,
        what: 'fake-sandboxd to read the new token',
      });
      const before = load.done();
      await eventually(() => load.done() > before + 20, {
        timeoutMs: 20_000,
        what: 'claims while only sandboxd has the new token',
      });
      replaceFile(agentFile(), TOKENS[1]);
      await eventually(() => reloads(agent.output()) === 1, {
        timeoutMs: 30_000,
        what: 'the agent to read the new token',
      });
      clientToken = TOKENS[1];
      const after = load.done();
      await eventually(() => load.done() > after + 20, { timeoutMs: 20_000, what: 'claims with the new token' });
    } finally {
      const statuses = await load.stop();
      expect(Object.fromEntries(statuses)).toEqual(
        Object.fromEntries([...statuses].filter(([status]) => status >= 200 && status < 300)),
      );
      expect(statuses.get(200)).toBeGreaterThan(60);
    }
  }, 120_000);

  it('fails no claim when the agent reads the new token first, presenting it to a sandboxd that does not have it yet', async () => {
    const load = claimLoop(agent.url, () => clientToken, 8);
    try {
      await eventually(() => load.done() > 20, { timeoutMs: 20_000, what: 'claims to flow' });
      replaceFile(agentFile(), TOKENS[2]);
      // A little later, so that the two processes see their files at different moments.
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      replaceFile(sandboxdFile(), TOKENS[2]);
      await eventually(() => reloads(agent.output()) === 2, {
        timeoutMs: 30_000,
        what: 'the agent to read the new token',
      });
      clientToken = TOKENS[2];
      let before = load.done();
      await eventually(() => load.done() > before + 20, { timeoutMs: 20_000, what: 'claims with the new token' });
      await eventually(() => reloads(sandboxd.output()) === 2, {
        timeoutMs: 30_000,
        what: 'fake-sandboxd to read the new token',
      });
      before = load.done();
      await eventually(() => load.done() > before + 20, { timeoutMs: 20_000, what: 'claims once both have it' });
    } finally {
      const statuses = await load.stop();
      expect(Object.fromEntries(statuses)).toEqual(
        Object.fromEntries([...statuses].filter(([status]) => status >= 200 && status < 300)),
      );
    }
    // The agent's own calls kept working too: it never went unready.
    expect((await call(agent.url, 'GET', '/readyz', { token: null })).status).toBe(200);
    expect(agent.output()).not.toContain('refuses the agent');
  }, 120_000);

  it('accepts the latest token and the one it replaced, and no older one', async () => {
    expect((await call(agent.url, 'GET', '/v1/info', { token: TOKENS[2] })).status).toBe(200);
    expect((await call(agent.url, 'GET', '/v1/info', { token: TOKENS[1] })).status).toBe(200);
    expect((await call(agent.url, 'GET', '/v1/info', { token: TOKENS[0] })).status).toBe(401);
    expect((await call(agent.url, 'GET', '/v1/info', { token: 'never-a-token' })).status).toBe(401);
  });
});
