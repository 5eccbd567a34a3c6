// The node agent's batch verb (POST /v1/claims, what the control plane sends
// when a turn holds several claims for one node) against its single verb
// (POST /v1/claim, the hop bench/node-agent.bench.ts measures), through one
// agent in front of one fake-sandboxd, in the same rounds:
// - at 1 in flight, a batch of one against the single verb: what the batch
//   verb's own envelope and answer cost;
// - at 32 claims in flight, batches of ITEMS (32 / ITEMS requests at once)
//   against 32 single claims: what a batch saves per claim.
// The agent's CPU per claim is read from /proc around each turn; turns are
// shuffled every round.
//
//   make build && flock /tmp/warmpool-bench.lock node bench/node-agent-batch.bench.ts
//
// ROUNDS (default 5), ITEMS (default 8): ≈ 40 s.
import { performance } from 'node:perf_hooks';
import type { Pool } from 'undici';
import { agentTo, CLAIM, fillWarmPool, poolTo, startSandboxd } from './lib/agent-hops.ts';
import { inRandomOrder } from './lib/order.ts';
import { cpuMsOf } from './lib/proc.ts';
import { meanWithError, printTable, quantile, type Row } from './lib/table.ts';

const ROUNDS = Number(process.env['ROUNDS'] ?? 5);
const ITEMS = Number(process.env['ITEMS'] ?? 8);
const CLAIMS_IN_FLIGHT = 32;
const UNLOADED_MS = 1_000;
const LOADED_MS = 2_000;

interface Turn {
  name: string;
  path: '/v1/claim' | '/v1/claims';
  items: number;
  requestsInFlight: number;
  ms: number;
}

const TURNS: Turn[] = [
  { name: 'single verb, 1 in flight', path: '/v1/claim', items: 1, requestsInFlight: 1, ms: UNLOADED_MS },
  { name: 'batch of 1, 1 in flight', path: '/v1/claims', items: 1, requestsInFlight: 1, ms: UNLOADED_MS },
  {
    name: `single verb, ${CLAIMS_IN_FLIGHT} in flight`,
    path: '/v1/claim',
    items: 1,
    requestsInFlight: CLAIMS_IN_FLIGHT,
    ms: LOADED_MS,
  },
  {
    name: `batches of ${ITEMS}, ${CLAIMS_IN_FLIGHT} claims in flight`,
    path: '/v1/claims',
    items: ITEMS,
    requestsInFlight: Math.max(1, Math.round(CLAIMS_IN_FLIGHT / ITEMS)),
    ms: LOADED_MS,
  },
];

interface Tally {
  latenciesMs: number[];
  claims: number;
  seconds: number;
  /** The agent's CPU µs per claim, each round. */
  cpuPerClaim: number[];
}

const item = JSON.parse(CLAIM.body) as unknown;

/** One turn: its requests for `turn.ms`, every claim in them required to be served. */
async function drive(pool: Pool, agentPid: number, turn: Turn, into: Tally): Promise<void> {
  const body = turn.path === '/v1/claim' ? CLAIM.body : JSON.stringify({ claims: Array(turn.items).fill(item) });
  const cpuBefore = cpuMsOf(agentPid);
  const started = performance.now();
  const end = started + turn.ms;
  let claims = 0;
  const caller = async (): Promise<void> => {
    while (performance.now() < end) {
      const sent = performance.now();
      const res = await pool.request({ method: 'POST', path: turn.path, headers: CLAIM.headers, body });
      const text = await res.body.text();
      if (res.statusCode !== 200 || (turn.path === '/v1/claims' && !allServed(text, turn.items)))
        throw new Error(`${turn.name}: ${res.statusCode} ${text.slice(0, 300)}`);
      into.latenciesMs.push(performance.now() - sent);
      claims += turn.items;
    }
  };
  await Promise.all(Array.from({ length: turn.requestsInFlight }, caller));
  into.seconds += (performance.now() - started) / 1_000;
  into.claims += claims;
  into.cpuPerClaim.push(((cpuMsOf(agentPid) - cpuBefore) * 1_000) / claims);
}

/** Every line of a batch's answer says 200, one per item. */
function allServed(ndjson: string, items: number): boolean {
  const lines = ndjson.split('\n').filter(Boolean);
  return lines.length === items && lines.every((line) => line.includes('"status":200'));
}

const sandboxd = await startSandboxd('127.0.0.1:0', (r) => `http://${r['address']}`);
const agent = await agentTo(sandboxd);
const pool = poolTo(agent.base, 16);
try {
  await fillWarmPool(pool, 'node agent', 50_000);
  const tallies = new Map<Turn, Tally>(
    TURNS.map((t) => [t, { latenciesMs: [], claims: 0, seconds: 0, cpuPerClaim: [] }]),
  );
  for (const turn of TURNS)
    await drive(pool, agent.pid, { ...turn, ms: 500 }, { latenciesMs: [], claims: 0, seconds: 0, cpuPerClaim: [] });
  for (let round = 0; round < ROUNDS; round++)
    for (const turn of inRandomOrder(TURNS)) await drive(pool, agent.pid, turn, tallies.get(turn) as Tally);

  const cpu = (t: Tally): string => {
    const { mean, error } = meanWithError(t.cpuPerClaim);
    return `${mean.toFixed(1)} ± ${error.toFixed(1)} µs`;
  };
  const rows: Row[] = TURNS.map((turn): Row => {
    const t = tallies.get(turn) as Tally;
    return [
      turn.name,
      `${(t.claims / t.seconds).toFixed(0)} claims/s; request p50 ${(quantile(t.latenciesMs, 0.5) * 1_000).toFixed(0)} µs; agent CPU per claim ${cpu(t)}`,
      '—',
      '—',
      'info',
    ];
  });
  printTable(
    '## Node agent: the batch verb against the single verb',
    [
      `Node ${process.version}; one node agent (the chart's Node flags) in front of one fake-sandboxd (TCP), every claim a warm hit; ${ROUNDS} rounds, turns shuffled; CPU per claim is mean ± standard error over the rounds.`,
    ],
    rows,
  );
} finally {
  await pool.close();
  await agent.stop();
  await sandboxd.stop();
}
