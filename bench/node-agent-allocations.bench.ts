// What the node agent's claim path allocates per claim, garbage included,
// against the floor proxy's, by allocation site (bench/lib/allocation-sampler.ts).
// Bytes allocated decide how often the young generation is collected, so
// this tells whether the agent's extra GC per claim (bench/node-agent.bench.ts,
// TRACE_GC=1) comes from what its claim path allocates or from what each
// collection costs in its process.
//
// One fake-sandboxd (TCP), one floor and one node agent (the chart's Node
// flags) in front of it, each started with its inspector on. Every round each
// hop takes a turn of TURN_MS at 32 in flight with the sampler on, in an
// order shuffled each round.
//
//   make build && flock /tmp/warmpool-bench.lock node bench/node-agent-allocations.bench.ts
//
// ROUNDS (default 4), TURN_MS (default 3000): ≈ 1 min. SITES (default 12) top allocation sites are printed per hop.
import { quietPort } from '@warmpool/harness';
import type { Pool } from 'undici';
import { agentNodeFlags, agentTo, CLAIM, fillWarmPool, floorTo, poolTo, startSandboxd } from './lib/agent-hops.ts';
import {
  addAllocations,
  AllocationSampler,
  inspectFlag,
  topSites,
  type Allocations,
} from './lib/allocation-sampler.ts';
import { claimFor, emptyTally } from './lib/claim-tally.ts';
import { inRandomOrder } from './lib/order.ts';
import type { Server } from './lib/serving-process.ts';
import { printTable, type Row } from './lib/table.ts';

const ROUNDS = Number(process.env['ROUNDS'] ?? 4);
const TURN_MS = Number(process.env['TURN_MS'] ?? 3_000);
const SITES = Number(process.env['SITES'] ?? 12);
const CONCURRENCY = 32;
const CONNECTIONS = 16;
const WARM_TARGET = 50_000;

interface Hop {
  name: 'floor' | 'node agent';
  server: Server;
  pool: Pool;
  sampler: AllocationSampler;
  claims: number;
  /** Bytes per claim of each turn. */
  perTurn: number[];
  allocations: Allocations;
}

const sandboxd = await startSandboxd('127.0.0.1:0', (r) => `http://${r['address']}`);
const hops: Hop[] = [];
try {
  const floorPort = await quietPort();
  const agentPort = await quietPort();
  const started: Array<[Hop['name'], Server]> = [
    ['floor', await floorTo(sandboxd, { nodeFlags: [inspectFlag(floorPort)] })],
    ['node agent', await agentTo(sandboxd, false, [...agentNodeFlags, inspectFlag(agentPort)])],
  ];
  for (const [name, server] of started) {
    const sampler = await AllocationSampler.connect(name === 'floor' ? floorPort : agentPort);
    const pool = poolTo(server.base, CONNECTIONS);
    hops.push({
      name,
      server,
      pool,
      sampler,
      claims: 0,
      perTurn: [],
      allocations: { bytes: 0, bySite: new Map(), byOwnFrame: new Map() },
    });
  }
  const agent = hops.find((h) => h.name === 'node agent') as Hop;
  await fillWarmPool(agent.pool, agent.name, WARM_TARGET);
  for (const hop of hops) await claimFor(hop.pool, CLAIM, 2_000, CONCURRENCY, emptyTally());

  for (let round = 0; round < ROUNDS; round++) {
    for (const hop of inRandomOrder(hops)) {
      const tally = emptyTally();
      const turn = await hop.sampler.sample(() => claimFor(hop.pool, CLAIM, TURN_MS, CONCURRENCY, tally));
      if (tally.errors > 0) throw new Error(`${hop.name}: ${tally.errors} claims failed`);
      addAllocations(hop.allocations, turn);
      hop.claims += tally.claims;
      hop.perTurn.push(turn.bytes / tally.claims);
    }
  }

  const perClaim = (hop: Hop): number => hop.allocations.bytes / hop.claims;
  const [floor, node] = [hops[0] as Hop, agent];
  const rows: Row[] = hops.map((hop): Row => [
    `${hop.name}: bytes allocated per claim at ${CONCURRENCY} in flight (each turn)`,
    `${(perClaim(hop) / 1_024).toFixed(1)} KiB (${hop.perTurn.map((b) => (b / 1_024).toFixed(1)).join(', ')}) over ${hop.claims} claims`,
    '—',
    '—',
    'info',
  ]);
  rows.push([
    'node agent − floor',
    `${((perClaim(node) - perClaim(floor)) / 1_024).toFixed(1)} KiB per claim (${((perClaim(node) / perClaim(floor) - 1) * 100).toFixed(0)} %)`,
    '—',
    '—',
    'info',
  ]);
  printTable(
    '## Node agent: bytes allocated per claim against the floor',
    [
      `Node ${process.version}; one floor and one node agent (${agentNodeFlags.join(' ')}) in front of one fake-sandboxd; ${ROUNDS} rounds × ${TURN_MS} ms per hop, shuffled; V8's sampling heap profiler (1 KiB interval), objects freed by either collector included.`,
    ],
    rows,
  );
  for (const hop of hops) {
    console.log(`\n${hop.name}, top allocation sites (bytes per claim, site < caller):`);
    for (const line of topSites(hop.allocations, hop.claims, SITES)) console.log(line);
  }
} finally {
  for (const hop of hops) {
    hop.sampler.close();
    await hop.pool.close();
    await hop.server.stop();
  }
  await sandboxd.stop();
}
