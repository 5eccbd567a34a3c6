// `make up`: starts the local stack, says how to use it, shows the pools
// filling, and on Ctrl-C (or SIGTERM) stops everything in reverse order.
// With --exit-when-ready it stops by itself once every pool is READY = DESIRED
// (exit 0), or fails after --ready-timeout (exit 1).
import { join, relative, sep } from 'node:path';
import { parseArgs } from 'node:util';
import { messageOf } from '@warmpool/runtime';
import { leaveSignalsToCaller } from './children.js';
import { startStack, type LocalStack, type StackDescription, type UnexpectedExit } from './stack.js';
import { startFederatedStacks } from './stack-federation.js';
import { allPoolsReady, progressLine, readProgress, type StackProgress } from './stack-status.js';
import { sleep } from './wait.js';

const HELP = `Usage: node test/harness/dist/stack-main.js [flags]

Runs warmpool locally: a real kube-apiserver + etcd with the CRDs, Redis, the
control plane, and simulated nodes (fake-sandboxd + node agent each, on
127.0.1.1, 127.0.1.2, ...). Ctrl-C stops everything.

Flags:
  --dir <path>              where kubeconfig, token, logs/ and stack.json go (default .local)
  --clusters <n>            federated clusters (default 1): n apiservers and control planes, one Redis hub,
                            a same-named sample SandboxEnv in each; cluster i's files in <dir>/cluster-<i>/
                            (the first keeps <dir>) [make up CLUSTERS=n]
  --nodes <n>               simulated nodes (default 3)
  --loopback-prefix <a.b.c> node i listens on <a.b.c>.<i> (default 127.0.1)
  --replicas <n>            replicas of the sample SandboxWarmPool (default 30; 0 = no sample)
  --interval <duration>     the control plane's reconcile interval (default 2s)
  --control-plane-port <n>  default 8080 (a free port if taken; 0 = any)
  --claims-port <n>         the control plane's claim API, default 8081 (a free port if taken; 0 = any)
  --router-port <n>         the sandbox router (upstream's router API), default 8090 (a free port if taken; 0 = any)
  --exit-when-ready         stop once every pool is READY = DESIRED, exit 0 [env WARMPOOL_STACK_EXIT_WHEN_READY=1]
  --ready-timeout <seconds> with --exit-when-ready: give up after this long, exit 1 (default 120)
  --help                    show this help
`;

interface MainOptions {
  dir: string | undefined;
  clusters: number;
  nodes: number | undefined;
  loopbackPrefix: string | undefined;
  replicas: number | undefined;
  interval: string | undefined;
  controlPlanePort: number | undefined;
  claimsPort: number | undefined;
  routerPort: number | undefined;
  exitWhenReady: boolean;
  readyTimeoutMs: number;
}

function integer(flag: string, raw: string | undefined, min: number): number | undefined {
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new Error(`--${flag} must be an integer ≥ ${min} (got "${raw}")`);
  return n;
}

function parseOptions(argv: string[]): MainOptions | 'help' {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: {
      dir: { type: 'string' },
      clusters: { type: 'string' },
      nodes: { type: 'string' },
      'loopback-prefix': { type: 'string' },
      replicas: { type: 'string' },
      interval: { type: 'string' },
      'control-plane-port': { type: 'string' },
      'claims-port': { type: 'string' },
      'router-port': { type: 'string' },
      'exit-when-ready': { type: 'boolean' },
      'ready-timeout': { type: 'string' },
      help: { type: 'boolean' },
    },
  });
  if (values.help) return 'help';
  const prefix = values['loopback-prefix'];
  if (prefix !== undefined && !/^127\.\d{1,3}\.\d{1,3}$/.test(prefix))
    throw new Error(`--loopback-prefix must look like 127.0.1 (got "${prefix}")`);
  return {
    dir: values.dir,
    clusters: integer('clusters', values.clusters, 1) ?? 1,
    nodes: integer('nodes', values.nodes, 1),
    loopbackPrefix: prefix,
    replicas: integer('replicas', values.replicas, 0),
    interval: values.interval,
    controlPlanePort: integer('control-plane-port', values['control-plane-port'], 0),
    claimsPort: integer('claims-port', values['claims-port'], 0),
    routerPort: integer('router-port', values['router-port'], 0),
    exitWhenReady: values['exit-when-ready'] === true || process.env['WARMPOOL_STACK_EXIT_WHEN_READY'] === '1',
    readyTimeoutMs: (integer('ready-timeout', values['ready-timeout'], 1) ?? 120) * 1000,
  };
}

/** A path as the user would type it from here: relative when under the current directory. */
function shown(path: string): string {
  const rel = relative(process.cwd(), path);
  return rel !== '' && !rel.startsWith('..') && !rel.startsWith(sep) ? rel : path;
}

function instructions(d: StackDescription, startupMs: number): string {
  const first = d.nodes[0];
  const token = `$(cat ${shown(d.tokenFile)})`;
  const kubeconfig = shown(d.kubeconfig) === d.kubeconfig ? d.kubeconfig : `$PWD/${shown(d.kubeconfig)}`;
  const lines = [
    '',
    `warmpool local stack is up (${(startupMs / 1000).toFixed(1)} s)`,
    '',
    `  kubeconfig     ${shown(d.kubeconfig)}  (admin of ${d.server})`,
    `  fleet token    ${shown(d.tokenFile)}`,
    `  control plane  ${d.controlPlaneUrl ?? 'not started'}  (/metrics, /readyz)`,
    `  claim API      ${d.claimsUrl ?? 'not started'}  (POST /v1/namespaces/{ns}/claims)`,
    `  Sandbox API    ${d.sandboxApiUrl ?? 'not started'}  (kubectl get sandboxes -A, through the aggregation layer)`,
    `  router         ${d.routerUrl ?? 'not started'}  (upstream's router API: POST /execute, /upload; GET /download|list|exists/{path})`,
    ...d.nodes.map(
      (n, i) =>
        `  ${i === 0 ? 'nodes        ' : '             '}  ${n.name}  agent ${n.agentAddress}  sandboxd ${n.sandboxdUrl.replace('http://', '')}`,
    ),
    `  logs           ${shown(d.logsDir)}/<name>.log  (etcd and kube-apiserver: ${d.clusterDataDir})`,
    ...(d.sample
      ? [
          `  sample         ${shown(d.sample.manifestPath)}: SandboxWarmPool ${d.sample.namespace}/${d.sample.name}, ${d.sample.replicas} × ${d.sample.image}`,
        ]
      : []),
    '',
    'In another shell, from this directory:',
    "  export PATH=$HOME/.cache/warmpool/bin:$PATH     # kubectl v1.37 (the machine's own kubectl is older)",
    `  export KUBECONFIG=${kubeconfig}`,
    '  kubectl get swp,nodeinventories',
    ...(d.sample ? [`  kubectl scale swp ${d.sample.name} --replicas=60`] : []),
    ...(d.claims
      ? [
          `  kubectl apply -f ${shown(d.claims.examplePath)}    # a SandboxClaim: Ready, its Secret holds the token`,
          '  kubectl get sandboxclaims',
        ]
      : []),
    ...(d.claims && d.sample && d.claimsUrl
      ? [
          `  # claim over HTTP as the ServiceAccount ${d.claims.account}: POST ${d.claimsUrl}/v1/namespaces/${d.namespace}/claims (in ${shown(join(d.dir, 'claims-url'))})`,
          `  curl -X POST -H "Authorization: Bearer $(kubectl create token ${d.claims.account})" -H 'content-type: application/json' -d '{"warmPool":"${d.sample.name}","ttlSeconds":60}' $(cat ${shown(join(d.dir, 'claims-url'))})`,
        ]
      : []),
  ];
  if (d.routerUrl !== undefined && d.sample && d.claims)
    lines.push(...routerInstructions(d.routerUrl, d.sample.name, d.claims.account));
  if (first) {
    lines.push(`  curl -H "Authorization: Bearer ${token}" ${first.agentUrl}/v1/info`);
    if (d.sample) {
      lines.push(
        `  curl -X POST -H "Authorization: Bearer ${token}" -d '{"template":"${d.sample.image}","ttl_seconds":60}' ${first.agentUrl}/v1/claim`,
      );
      lines.push(
        `  # release: curl -X POST -H "Authorization: Bearer <token from the claim>" ${first.agentUrl}/v1/sandboxes/<id>/release`,
      );
    }
  }
  lines.push('', 'Ctrl-C stops everything.', '');
  return lines.join('\n');
}

/** Upstream's Python client, unmodified, through the router: without a token it acts as the demo ServiceAccount. */
function routerInstructions(routerUrl: string, pool: string, account: string): string[] {
  const script = [
    'from k8s_agent_sandbox import SandboxClient',
    'from k8s_agent_sandbox.models import SandboxDirectConnectionConfig',
    `client = SandboxClient(connection_config=SandboxDirectConnectionConfig(api_url="${routerUrl}"))`,
    `sandbox = client.create_sandbox(warmpool="${pool}")`,
    'print(sandbox.commands.run("echo hello").stdout)',
    'sandbox.files.write("notes.txt", "round trip")',
    'print(sandbox.files.read("notes.txt"))',
    'client.delete_all()',
  ].join('; ');
  return [
    `  # upstream's Python client (pip install k8s-agent-sandbox) through the router, as ${account} (no token needed here):`,
    `  python3 -c '${script}'`,
    `  # with a token instead: extra_headers={"Authorization": "Bearer <kubectl create token ${account}>"}, or api_url="http://token:<token>@${routerUrl.replace('http://', '')}"`,
  ];
}

/**
 * How to claim from the sample SandboxEnv by hand: a ServiceAccount allowed
 * to claim in every cluster, and a curl against the first cluster's claim API
 * that spills to another once the first cluster's member pool is scaled to 0.
 */
async function federationInstructions(stacks: readonly LocalStack[]): Promise<string> {
  const first = stacks[0]?.description;
  const sample = first?.sample;
  if (first === undefined || sample === undefined) return '';
  for (const stack of stacks) {
    for (const args of [
      ['create', 'serviceaccount', 'claimer', '-n', sample.namespace],
      [
        'create',
        'role',
        'claimer',
        '-n',
        sample.namespace,
        '--verb=create,get,update,delete',
        '--resource=sandboxclaims.extensions.agents.x-k8s.io',
      ],
      [
        'create',
        'rolebinding',
        'claimer',
        '-n',
        sample.namespace,
        '--role=claimer',
        `--serviceaccount=${sample.namespace}:claimer`,
      ],
    ]) {
      const result = await stack.cluster.kubectl(args);
      if (result.code !== 0 && !result.stderr.includes('AlreadyExists'))
        throw new Error(`kubectl ${args.join(' ')}: ${result.stderr}`);
    }
  }
  const kubeconfig = (d: StackDescription): string =>
    shown(d.kubeconfig) === d.kubeconfig ? d.kubeconfig : `$PWD/${shown(d.kubeconfig)}`;
  return [
    `federated: ${stacks.length} clusters (${stacks.map((s) => s.description.clusterId).join(', ')}) share capacity through the hub ${stacks[0]?.redis.url ?? ''} (database 0)`,
    '',
    'Claim from the SandboxEnv through the first cluster (ServiceAccount claimer may claim in every cluster):',
    `  TOKEN=$(KUBECONFIG=${kubeconfig(first)} kubectl create token claimer -n ${sample.namespace})`,
    `  curl -s -X POST -H "Authorization: Bearer $TOKEN" -d '{"env":"${sample.name}","ttlSeconds":60}' $(cat ${shown(join(first.dir, 'claims-url'))})`,
    `  # "cluster": "${first.clusterId ?? ''}". To see it spill to another cluster, empty this cluster's member pool and claim again:`,
    `  KUBECONFIG=${kubeconfig(first)} kubectl scale swp ${sample.name} -n ${sample.namespace} --replicas=0`,
    `  KUBECONFIG=${kubeconfig(first)} kubectl get senv ${sample.name} -n ${sample.namespace} -o yaml   # status.clusters: the other clusters' members`,
    '',
  ].join('\n');
}

type Outcome =
  | { kind: 'signal'; signal: NodeJS.Signals }
  | { kind: 'ready' }
  | { kind: 'timeout' }
  | { kind: 'crash'; message: string };

/** Prints progress once a second while something is filling, then only on change. */
async function watch(
  stack: LocalStack,
  options: MainOptions,
  stopped: () => boolean,
  label = '',
): Promise<Outcome | undefined> {
  const d = stack.description;
  const source = { kubeConfig: stack.kubeConfig, token: stack.token, nodes: d.nodes };
  const started = performance.now();
  let lastShown = '';
  let wasReady = false;
  while (!stopped()) {
    let progress: StackProgress | undefined;
    try {
      progress = await readProgress(source);
    } catch (error) {
      console.log(`  (could not read progress: ${messageOf(error)})`);
    }
    if (progress !== undefined && !stopped()) {
      const elapsed = performance.now() - started;
      const ready = allPoolsReady(progress);
      const line = progressLine(progress, elapsed);
      const withoutTime = line.slice(8);
      if (!ready || withoutTime !== lastShown) console.log(`${label}${line}`);
      lastShown = withoutTime;
      if (ready && !wasReady) console.log(`${label}        every pool is READY = DESIRED`);
      wasReady = ready;
      if (ready && options.exitWhenReady) return { kind: 'ready' };
      if (!ready && options.exitWhenReady && elapsed > options.readyTimeoutMs) return { kind: 'timeout' };
    }
    await sleep(1000);
  }
  return undefined;
}

async function main(): Promise<number> {
  let options: MainOptions | 'help';
  try {
    options = parseOptions(process.argv.slice(2));
  } catch (error) {
    process.stderr.write(`stack-main: ${messageOf(error)}\n\n${HELP}`);
    return 2;
  }
  if (options === 'help') {
    process.stdout.write(HELP);
    return 0;
  }

  // Signals are ours: children are stopped gracefully in reverse order. During
  // startup there is nothing worth waiting for, so the exit hook kills them all.
  leaveSignalsToCaller();
  let up = false;
  let resolveSignal: (signal: NodeJS.Signals) => void = () => undefined;
  const signalled = new Promise<NodeJS.Signals>((resolve) => {
    resolveSignal = resolve;
  });
  let signals = 0;
  const onSignal = (signal: NodeJS.Signals): void => {
    signals += 1;
    if (!up || signals > 1) {
      console.log(`\n${signal}: killing everything now`);
      process.exit(130);
    }
    resolveSignal(signal);
  };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, onSignal);

  const started = performance.now();
  const common = {
    ...(options.nodes !== undefined ? { nodes: options.nodes } : {}),
    ...(options.interval !== undefined ? { interval: options.interval } : {}),
    ...(options.controlPlanePort !== undefined ? { controlPlanePort: options.controlPlanePort } : {}),
    ...(options.claimsPort !== undefined ? { claimsPort: options.claimsPort } : {}),
    ...(options.routerPort !== undefined ? { routerPort: options.routerPort } : {}),
    sample:
      options.replicas === 0
        ? (false as const)
        : { ...(options.replicas !== undefined ? { replicas: options.replicas } : {}) },
    log: (line: string) => console.log(`==> ${line}`),
  };
  let stacks: LocalStack[];
  let unexpectedExit: Promise<UnexpectedExit>;
  let stopAll: () => Promise<void>;
  if (options.clusters > 1) {
    if (options.loopbackPrefix !== undefined)
      throw new Error('--loopback-prefix goes with one cluster only (cluster i uses 127.0.<i>)');
    const federated = await startFederatedStacks(options.clusters, {
      ...common,
      ...(options.dir !== undefined ? { dir: options.dir } : {}),
    });
    stacks = [...federated.stacks];
    unexpectedExit = federated.unexpectedExit;
    stopAll = () => federated.stop();
  } else {
    const stack = await startStack({
      ...common,
      ...(options.dir !== undefined ? { dir: options.dir } : {}),
      ...(options.loopbackPrefix !== undefined ? { loopbackPrefix: options.loopbackPrefix } : {}),
    });
    stacks = [stack];
    unexpectedExit = stack.unexpectedExit;
    stopAll = () => stack.stop();
  }
  up = true;
  for (const stack of stacks) console.log(instructions(stack.description, performance.now() - started));
  if (stacks.length > 1) console.log(await federationInstructions(stacks));

  let stopped = false;
  const outcome = await Promise.race<Outcome | undefined>([
    signalled.then((signal) => ({ kind: 'signal', signal })),
    unexpectedExit.then((exit) => ({
      kind: 'crash',
      message: `${exit.name} exited unexpectedly (code ${exit.code}, signal ${exit.signal}); its last lines:\n${exit.logTail}`,
    })),
    Promise.all(
      stacks.map((stack, i) => watch(stack, options, () => stopped, stacks.length > 1 ? `[cluster-${i + 1}] ` : '')),
    ).then((outcomes) => outcomes.find((o) => o?.kind === 'timeout') ?? outcomes[0]),
  ]);
  stopped = true;
  switch (outcome?.kind) {
    case 'signal':
      console.log(`\n${outcome.signal}: stopping the stack`);
      break;
    case 'ready':
      console.log('every pool is ready: stopping the stack (--exit-when-ready)');
      break;
    case 'timeout':
      console.log(`not every pool was ready after ${options.readyTimeoutMs / 1000} s: stopping the stack`);
      break;
    case 'crash':
      console.log(outcome.message);
      break;
    default:
      break;
  }
  await stopAll();
  console.log('stopped');
  return outcome?.kind === 'timeout' || outcome?.kind === 'crash' ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(`stack-main: ${(error as Error).stack ?? String(error)}`);
    process.exit(1);
  },
);
