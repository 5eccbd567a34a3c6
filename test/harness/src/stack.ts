// The local stack (`make up`, and the e2e spec when no cluster is given): a
// real kube-apiserver + etcd with the CRDs, Redis, the control plane, and N
// simulated nodes, each a fake-sandboxd and a node agent on its own loopback
// address (127.0.1.1, 127.0.1.2, …) so every node looks like a separate host.
// The apps run as processes from their dist/, exactly as they would in pods.
import { randomBytes } from 'node:crypto';
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { SandboxType } from '@warmpool/api';
import { registerAggregatedApi } from './aggregation.js';
import { ManagedChild } from './children.js';
import { startCluster, type TestCluster } from './cluster.js';
import { get } from './http.js';
import { startRedis, type TestRedis } from './redis.js';
import { DEMO_ACCOUNT, setUpDemoClaims, type DemoClaims } from './stack-claims.js';
import { nodeObject, SAMPLE_IMAGE, SAMPLE_NAME, SAMPLE_REPLICAS, sampleManifest } from './stack-manifests.js';
import { quietPort } from './ports.js';
import { preferredOrFreePort } from './stack-ports.js';
import { eventually } from './wait.js';

/** The repository root, found from this file in both src/ and dist/. */
export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));

export const APP_ENTRYPOINTS = {
  fakeSandboxd: join(REPO_ROOT, 'apps/fake-sandboxd/dist/main.js'),
  nodeAgent: join(REPO_ROOT, 'apps/node-agent/dist/main.js'),
  controlPlane: join(REPO_ROOT, 'apps/control-plane/dist/main.js'),
  router: join(REPO_ROOT, 'apps/router/dist/main.js'),
} as const;

export interface StackSampleOptions {
  name?: string;
  image?: string;
  replicas?: number;
}

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

export interface StackFederation {
  clusterId: string;
  /** The hub (--federation-redis-url). */
  hubUrl: string;
  /** The peer clusters and their credentials (--federation-peers-file; see writeFederationPeers). */
  peersFile?: string;
}

export interface StackNode {
  /** The Node / NodeInventory name, `warmpool-node-<i>`. */
  name: string;
  host: string;
  /** host:port the agent serves and advertises (NodeInventory spec.address). */
  agentAddress: string;
  agentUrl: string;
  sandboxdUrl: string;
}

export interface StackSample {
  namespace: string;
  name: string;
  image: string;
  replicas: number;
  manifestPath: string;
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

export interface UnexpectedExit {
  name: string;
  code: number | null;
  signal: NodeJS.Signals | null;
  logTail: string;
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

/** Something started, in start order, so stop() can undo it in reverse. */
interface Started {
  name: string;
  stop(): Promise<unknown>;
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

async function waitForHttp(child: ManagedChild, url: string, timeoutMs = 30_000): Promise<void> {
  let last = 'no answer yet';
  await eventually(
    async () => {
      const res = await get(url).catch((error: Error) => ({ status: 0, body: error.message }));
      last = `${res.status} ${res.body.slice(0, 500)}`;
      return res.status === 200;
    },
    {
      timeoutMs,
      intervalMs: 100,
      what: () => `${child.name} at ${url} not ready (last answer: ${last}); last log lines:\n${child.logTail()}`,
      abort: () => (child.running ? undefined : `${child.name} exited (${JSON.stringify(child.exitStatus)})`),
    },
  );
}

function startApp(
  logsDir: string,
  name: string,
  entrypoint: string,
  args: string[],
  env: NodeJS.ProcessEnv = {},
): ManagedChild {
  const logFile = join(logsDir, `${name}.log`);
  writeFileSync(logFile, '');
  return new ManagedChild({
    name,
    command: process.execPath,
    args: [entrypoint, ...args],
    logFile,
    env: { ...process.env, ...env },
  });
}

export async function startStack(options: StartStackOptions = {}): Promise<LocalStack> {
  const log = options.log ?? ((): void => undefined);
  const dir = resolve(options.dir ?? DEFAULT_STACK_DIR);
  const logsDir = join(dir, 'logs');
  mkdirSync(logsDir, { recursive: true });
  const namespace = options.namespace ?? DEFAULTS.namespace;
  const started: Started[] = [];
  let stopping: Promise<void> | undefined;
  let reportUnexpectedExit: (exit: UnexpectedExit) => void = () => undefined;
  const unexpectedExit = new Promise<UnexpectedExit>((resolve) => {
    reportUnexpectedExit = resolve;
  });
  const track = (child: ManagedChild): ManagedChild => {
    started.push({ name: child.name, stop: () => child.stop() });
    void child.exited.then(({ code, signal }) => {
      if (stopping === undefined) reportUnexpectedExit({ name: child.name, code, signal, logTail: child.logTail(20) });
    });
    return child;
  };
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      for (const part of [...started].reverse()) {
        log(`stopping ${part.name}`);
        await part.stop();
      }
    })());

  try {
    log('starting etcd and kube-apiserver (with the CRDs)');
    const cluster = await startCluster({ name: options.clusterName ?? 'warmpool-local' });
    started.push({ name: 'kube-apiserver and etcd', stop: () => cluster.stop() });
    const kubeconfig = join(dir, 'kubeconfig');
    copyFileSync(cluster.kubeconfigPath, kubeconfig);

    let redis: TestRedis;
    if (options.redis !== undefined) {
      redis = options.redis;
    } else {
      log('starting redis-server');
      const own = await startRedis();
      started.push({ name: 'redis-server', stop: () => own.stop() });
      redis = own;
    }
    const claimsRedisUrl =
      options.redisDb === undefined || options.redisDb === 0 ? redis.url : `${redis.url}/${options.redisDb}`;

    const token = randomBytes(24).toString('hex');
    const tokenFile = join(dir, 'token');
    writeFileSync(tokenFile, `${token}\n`, { mode: 0o600 });

    const count = options.nodes ?? DEFAULTS.nodes;
    if (!Number.isInteger(count) || count < 1 || count > 254)
      throw new Error(`nodes must be 1..254 (one loopback address each), got ${count}`);
    const prefix = options.loopbackPrefix ?? DEFAULTS.loopbackPrefix;
    const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    const nodes: StackNode[] = [];
    const agents: Array<{ node: StackNode; child: ManagedChild }> = [];
    const clusterPids = cluster.pids();
    const pids: Record<string, number> = { redis: redis.pid };
    if (clusterPids.etcd !== undefined) pids['etcd'] = clusterPids.etcd;
    if (clusterPids.apiserver !== undefined) pids['kube-apiserver'] = clusterPids.apiserver;
    for (let i = 1; i <= count; i++) {
      const name = `warmpool-node-${i}`;
      const host = `${prefix}.${i}`;
      const sandboxdPort = (await preferredOrFreePort(host, options.sandboxdPort ?? DEFAULTS.sandboxdPort)).port;
      const agentPort = (await preferredOrFreePort(host, options.agentPort ?? DEFAULTS.agentPort)).port;
      const sandboxdUrl = `http://${host}:${sandboxdPort}`;
      const agentAddress = `${host}:${agentPort}`;
      await core.createNode({ body: nodeObject(name, host) });

      log(`starting ${name}: fake-sandboxd on ${host}:${sandboxdPort}, node-agent on ${agentAddress}`);
      const sandboxd = track(
        startApp(
          logsDir,
          `fake-sandboxd-${i}`,
          APP_ENTRYPOINTS.fakeSandboxd,
          // The same token file as every other process (never the token itself in `ps`): rotating it rotates the stack.
          [`--listen=${host}:${sandboxdPort}`, `--api-token-file=${tokenFile}`, ...(options.sandboxdArgs ?? [])],
        ),
      );
      pids[sandboxd.name] = sandboxd.pid;
      await waitForHttp(sandboxd, `${sandboxdUrl}/healthz`);

      const agent = track(
        startApp(logsDir, `node-agent-${i}`, APP_ENTRYPOINTS.nodeAgent, [
          `--listen=${agentAddress}`,
          `--sandboxd-url=${sandboxdUrl}`,
          `--token-file=${tokenFile}`,
          `--node-name=${name}`,
          `--advertise-address=${agentAddress}`,
          `--kubeconfig=${kubeconfig}`,
          '--publish-interval=30s',
          `--min-publish-gap=${options.minPublishGap ?? DEFAULTS.minPublishGap}`,
          // Nothing here routes by the agents' readiness, so stopping the stack need not wait out a drain delay.
          '--drain-delay=0s',
        ]),
      );
      pids[agent.name] = agent.pid;
      const node = { name, host, agentAddress, agentUrl: `http://${agentAddress}`, sandboxdUrl };
      nodes.push(node);
      agents.push({ node, child: agent });
    }
    // Agents start in parallel; readiness includes their first NodeInventory write.
    await Promise.all(agents.map(({ node, child }) => waitForHttp(child, `${node.agentUrl}/readyz`)));

    let controlPlaneUrl: string | undefined;
    let claimsUrl: string | undefined;
    let sandboxApiUrl: string | undefined;
    if (options.controlPlane ?? true) {
      const wanted = options.controlPlanePort ?? DEFAULTS.controlPlanePort;
      const cpPort = await preferredOrFreePort('127.0.0.1', wanted);
      controlPlaneUrl = `http://127.0.0.1:${cpPort.port}`;
      const wantedClaims = options.claimsPort ?? DEFAULTS.claimsPort;
      const claimsPort = await preferredOrFreePort('127.0.0.1', wantedClaims);
      claimsUrl = `http://127.0.0.1:${claimsPort.port}`;
      const sandboxApiPort = await quietPort();
      sandboxApiUrl = `https://127.0.0.1:${sandboxApiPort}`;
      log(
        `starting the control plane on ${controlPlaneUrl}${cpPort.preferred ? '' : ` (port ${wanted} was taken)`}, its claim API on ${claimsUrl}${claimsPort.preferred ? '' : ` (port ${wantedClaims} was taken)`}`,
      );
      const controlPlane = track(
        startApp(logsDir, 'control-plane', APP_ENTRYPOINTS.controlPlane, [
          `--kubeconfig=${kubeconfig}`,
          `--token-file=${tokenFile}`,
          `--listen=127.0.0.1:${cpPort.port}`,
          `--interval=${options.interval ?? DEFAULTS.interval}`,
          `--namespace=${namespace}`,
          `--identity=local-${process.pid}`,
          `--redis-url=${claimsRedisUrl}`,
          `--claims-listen=127.0.0.1:${claimsPort.port}`,
          ...(options.federation !== undefined
            ? [
                `--cluster-id=${options.federation.clusterId}`,
                `--federation-redis-url=${options.federation.hubUrl}`,
                ...(options.federation.peersFile !== undefined
                  ? [`--federation-peers-file=${options.federation.peersFile}`]
                  : []),
              ]
            : []),
          `--aggregated-listen=127.0.0.1:${sandboxApiPort}`,
        ]),
      );
      pids[controlPlane.name] = controlPlane.pid;
      await waitForHttp(controlPlane, `${controlPlaneUrl}/readyz`);
      // /readyz can answer before the claim API's listener is bound (it starts after the caches and Redis).
      await waitForHttp(controlPlane, `${claimsUrl}/openapi.json`);
      // For scripts: `curl -X POST … $(cat .local/claims-url)`.
      writeFileSync(join(dir, 'claims-url'), `${claimsUrl}/v1/namespaces/${namespace}/claims\n`);
      // `kubectl get sandboxes` through the aggregation layer, instead of the Sandbox CRD.
      log(`registering the Sandbox API (APIService v1beta1.agents.x-k8s.io) at ${sandboxApiUrl}`);
      await registerAggregatedApi(cluster, {
        group: SandboxType.group,
        version: SandboxType.version,
        port: sandboxApiPort,
        replacesCrd: `${SandboxType.plural}.${SandboxType.group}`,
        serviceName: 'warmpool-sandbox-api',
      });
    }

    let routerUrl: string | undefined;
    if (controlPlaneUrl !== undefined) {
      const wantedRouter = options.routerPort ?? DEFAULTS.routerPort;
      const routerPort = await preferredOrFreePort('127.0.0.1', wantedRouter);
      routerUrl = `http://127.0.0.1:${routerPort.port}`;
      log(
        `starting the sandbox router on ${routerUrl}${routerPort.preferred ? '' : ` (port ${wantedRouter} was taken)`}`,
      );
      const router = track(
        startApp(logsDir, 'router', APP_ENTRYPOINTS.router, [
          `--kubeconfig=${kubeconfig}`,
          `--listen=127.0.0.1:${routerPort.port}`,
          `--tokenless-user=system:serviceaccount:${namespace}:${DEMO_ACCOUNT}`,
        ]),
      );
      pids[router.name] = router.pid;
      await waitForHttp(router, `${routerUrl}/readyz`);
    }

    let sample: StackSample | undefined;
    if (options.sample !== false) {
      const wanted = {
        namespace,
        name: options.sample?.name ?? SAMPLE_NAME,
        image: options.sample?.image ?? SAMPLE_IMAGE,
        replicas: options.sample?.replicas ?? SAMPLE_REPLICAS,
      };
      const manifestPath = join(dir, 'sample.json');
      writeFileSync(manifestPath, sampleManifest(wanted, { env: options.sampleEnv === true }));
      log(
        `applying the sample SandboxTemplate and SandboxWarmPool ${namespace}/${wanted.name} (${wanted.replicas} replicas of ${wanted.image})`,
      );
      const applied = await cluster.kubectl([
        'apply',
        '--server-side',
        '--field-manager=warmpool-local',
        '-f',
        manifestPath,
      ]);
      if (applied.code !== 0) throw new Error(`applying ${manifestPath} failed:\n${applied.stderr}${applied.stdout}`);
      sample = { ...wanted, manifestPath };
    }

    let claims: DemoClaims | undefined;
    if (sample !== undefined) {
      log(`creating the ServiceAccount ${namespace}/warmpool-demo (may claim sandboxes) and a SandboxClaim example`);
      claims = await setUpDemoClaims(cluster, dir, namespace, sample.name);
    }

    const description: StackDescription = {
      dir,
      kubeconfig,
      tokenFile,
      server: cluster.server,
      controlPlaneUrl,
      claimsUrl,
      sandboxApiUrl,
      routerUrl,
      clusterId: options.federation?.clusterId,
      redisUrl: claimsRedisUrl,
      namespace,
      nodes,
      sample,
      claims,
      logsDir,
      clusterDataDir: cluster.dataDir,
      pids,
    };
    writeFileSync(join(dir, 'stack.json'), `${JSON.stringify(description, null, 2)}\n`);
    return { description, unexpectedExit, cluster, redis, kubeConfig: cluster.kubeConfig, token, stop, close: stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
