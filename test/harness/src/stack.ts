// The local stack (`make up`, and the e2e spec when no cluster is given): a
// real kube-apiserver + etcd with the CRDs, Redis, the control plane, and N
// simulated nodes, each a fake-sandboxd and a node agent on its own loopback
// address (127.0.1.1, 127.0.1.2, …) so every node looks like a separate host.
// The apps run as processes from their dist/, exactly as they would in pods.
// startStack starts the parts one after another; they stop last-started first,
// also when a start fails (stack-parts.ts).
import { randomBytes } from 'node:crypto';
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { startCluster, type TestCluster } from './cluster.js';
import { startRedis, type TestRedis } from './redis.js';
import { REPO_ROOT } from './stack-apps.js';
import { setUpDemoClaims, type DemoClaims } from './stack-claims.js';
import { startControlPlane, type StackFederation } from './stack-control-plane.js';
import { startNodes, type StackNode } from './stack-nodes.js';
import { StackParts, type StackContext, type UnexpectedExit } from './stack-parts.js';
import { startRouter } from './stack-router.js';
import { applySample, type StackSample, type StackSampleOptions } from './stack-sample.js';

export { APP_ENTRYPOINTS, REPO_ROOT } from './stack-apps.js';
export type { StackFederation } from './stack-control-plane.js';
export type { StackNode } from './stack-nodes.js';
export type { UnexpectedExit } from './stack-parts.js';
export type { StackSample, StackSampleOptions } from './stack-sample.js';

export interface StartStackOptions {
  /** kubeconfig, token, logs/ and stack.json go here (default `<repo>/.local`). */
  dir?: string;
  /** Simulated nodes (default 3). */
  nodes?: number;
  /** Node i (from 1) gets `<prefix>.<i>` (default `127.0.1`). */
  loopbackPrefix?: string;
  /** Preferred ports; a taken one is replaced by a free one. */
  sandboxdPort?: number;
  agentPort?: number;
  /** Start the control plane process (default true; false for a caller that runs its own). */
  controlPlane?: boolean;
  /** 0 = any free port (default 8080). */
  controlPlanePort?: number;
  /** The control plane's claim API (--claims-listen); 0 = any free port (default 8081). */
  claimsPort?: number;
  /** The sandbox router (upstream's router API); 0 = any free port (default 8090). Needs the control plane. */
  routerPort?: number;
  /** The control plane's reconcile interval, a Go-style duration (default `2s`). */
  interval?: string;
  /** How often each agent may write its NodeInventory on change (default `1s`). */
  minPublishGap?: string;
  /** Namespace of the sample and of the control plane's Lease (default `default`). */
  namespace?: string;
  /** The sample template + pool, or false for none (default: python:3.13-slim, 30 replicas). */
  sample?: StackSampleOptions | false;
  /** Extra flags for every fake-sandboxd (e.g. `--refill-rate=50` to watch a slower fill). */
  sandboxdArgs?: string[];
  /** A redis-server shared with other stacks (not stopped by this one), instead of one of its own. */
  redis?: TestRedis;
  /**
   * The Redis database of this stack's claims (default 0), so stacks sharing a redis-server keep their claims apart.
   */
  redisDb?: number;
  /** Federate this stack's control plane with others through a shared hub (`make up CLUSTERS=2`). */
  federation?: StackFederation;
  /** Also apply a SandboxEnv over the sample pool (its name and namespace). */
  sampleEnv?: boolean;
  /** The apiserver's name (default `warmpool-local`). */
  clusterName?: string;
  /** Startup progress, one line at a time (default: silent). */
  log?: (line: string) => void;
}

export interface StackDescription {
  dir: string;
  kubeconfig: string;
  tokenFile: string;
  server: string;
  /** Undefined when started without the control plane. */
  controlPlaneUrl: string | undefined;
  /**
   * The HTTP claim API; undefined when started without the control plane. `<dir>/claims-url` holds its claims URL for
   * the stack's namespace.
   */
  claimsUrl: string | undefined;
  /** This stack's cluster id when federated. */
  clusterId: string | undefined;
  /**
   * The Sandbox API behind the APIService v1beta1.agents.x-k8s.io (self-signed); undefined without the control plane.
   */
  sandboxApiUrl?: string | undefined;
  /**
   * The sandbox router (POST /execute, ...); undefined without the control plane. A request without a token acts as
   * the `warmpool-demo` ServiceAccount (`--tokenless-user`), so upstream's clients work unmodified.
   */
  routerUrl?: string | undefined;
  redisUrl: string;
  namespace: string;
  nodes: StackNode[];
  sample: StackSample | undefined;
  /** The `warmpool-demo` ServiceAccount and the SandboxClaim example (with the sample). */
  claims: DemoClaims | undefined;
  logsDir: string;
  /** etcd and kube-apiserver logs live here while the stack runs. */
  clusterDataDir: string;
  /** Every process of the stack, for a test to prove none outlives it (stack.json keeps them after stop). */
  pids: Record<string, number>;
}

export interface LocalStack {
  readonly description: StackDescription;
  /** Resolves if one of the stack's own processes exits before stop() was called. */
  readonly unexpectedExit: Promise<UnexpectedExit>;
  readonly cluster: TestCluster;
  readonly redis: TestRedis;
  readonly kubeConfig: KubeConfig;
  readonly token: string;
  /** Stops everything in reverse order of start. */
  stop(): Promise<void>;
  /** Same as stop(). */
  close(): Promise<void>;
}

const DEFAULTS = {
  nodes: 3,
  loopbackPrefix: '127.0.1',
  sandboxdPort: 7070,
  agentPort: 7071,
  controlPlanePort: 8080,
  claimsPort: 8081,
  routerPort: 8090,
  interval: '2s',
  minPublishGap: '1s',
  namespace: 'default',
} as const;

export const DEFAULT_STACK_DIR = join(REPO_ROOT, '.local');

export async function startStack(options: StartStackOptions = {}): Promise<LocalStack> {
  const log = options.log ?? ((): void => undefined);
  const dir = resolve(options.dir ?? DEFAULT_STACK_DIR);
  const logsDir = join(dir, 'logs');
  mkdirSync(logsDir, { recursive: true });
  const namespace = options.namespace ?? DEFAULTS.namespace;
  const parts = new StackParts(logsDir, log);
  const stop = (): Promise<void> => parts.stop();

  try {
    log('starting etcd and kube-apiserver (with the CRDs)');
    const cluster = await startCluster({ name: options.clusterName ?? 'warmpool-local' });
    parts.add('kube-apiserver and etcd', () => cluster.stop());
    const kubeconfig = join(dir, 'kubeconfig');
    copyFileSync(cluster.kubeconfigPath, kubeconfig);
    const redis = options.redis ?? (await startOwnRedis(parts, log));
    const claimsRedisUrl =
      options.redisDb === undefined || options.redisDb === 0 ? redis.url : `${redis.url}/${options.redisDb}`;
    const token = randomBytes(24).toString('hex');
    const tokenFile = join(dir, 'token');
    writeFileSync(tokenFile, `${token}\n`, { mode: 0o600 });
    const context: StackContext = { dir, kubeconfig, tokenFile, namespace, parts, log };
    const pids = clusterAndRedisPids(cluster, redis);

    const nodes = await startNodes(cluster, context, {
      count: options.nodes ?? DEFAULTS.nodes,
      loopbackPrefix: options.loopbackPrefix ?? DEFAULTS.loopbackPrefix,
      sandboxdPort: options.sandboxdPort ?? DEFAULTS.sandboxdPort,
      agentPort: options.agentPort ?? DEFAULTS.agentPort,
      minPublishGap: options.minPublishGap ?? DEFAULTS.minPublishGap,
      sandboxdArgs: options.sandboxdArgs ?? [],
    });
    const controlPlane =
      (options.controlPlane ?? true)
        ? await startControlPlane(cluster, context, {
            port: options.controlPlanePort ?? DEFAULTS.controlPlanePort,
            claimsPort: options.claimsPort ?? DEFAULTS.claimsPort,
            interval: options.interval ?? DEFAULTS.interval,
            redisUrl: claimsRedisUrl,
            federation: options.federation,
          })
        : undefined;
    // The router needs the control plane.
    const routerUrl =
      controlPlane !== undefined ? await startRouter(context, options.routerPort ?? DEFAULTS.routerPort) : undefined;
    const sample =
      options.sample !== false
        ? await applySample(cluster, context, options.sample ?? {}, options.sampleEnv === true)
        : undefined;
    const claims = sample !== undefined ? await setUpClaims(cluster, context, sample) : undefined;

    const description: StackDescription = {
      dir,
      kubeconfig,
      tokenFile,
      server: cluster.server,
      controlPlaneUrl: controlPlane?.controlPlaneUrl,
      claimsUrl: controlPlane?.claimsUrl,
      sandboxApiUrl: controlPlane?.sandboxApiUrl,
      routerUrl,
      clusterId: options.federation?.clusterId,
      redisUrl: claimsRedisUrl,
      namespace,
      nodes,
      sample,
      claims,
      logsDir,
      clusterDataDir: cluster.dataDir,
      pids: { ...pids, ...parts.appPids() },
    };
    writeFileSync(join(dir, 'stack.json'), `${JSON.stringify(description, null, 2)}\n`);
    const { unexpectedExit } = parts;
    return { description, unexpectedExit, cluster, redis, kubeConfig: cluster.kubeConfig, token, stop, close: stop };
  } catch (error) {
    // The start's own failure is what the caller needs; a failed stop is already in the log.
    await stop().catch(() => undefined);
    throw error;
  }
}

/** A redis-server of the stack's own (stopped with it), when none is shared. */
async function startOwnRedis(parts: StackParts, log: (line: string) => void): Promise<TestRedis> {
  log('starting redis-server');
  const own = await startRedis();
  parts.add('redis-server', () => own.stop());
  return own;
}

/** The demo ServiceAccount and a SandboxClaim example of the sample pool. */
async function setUpClaims(
  cluster: TestCluster,
  { dir, namespace, log }: StackContext,
  sample: StackSample,
): Promise<DemoClaims> {
  log(`creating the ServiceAccount ${namespace}/warmpool-demo (may claim sandboxes) and a SandboxClaim example`);
  return setUpDemoClaims(cluster, dir, namespace, sample.name);
}

/** The pids the stack did not start as apps, first in stack.json (its apps' follow, in start order). */
function clusterAndRedisPids(cluster: TestCluster, redis: TestRedis): Record<string, number> {
  const clusterPids = cluster.pids();
  const pids: Record<string, number> = { redis: redis.pid };
  if (clusterPids.etcd !== undefined) pids['etcd'] = clusterPids.etcd;
  if (clusterPids.apiserver !== undefined) pids['kube-apiserver'] = clusterPids.apiserver;
  return pids;
}
