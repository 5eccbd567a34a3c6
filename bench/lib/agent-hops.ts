// The processes the node agent bench measures, each its own Node process
// behind the harness's watchdog: fake-sandboxd, the bare floor proxy, the
// node agent, and the floor inside an agent's process. The diagnostic
// switches (CPU_PROF, TRACE_GC, PERF_MAP) apply to the hops started `watched`;
// AGENT_NODE_FLAGS replaces the chart's Node flags for every agent process.
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { addressInUse, quietPort } from '@warmpool/harness';
import { Pool } from 'undici';
import { chartNodeFlags, flagsFromEnv } from './chart-flags.ts';
import type { Claim } from './claim-tally.ts';
import { fleetCaller } from './fleet-caller.ts';
import {
  floorInAgentSource,
  floorInAgentWorkerSource,
  floorProxySource,
  inWorkerBesideAgentSource,
  modulesLoadedSource,
} from './floor-proxy.ts';
import { startProcess, type Server } from './serving-process.ts';
import { UNBOUNDED_SANDBOXD_ARGS } from './unbounded-sandboxd.ts';

/** The fleet token every process here is started with. */
export const TOKEN = 'bench-token';

const { headers, call } = fleetCaller(TOKEN);

/** The claim every measured call sends: a warm hit on the pool fillWarmPool fills. */
export const CLAIM: Claim = { headers, body: JSON.stringify({ template: 'bench', ttl_seconds: 3600 }) };

/** An undici Pool of keep-alive connections to `base`, over TCP or a unix socket. */
export function poolTo(base: string, connections: number): Pool {
  const options = { connections, pipelining: 1, keepAliveTimeout: 30_000 };
  return base.startsWith('unix:')
    ? new Pool('http://localhost', { ...options, socketPath: base.slice('unix:'.length) })
    : new Pool(base, options);
}

/** Sets CLAIM's pool to `warm` sandboxes through the agent behind `agent` (named `name`), and waits until they are. */
export async function fillWarmPool(agent: Pool, name: string, warm: number): Promise<void> {
  const set = await call(agent, 'PUT', '/v1/pools', { generation: 1, pools: [{ template: 'bench', warm }] });
  if (set.status !== 200) throw new Error(`PUT /v1/pools through ${name} answered ${set.status}: ${set.text}`);
  for (let now = 0; now < warm;) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    const info = JSON.parse((await call(agent, 'GET', '/v1/info')).text) as { pools: Array<{ warm: number }> };
    now = info.pools[0]?.warm ?? 0;
  }
}

const profileDir = process.env['CPU_PROF'];
/** Node flags that make a hop write its CPU profile, named `prefix`-…, when profiling was asked for. */
const profiled = (prefix: string): string[] =>
  profileDir === undefined
    ? []
    : ['--cpu-prof', `--cpu-prof-dir=${profileDir}`, `--cpu-prof-name=${prefix}-\${pid}.cpuprofile`];

export const traceGc = process.env['TRACE_GC'] === '1';
export const perfMap = process.env['PERF_MAP'] === '1';
/** Node flags for a watched TCP hop (named `prefix` in profiles): whichever diagnostics the switches asked for. */
const watchedFlags = (prefix: string): string[] => [
  ...profiled(prefix),
  ...(traceGc ? ['--trace-gc'] : []),
  // --perf-basic-prof also makes V8 write its log (isolate-*.log in the working directory unless told where).
  ...(perfMap ? ['--perf-basic-prof', '--no-logfile-per-isolate', '--logfile=/tmp/perf-%p.v8.log'] : []),
];
export const agentNodeFlags = flagsFromEnv('AGENT_NODE_FLAGS') ?? chartNodeFlags('nodeAgent');

const distOf = (pkg: string, file = 'main.js'): string => join(dirname(fileURLToPath(import.meta.resolve(pkg))), file);

/** Module code, for floorTo's `alongside`, that loads the node agent's code and starts nothing of it. */
export const agentCodeLoaded = modulesLoadedSource(pathToFileURL(distOf('@warmpool/node-agent', 'index.js')).href);

/** fake-sandboxd on `listen` (an address or `unix:/path`), every claim a warm hit; `base` makes its URL from the serving record. */
export async function startSandboxd(listen: string, base: (record: Record<string, string>) => string): Promise<Server> {
  return startProcess(
    [distOf('@warmpool/fake-sandboxd'), '--listen', listen, '--api-token', TOKEN, ...UNBOUNDED_SANDBOXD_ARGS],
    {},
    'serving',
    base,
  );
}

export interface FloorOptions {
  /** A TCP hop the diagnostic switches apply to. */
  watched?: boolean;
  /** Node flags of the floor's process (none by default). */
  nodeFlags?: string[];
  /** Module code run in the floor's process once it listens. */
  alongside?: string;
}

/** The bare floor proxy in front of `sandboxd`. */
export function floorTo(sandboxd: Server, options: FloorOptions = {}): Promise<Server> {
  const { watched = false, nodeFlags = [], alongside = '' } = options;
  return startProcess(
    [
      ...nodeFlags,
      ...(watched ? watchedFlags('floor') : []),
      '--input-type=module',
      '-e',
      floorProxySource(sandboxd.base) + alongside,
    ],
    {},
    'floor serving',
    (r) => `http://${r['address']}`,
  );
}

const agentArgs = (sandboxd: Server): string[] => [
  '--listen',
  '127.0.0.1:0',
  '--sandboxd-url',
  sandboxd.base,
  '--no-inventory',
  '--log-level',
  'info',
];

/** A node agent in front of `sandboxd`, with the agents' Node flags (or `nodeFlags`); `watched` as for floorTo. */
export function agentTo(sandboxd: Server, watched = false, nodeFlags: string[] = agentNodeFlags): Promise<Server> {
  return startProcess(
    [...nodeFlags, ...(watched ? watchedFlags('agent') : []), distOf('@warmpool/node-agent'), ...agentArgs(sandboxd)],
    { WARMPOOL_API_TOKEN: TOKEN },
    'node agent serving',
    (r) => r['url'] as string,
  );
}

/**
 * The floor proxy inside a node agent's process (always watched), ready once the agent serves: on the agent's own
 * thread, or in a worker thread of it (`worker`).
 */
export function floorInAgentTo(sandboxd: Server, options: { worker?: boolean } = {}): Promise<Server> {
  const sourceOf = options.worker === true ? floorInAgentWorkerSource : floorInAgentSource;
  return inAgentProcessTo(
    (port) => sourceOf(sandboxd.base, port, distOf('@warmpool/node-agent'), agentArgs(sandboxd)),
    [...agentNodeFlags, ...watchedFlags('floor-in-agent')],
  );
}

/**
 * A second node agent in a worker thread of a node agent's process, serving claims on its own port, ready once the
 * process's own agent serves: what a claim path on its own isolate (its heap, its young generation, its inline caches)
 * beside a whole agent would cost. The worker's agent is the shipped code with no inventory; like any agent, it also
 * reads sandboxd's info once a second.
 */
export function agentInWorkerTo(sandboxd: Server): Promise<Server> {
  const agentIndex = pathToFileURL(distOf('@warmpool/node-agent', 'index.js')).href;
  const inWorker = (port: number): string => `
    const { createNodeAgent } = await import(${JSON.stringify(agentIndex)});
    const agent = createNodeAgent({ sandboxdUrl: ${JSON.stringify(sandboxd.base)}, token: ${JSON.stringify(TOKEN)}, listen: { host: '127.0.0.1', port: ${port} } });
    await agent.start();
  `;
  return inAgentProcessTo(
    (port) => inWorkerBesideAgentSource(inWorker(port), distOf('@warmpool/node-agent'), agentArgs(sandboxd)),
    agentNodeFlags,
  );
}

/**
 * A node agent's process that also serves `sourceOf(port)`'s hop on `port`, measured there. The port is chosen ahead,
 * below the ephemeral range; one taken meanwhile fails the start, which is tried again on another.
 */
async function inAgentProcessTo(sourceOf: (port: number) => string, nodeFlags: string[]): Promise<Server> {
  for (let attempt = 1; ; attempt++) {
    const port = await quietPort();
    try {
      return await startProcess(
        [...nodeFlags, '--input-type=module', '-e', sourceOf(port)],
        { WARMPOOL_API_TOKEN: TOKEN },
        'node agent serving',
        () => `http://127.0.0.1:${port}`,
      );
    } catch (error) {
      // The failure carries the child's last lines: try another port only when this one was taken.
      if (attempt === 3 || !(error instanceof Error) || !addressInUse(error.message)) throw error;
    }
  }
}
