// The local stack's simulated nodes: node i (from 1) is a Node object, a
// fake-sandboxd and a node agent, both on the loopback address `<prefix>.<i>`,
// so every node looks like a separate host.
import { CoreV1Api } from '@kubernetes/client-node';
import type { ManagedChild } from './children.js';
import type { TestCluster } from './cluster.js';
import { APP_ENTRYPOINTS, waitForHttp } from './stack-apps.js';
import { nodeObject } from './stack-manifests.js';
import type { StackContext } from './stack-parts.js';
import { preferredOrFreePort } from './stack-ports.js';

export interface StackNode {
  /** The Node / NodeInventory name, `warmpool-node-<i>`. */
  name: string;
  host: string;
  /** host:port the agent serves and advertises (NodeInventory spec.address). */
  agentAddress: string;
  agentUrl: string;
  sandboxdUrl: string;
}

export interface StackNodeSettings {
  count: number;
  /** Node i (from 1) gets `<loopbackPrefix>.<i>`. */
  loopbackPrefix: string;
  /** Preferred ports on each node's address; a taken one is replaced by a free one. */
  sandboxdPort: number;
  agentPort: number;
  /** How often each agent may write its NodeInventory on change. */
  minPublishGap: string;
  /** Extra flags for every fake-sandboxd. */
  sandboxdArgs: readonly string[];
}

/** Starts the nodes one after another, then waits for every agent to be ready. */
export async function startNodes(
  cluster: TestCluster,
  context: StackContext,
  settings: StackNodeSettings,
): Promise<StackNode[]> {
  const { count } = settings;
  if (!Number.isInteger(count) || count < 1 || count > 254)
    throw new Error(`nodes must be 1..254 (one loopback address each), got ${count}`);
  const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
  const agents: Array<{ node: StackNode; agent: ManagedChild }> = [];
  for (let i = 1; i <= count; i++) agents.push(await startNode(i, core, context, settings));
  // Agents start in parallel; readiness includes their first NodeInventory write.
  await Promise.all(agents.map(({ node, agent }) => waitForHttp(agent, `${node.agentUrl}/readyz`)));
  return agents.map(({ node }) => node);
}

/** Node i: its Node object, its fake-sandboxd (ready), and its agent (started, not yet ready). */
async function startNode(
  i: number,
  core: CoreV1Api,
  { kubeconfig, tokenFile, parts, log }: StackContext,
  settings: StackNodeSettings,
): Promise<{ node: StackNode; agent: ManagedChild }> {
  const name = `warmpool-node-${i}`;
  const host = `${settings.loopbackPrefix}.${i}`;
  const sandboxdPort = (await preferredOrFreePort(host, settings.sandboxdPort)).port;
  const agentPort = (await preferredOrFreePort(host, settings.agentPort)).port;
  const sandboxdUrl = `http://${host}:${sandboxdPort}`;
  const agentAddress = `${host}:${agentPort}`;
  await core.createNode({ body: nodeObject(name, host) });

  log(`starting ${name}: fake-sandboxd on ${host}:${sandboxdPort}, node-agent on ${agentAddress}`);
  const sandboxd = parts.startApp(
    `fake-sandboxd-${i}`,
    APP_ENTRYPOINTS.fakeSandboxd,
    // The same token file as every other process (never the token itself in `ps`): rotating it rotates the stack.
    [`--listen=${host}:${sandboxdPort}`, `--api-token-file=${tokenFile}`, ...settings.sandboxdArgs],
  );
  await waitForHttp(sandboxd, `${sandboxdUrl}/healthz`);

  const agent = parts.startApp(`node-agent-${i}`, APP_ENTRYPOINTS.nodeAgent, [
    `--listen=${agentAddress}`,
    `--sandboxd-url=${sandboxdUrl}`,
    `--token-file=${tokenFile}`,
    `--node-name=${name}`,
    `--advertise-address=${agentAddress}`,
    `--kubeconfig=${kubeconfig}`,
    '--publish-interval=30s',
    `--min-publish-gap=${settings.minPublishGap}`,
    // Nothing here routes by the agents' readiness, so stopping the stack need not wait out a drain delay.
    '--drain-delay=0s',
  ]);
  return { node: { name, host, agentAddress, agentUrl: `http://${agentAddress}`, sandboxdUrl }, agent };
}
