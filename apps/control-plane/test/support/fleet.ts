// A fleet of real nodes for the specs: per node, a core/v1 Node vouching for
// 127.0.0.1 (the agents' address), a fake-sandboxd process and a real
// node-agent process in front of it, publishing its NodeInventory to the test
// apiserver. Built from apps/*/dist (`npx tsc -b apps/node-agent apps/fake-sandboxd`).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { poolKeyId, type NodeInfo } from '@warmpool/api';
import {
  addressInUse,
  eventually,
  nodeObject,
  NodeScript,
  quietPort,
  startSandboxdVariant,
  type SandboxdVariant,
  type SandboxdVariantBehaviour,
} from '@warmpool/harness';

const APPS = fileURLToPath(new URL('../../../', import.meta.url));
export const NODE_AGENT_MAIN = join(APPS, 'node-agent/dist/main.js');
export const FAKE_SANDBOXD_MAIN = join(APPS, 'fake-sandboxd/dist/main.js');
export const CONTROL_PLANE_MAIN = join(APPS, 'control-plane/dist/main.js');

export function requireBuilt(): void {
  for (const file of [NODE_AGENT_MAIN, FAKE_SANDBOXD_MAIN, CONTROL_PLANE_MAIN]) {
    if (!existsSync(file))
      throw new Error(
        `${file} is missing: run \`npx tsc -b apps/node-agent apps/fake-sandboxd apps/control-plane\` first`,
      );
  }
}

export interface FleetOptions {
  /** Where logs go. */
  dir: string;
  kubeconfigPath: string;
  tokenFile: string;
  token: string;
  count: number;
  /** status.capacity each agent publishes (unknown when omitted). */
  capacity?: number;
  /** Agents republish their inventory this often (default 1s). */
  publishInterval?: string;
  /** The agents' --log-level (default warn; info logs every applied push with its generation). */
  agentLogLevel?: string;
  /**
   * More fake-sandboxd flags (a later flag wins over the defaults here), e.g. `--warm-claim-ms 8s` or a slower
   * `--cold-boot-ms`.
   */
  sandboxdArgs?: string[];
  /**
   * Per node index: fake-sandboxd flags for that node only (after sandboxdArgs, so they win), e.g. one of the real
   * daemon's variants (`['--older-daemon']`, `['--redirect-peers', '10.0.0.6:7777']`, `['--cold-boot-ms', '3000']`).
   */
  nodeSandboxdArgs?: Record<number, string[]>;
  /**
   * Per node index: its agent talks to a SandboxdVariant in front of its fake-sandboxd, for the answers the fake
   * cannot give (a redirect despite `no_redirect`, fields the fake never adds, a row without an id) and to record the
   * bodies the agent forwards. Every variant the fake has a switch for is set with nodeSandboxdArgs instead.
   */
  variants?: Record<number, SandboxdVariantBehaviour>;
}

export class FleetNode {
  readonly name: string;
  /** Its index in the fleet (node-<index>). */
  readonly index: number;
  agentPort: number;
  sandboxdPort: number;
  readonly #options: FleetOptions;
  sandboxd: NodeScript | undefined;
  /** The stand-in for real-sandboxd behaviour between the agent and fake-sandboxd, when the fleet asked for one. */
  variant: SandboxdVariant | undefined;
  agent: NodeScript | undefined;
  readonly #agents: NodeScript[] = [];
  #runs = 0;

  constructor(options: FleetOptions, index: number, agentPort: number, sandboxdPort: number) {
    this.#options = options;
    this.index = index;
    this.name = `node-${index}`;
    this.agentPort = agentPort;
    this.sandboxdPort = sandboxdPort;
  }

  /** Starts fake-sandboxd and waits until it answers; another port if its port was taken meanwhile. */
  async startSandboxd(): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const sandboxd = new NodeScript({
        name: `${this.name}-sandboxd`,
        script: FAKE_SANDBOXD_MAIN,
        args: [
          '--listen',
          `127.0.0.1:${this.sandboxdPort}`,
          '--api-token',
          this.#options.token,
          '--cold-boot-ms',
          '20',
          '--refill-rate',
          '1000',
          '--log-level',
          'warn',
          ...(this.#options.sandboxdArgs ?? []),
          ...(this.#options.nodeSandboxdArgs?.[this.index] ?? []),
        ],
        logFile: join(this.#options.dir, `${this.name}-sandboxd-${++this.#runs}.log`),
      });
      this.sandboxd = sandboxd;
      try {
        await eventually(
          async () => {
            const res = await fetch(`${this.sandboxdUrl}/healthz`);
            await res.body?.cancel();
            return res.ok;
          },
          {
            timeoutMs: 20_000,
            what: `fake-sandboxd of ${this.name}`,
            abort: () => (sandboxd.running ? undefined : `fake-sandboxd of ${this.name} exited:\n${sandboxd.log()}`),
          },
        );
        return;
      } catch (err) {
        if (attempt >= 5 || !addressInUse(sandboxd.log())) throw err;
        this.sandboxdPort = await quietPort();
      }
    }
  }

  get agentUrl(): string {
    return `http://127.0.0.1:${this.agentPort}`;
  }

  get sandboxdUrl(): string {
    return `http://127.0.0.1:${this.sandboxdPort}`;
  }

  /** Puts a SandboxdVariant between this node's agent and its fake-sandboxd (before the agent starts). */
  async startVariant(behaviour: SandboxdVariantBehaviour): Promise<SandboxdVariant> {
    this.variant = await startSandboxdVariant(this.sandboxdUrl, behaviour);
    return this.variant;
  }

  /**
   * Starts the agent and waits until it is ready (its NodeInventory is published); another port if its port was taken.
   */
  async startAgent(): Promise<void> {
    if (this.agent?.running === true) return;
    for (let attempt = 1; ; attempt++) {
      const agent = this.#spawnAgent();
      this.agent = agent;
      this.#agents.push(agent);
      try {
        await eventually(
          async () => {
            const res = await fetch(`${this.agentUrl}/readyz`);
            await res.body?.cancel();
            return res.status === 200;
          },
          {
            timeoutMs: 30_000,
            what: `the agent of ${this.name} to be ready`,
            abort: () => (agent.running ? undefined : `the agent of ${this.name} exited:\n${agent.log()}`),
          },
        );
        return;
      } catch (err) {
        if (attempt >= 5 || !addressInUse(agent.log())) throw err;
        this.agentPort = await quietPort();
      }
    }
  }

  #spawnAgent(): NodeScript {
    const o = this.#options;
    const args = [
      '--listen',
      `127.0.0.1:${this.agentPort}`,
      '--sandboxd-url',
      this.variant?.url ?? this.sandboxdUrl,
      '--token-file',
      o.tokenFile,
      '--node-name',
      this.name,
      '--kubeconfig',
      o.kubeconfigPath,
      '--publish-interval',
      o.publishInterval ?? '1s',
      '--min-publish-gap',
      '100ms',
      '--poll-interval',
      '200ms',
      // Tests stop agents to see them go: no drain delay before the listener closes.
      '--drain-delay',
      '0s',
      '--log-level',
      o.agentLogLevel ?? 'warn',
      ...(o.capacity !== undefined ? ['--capacity', String(o.capacity)] : []),
    ];
    return new NodeScript({
      name: `${this.name}-agent`,
      script: NODE_AGENT_MAIN,
      args,
      logFile: join(o.dir, `${this.name}-agent-${++this.#runs}.log`),
    });
  }

  async stopAgent(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    await this.agent?.stop(signal);
  }

  /**
   * Every push its agents (this run and earlier ones) logged as applied, with the agent's timestamp; needs
   * agentLogLevel info.
   */
  appliedPushes(): Array<{ node: string; generation: number; at: number }> {
    const applied: Array<{ node: string; generation: number; at: number }> = [];
    for (const proc of this.#agents) {
      for (const line of proc.logLines()) {
        if (line['msg'] === 'pools set' && typeof line['generation'] === 'number')
          applied.push({ node: this.name, generation: line['generation'], at: Date.parse(String(line['ts'])) });
      }
    }
    return applied;
  }

  /** What the node's sandboxd says, straight from it (not through the agent). */
  async info(): Promise<NodeInfo> {
    const res = await fetch(`${this.sandboxdUrl}/v1/info`, {
      headers: { authorization: `Bearer ${this.#options.token}` },
    });
    if (!res.ok) throw new Error(`sandboxd of ${this.name} answered ${res.status}`);
    return (await res.json()) as NodeInfo;
  }

  /** pool key id → target, as sandboxd has it (keys with target 0 or drained are absent). */
  async targets(): Promise<Map<string, number>> {
    const targets = new Map<string, number>();
    for (const pool of (await this.info()).pools) if (pool.target > 0) targets.set(poolKeyId(pool.key), pool.target);
    return targets;
  }

  /** pool key id → warm sandboxes. */
  async warm(): Promise<Map<string, number>> {
    const warm = new Map<string, number>();
    for (const pool of (await this.info()).pools) warm.set(poolKeyId(pool.key), pool.warm);
    return warm;
  }

  /** The agent's Prometheus text. */
  async agentMetrics(): Promise<string> {
    const res = await fetch(`${this.agentUrl}/metrics`);
    return res.text();
  }

  async stop(): Promise<void> {
    await this.agent?.stop();
    await this.variant?.close();
    await this.sandboxd?.stop();
  }
}

export class Fleet {
  readonly nodes: FleetNode[];

  constructor(nodes: FleetNode[]) {
    this.nodes = nodes;
  }

  /** Per node: the target of one pool key (0 when absent). */
  async targetsOf(keyId: string): Promise<number[]> {
    return Promise.all(this.nodes.map(async (node) => (await node.targets()).get(keyId) ?? 0));
  }

  /** Per node: the warm sandboxes of one pool key (0 when absent). */
  async warmOf(keyId: string): Promise<number[]> {
    return Promise.all(this.nodes.map(async (node) => (await node.warm()).get(keyId) ?? 0));
  }

  /** Whether no node has the key at all (drained). */
  async absentEverywhere(keyId: string): Promise<boolean> {
    const infos = await Promise.all(this.nodes.map((node) => node.info()));
    return infos.every((info) => info.pools.every((p) => poolKeyId(p.key) !== keyId));
  }

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((node) => node.stop()));
  }
}

export async function startFleet(options: FleetOptions): Promise<Fleet> {
  requireBuilt();
  const nodes: FleetNode[] = [];
  for (let i = 0; i < options.count; i++) nodes.push(new FleetNode(options, i, await quietPort(), await quietPort()));
  const fleet = new Fleet(nodes);
  try {
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromFile(options.kubeconfigPath);
    const core = kubeConfig.makeApiClient(CoreV1Api);
    for (const node of nodes) await core.createNode({ body: nodeObject(node.name, '127.0.0.1') });
    await Promise.all(nodes.map((node) => node.startSandboxd()));
    for (const [i, behaviour] of Object.entries(options.variants ?? {}))
      await nodes[Number(i)]?.startVariant(behaviour);
    await Promise.all(nodes.map((node) => node.startAgent()));
  } catch (err) {
    await fleet.stop();
    throw err;
  }
  return fleet;
}
