// `make up`: starts the local stack, says how to use it, shows the pools
// filling, and on Ctrl-C (or SIGTERM) stops everything in reverse order.
// With --exit-when-ready it stops by itself once every pool is READY = DESIRED
// (exit 0), or fails after --ready-timeout (exit 1).
import { parseArgs } from 'node:util';
import { messageOf } from '@warmpool/runtime';
import { leaveSignalsToCaller } from './children.js';
import { startStack, type LocalStack, type UnexpectedExit } from './stack.js';
import { startFederatedStacks } from './stack-federation.js';
import { federationInstructions, instructions } from './stack-instructions.js';
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

/**
 * Signals are ours: children are stopped gracefully in reverse order. During startup there is nothing worth waiting
 * for, so the exit hook kills them all (as it does on a second signal). Call up() once the stack is up.
 */
function takeSignals(): { signalled: Promise<NodeJS.Signals>; up(): void } {
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
  return {
    signalled,
    up: () => {
      up = true;
    },
  };
}

/** One stack, or --clusters federated ones, seen alike from here. */
interface RunningStacks {
  stacks: LocalStack[];
  unexpectedExit: Promise<UnexpectedExit>;
  stop(): Promise<void>;
}

async function startStacks(options: MainOptions): Promise<RunningStacks> {
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
  if (options.clusters > 1) {
    if (options.loopbackPrefix !== undefined)
      throw new Error('--loopback-prefix goes with one cluster only (cluster i uses 127.0.<i>)');
    const federated = await startFederatedStacks(options.clusters, {
      ...common,
      ...(options.dir !== undefined ? { dir: options.dir } : {}),
    });
    return { stacks: [...federated.stacks], unexpectedExit: federated.unexpectedExit, stop: () => federated.stop() };
  }
  const stack = await startStack({
    ...common,
    ...(options.dir !== undefined ? { dir: options.dir } : {}),
    ...(options.loopbackPrefix !== undefined ? { loopbackPrefix: options.loopbackPrefix } : {}),
  });
  return { stacks: [stack], unexpectedExit: stack.unexpectedExit, stop: () => stack.stop() };
}

/** Whichever comes first: a signal, an unexpected exit, or (with --exit-when-ready) every pool ready or the timeout. */
async function firstOutcome(
  { stacks, unexpectedExit }: RunningStacks,
  signalled: Promise<NodeJS.Signals>,
  options: MainOptions,
): Promise<Outcome | undefined> {
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
  return outcome;
}

function sayWhyStopping(outcome: Outcome | undefined, options: MainOptions): void {
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

  const signals = takeSignals();
  const started = performance.now();
  const running = await startStacks(options);
  signals.up();
  for (const stack of running.stacks) console.log(instructions(stack.description, performance.now() - started));
  if (running.stacks.length > 1) console.log(await federationInstructions(running.stacks));

  const outcome = await firstOutcome(running, signals.signalled, options);
  sayWhyStopping(outcome, options);
  await running.stop();
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
