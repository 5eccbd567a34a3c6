// One real node without Kubernetes: a fake-sandboxd process and a node-agent
// process (`--no-inventory`) in front of it, on loopback. Built from
// apps/*/dist (`npx tsc -b apps/node-agent apps/fake-sandboxd`).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually, NodeScript, quietPort } from '@warmpool/harness';
import { FAKE_SANDBOXD_MAIN, NODE_AGENT_MAIN } from './fleet.js';

export interface LoneAgent {
  /** host:port, as the control plane names agents. */
  address: string;
  url: string;
  /** The agent's Prometheus text. */
  metrics(): Promise<string>;
  stop(): Promise<void>;
}

async function served(script: NodeScript, url: string, what: string): Promise<void> {
  await eventually(
    async () => {
      const res = await fetch(url);
      await res.body?.cancel();
      return res.status === 200;
    },
    { timeoutMs: 30_000, what, abort: () => (script.running ? undefined : `${what}: exited\n${script.log()}`) },
  );
}

/** Starts both processes with `token` and `sandboxdArgs` (e.g. `--warm-claim-ms`), and waits until the agent is ready. */
export async function startLoneAgent(token: string, sandboxdArgs: string[] = []): Promise<LoneAgent> {
  const dir = mkdtempSync(join(tmpdir(), 'warmpool-lone-agent-'));
  const [sandboxdPort, agentPort] = [await quietPort(), await quietPort()];
  const sandboxd = new NodeScript({
    name: 'lone-sandboxd',
    script: FAKE_SANDBOXD_MAIN,
    args: ['--listen', `127.0.0.1:${sandboxdPort}`, '--api-token', token, '--cold-boot-ms', '20', ...sandboxdArgs],
    logFile: join(dir, 'sandboxd.log'),
  });
  const agent = new NodeScript({
    name: 'lone-agent',
    script: NODE_AGENT_MAIN,
    args: [
      '--listen',
      `127.0.0.1:${agentPort}`,
      '--sandboxd-url',
      `http://127.0.0.1:${sandboxdPort}`,
      '--no-inventory',
      '--poll-interval',
      '200ms',
      '--drain-delay',
      '0s',
      '--log-level',
      'warn',
    ],
    env: { WARMPOOL_API_TOKEN: token },
    logFile: join(dir, 'agent.log'),
  });
  const url = `http://127.0.0.1:${agentPort}`;
  const stop = async (): Promise<void> => {
    await agent.stop('SIGKILL');
    await sandboxd.stop('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await served(sandboxd, `http://127.0.0.1:${sandboxdPort}/healthz`, 'fake-sandboxd to serve');
    await served(agent, `${url}/readyz`, 'the agent to be ready');
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    address: `127.0.0.1:${agentPort}`,
    url,
    metrics: async () => (await fetch(`${url}/metrics`)).text(),
    stop,
  };
}
