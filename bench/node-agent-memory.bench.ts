// The node agent's memory: idle, and under an attack of large chunked bodies
// from a fleet-token holder, against the chart's memory limit.
//
// Each variant is its own process, measured from outside (/proc VmRSS and
// the peak, VmHWM): the agent (dist/main.js, --no-inventory; its modules,
// @kubernetes/client-node included, load all the same) with no Node flags,
// the agent with the chart's nodeFlags (read from charts/warmpool/values.yaml,
// so the row measures what ships), and the floor: a bare node:http server that
// refuses every body unread, the least any Node process answering this attack
// costs. A fresh process per attack size, so each peak is that attack's.
//
// The attack: N clients at once (20, then 100), each sending POST /v1/claim
// with the fleet token and a 10 MiB chunked body, 64 KiB chunks as fast as
// the connection takes them, until the server answers and closes; three such
// waves back to back.
//
//   npx tsc -b apps/fake-sandboxd apps/node-agent && node bench/node-agent-memory.bench.ts
import { connect } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chartNodeFlags } from './lib/chart-flags.ts';
import { memoryOf } from './lib/proc.ts';
import { startProcess, type Server } from './lib/serving-process.ts';
import { machineNote, mib, pass, printTable, type Row } from './lib/table.ts';

const TOKEN = 'bench-token';
const BODY_BYTES = 10 * 1024 * 1024;
const CHUNK = Buffer.alloc(64 * 1024, 'x');
const FRAME = Buffer.concat([Buffer.from(`${CHUNK.length.toString(16)}\r\n`), CHUNK, Buffer.from('\r\n')]);
const WAVES = 3;
const ATTACKS = [20, 100];
/** The chart's memory limit (charts/warmpool/values.yaml, nodeAgent.resources.limits.memory). */
const LIMIT_BYTES = 256 * 1024 * 1024;
/** Goal: the peak stays below the limit with this much of it to spare. */
const MARGIN = 0.2;

const distOf = (pkg: string): string => join(dirname(fileURLToPath(import.meta.resolve(pkg))), 'main.js');

/** The floor: node:http answering 400 with Connection: close to every request, its body unread. */
const FLOOR_SOURCE = `
const server = require('node:http').createServer((req, res) => {
  res.writeHead(400, { 'content-type': 'application/json', connection: 'close' });
  res.end('{"error":"invalid request body"}');
});
server.listen(0, '127.0.0.1', () => process.stderr.write(JSON.stringify({ msg: 'serving', address: '127.0.0.1:' + server.address().port }) + '\\n'));
`;

/**
 * One attacker: a 10 MiB chunked claim body, as fast as the connection takes it. Resolves with the status the server
 * answered (0: none).
 */
function attack(address: string): Promise<number> {
  const [host, port] = address.split(':') as [string, string];
  return new Promise((resolve) => {
    const socket = connect(Number(port), host);
    let received = '';
    let sent = 0;
    socket.on('error', () => undefined);
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
    // A server that never answers nor closes counts as no answer.
    const giveUp = setTimeout(() => socket.destroy(), 60_000);
    socket.on('close', () => {
      clearTimeout(giveUp);
      resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(received)?.[1] ?? 0));
    });
    const pump = (): void => {
      while (sent < BODY_BYTES && !socket.destroyed) {
        sent += CHUNK.length;
        if (!socket.write(FRAME)) {
          socket.once('drain', pump);
          return;
        }
      }
      if (!socket.destroyed) socket.end('0\r\n\r\n');
    };
    socket.write(
      `POST /v1/claim HTTP/1.1\r\nhost: agent\r\nauthorization: Bearer ${TOKEN}\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n`,
    );
    pump();
  });
}

/** A few ordinary claims, so the idle figure is of a process that has served. */
async function warmUp(address: string): Promise<void> {
  await fetch(`http://${address}/v1/pools`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${TOKEN}` },
    body: JSON.stringify({ generation: 1, pools: [{ template: 'img', warm: 200 }] }),
  });
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  for (let i = 0; i < 100; i++) {
    await (
      await fetch(`http://${address}/v1/claim`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}` },
        body: '{"template":"img"}',
      })
    ).arrayBuffer();
  }
}

interface Measured {
  idle: number;
  peak: number;
  refused: number;
  total: number;
  seconds: number;
}

async function measure(start: () => Promise<Server>, concurrency: number, agent: boolean): Promise<Measured> {
  const proc = await start();
  try {
    if (agent) await warmUp(proc.base);
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const idle = memoryOf(proc.pid).rss;
    let refused = 0;
    const started = performance.now();
    for (let wave = 0; wave < WAVES; wave++) {
      const statuses = await Promise.all(Array.from({ length: concurrency }, () => attack(proc.base)));
      refused += statuses.filter((status) => status === 400).length;
    }
    const seconds = (performance.now() - started) / 1000;
    return { idle, peak: memoryOf(proc.pid).peak, refused, total: WAVES * concurrency, seconds };
  } finally {
    await proc.stop('SIGKILL');
  }
}

async function main(): Promise<void> {
  const nodeFlags = chartNodeFlags('nodeAgent');
  const sandboxd = await startProcess(
    [
      distOf('@warmpool/fake-sandboxd'),
      '--listen',
      '127.0.0.1:0',
      '--api-token',
      TOKEN,
      '--cold-boot-ms',
      '5ms',
      '--max-claims',
      '100000',
      '--room',
      '200000',
      '--refill-rate',
      '10000',
    ],
    {},
    'serving',
    (r) => r['address'] ?? '',
  );
  const agentStarter = (flags: string[]) => () =>
    startProcess(
      [
        ...flags,
        distOf('@warmpool/node-agent'),
        '--no-inventory',
        '--listen',
        '127.0.0.1:0',
        '--sandboxd-url',
        `http://${sandboxd.base}`,
      ],
      { WARMPOOL_API_TOKEN: TOKEN },
      'node agent serving',
      (r) => new URL(r['url'] ?? '').host,
    );
  const variants: Array<{ name: string; start: () => Promise<Server>; agent: boolean }> = [
    { name: `agent, chart flags (${nodeFlags.join(' ')})`, start: agentStarter(nodeFlags), agent: true },
    { name: 'agent, no Node flags', start: agentStarter([]), agent: true },
    {
      name: 'floor: bare node:http, body unread',
      start: () => startProcess(['-e', FLOOR_SOURCE], {}, 'serving', (r) => r['address'] ?? ''),
      agent: false,
    },
  ];
  const goal = `< ${mib(LIMIT_BYTES * (1 - MARGIN))} (limit ${mib(LIMIT_BYTES)} − ${MARGIN * 100} %)`;
  const rows: Row[] = [];
  try {
    for (const variant of variants) {
      for (const concurrency of ATTACKS) {
        const m = await measure(variant.start, concurrency, variant.agent);
        process.stderr.write(
          `${variant.name}, ${concurrency} attackers: idle ${mib(m.idle)}, peak ${mib(m.peak)}, ${m.refused}/${m.total} answered 400 in ${m.seconds.toFixed(1)} s\n`,
        );
        const shipped = variant.agent && variant === variants[0];
        if (concurrency === ATTACKS[0])
          rows.push([
            `idle RSS: ${variant.name}`,
            mib(m.idle),
            shipped ? goal : '—',
            variant.agent ? 'issue 8: 145–168 MB' : '—',
            shipped ? pass(m.idle < LIMIT_BYTES * (1 - MARGIN)) : 'info',
          ]);
        rows.push([
          `peak RSS, ${concurrency} × 10 MiB chunked bodies × ${WAVES} waves: ${variant.name}`,
          mib(m.peak),
          shipped ? goal : '—',
          variant.agent ? `issue 8: ${concurrency === 20 ? '288' : '352'} MB (one wave)` : '—',
          shipped ? pass(m.peak < LIMIT_BYTES * (1 - MARGIN)) : 'info',
        ]);
        rows.push([
          `  answered 400 / attackers, in ${m.seconds.toFixed(1)} s: ${variant.name}`,
          `${m.refused} / ${m.total}`,
          variant.agent ? `${m.total} / ${m.total}` : '—',
          '—',
          variant.agent ? pass(m.refused === m.total) : 'info',
        ]);
      }
    }
  } finally {
    await sandboxd.stop('SIGKILL');
  }
  printTable(
    '## Node agent memory',
    [
      '`npx tsc -b apps/fake-sandboxd apps/node-agent && node bench/node-agent-memory.bench.ts`',
      `${machineNote()}. Each row is a fresh process; RSS from /proc (VmRSS idle after 100 claims and 2 s, VmHWM for the peak).`,
    ],
    rows,
  );
}

await main();
