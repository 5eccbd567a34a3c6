// What String.prototype's methods cost in optimized code with each app's
// modules loaded, side by side with a bare Node process (the floor) and with
// a process in which a String subclass was defined (the cliff): V8 then keeps
// String.prototype as a dictionary, and every string method an optimized
// function calls becomes a generic call, in the whole process. ioredis 6.0.0
// defines such a subclass (its RESP3 VerbatimString) when loaded, so the
// control plane makes String.prototype fast again right after loading it
// (apps/control-plane/src/redis/fast-string-prototype.ts); a row here PASSes
// when String.prototype is fast with the app's modules loaded, and its
// timings show what that buys. Each path runs in its own process, each
// process several times, in an order shuffled each round.
//   make build && node bench/string-methods.bench.ts
// ROUNDS (default 3) processes per path.
import { execFileSync } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { REPO_ROOT } from '@warmpool/harness';
import { inRandomOrder } from './lib/order.ts';
import { machineNote, median, printTable, type Row } from './lib/table.ts';

const ROUNDS = Number(process.env['ROUNDS'] ?? 3);
if (!Number.isInteger(ROUNDS) || ROUNDS < 1)
  throw new Error(`ROUNDS must be a whole number ≥ 1, not ${process.env['ROUNDS']}`);
/** An Authorization header's length: a ServiceAccount token as the claim bench's caller sends it. */
const HEADER_CHARS = 676;

const appLoaded = (app: string): string =>
  `await import(${JSON.stringify(pathToFileURL(`${REPO_ROOT}apps/${app}/dist/index.js`).href)});`;

const PATHS: ReadonlyArray<{ name: string; setup: string }> = [
  { name: 'bare Node (the floor)', setup: '' },
  { name: 'a String subclass defined (the cliff)', setup: 'class Verbatim extends String {}' },
  { name: "control plane's modules", setup: appLoaded('control-plane') },
  { name: "node agent's modules", setup: appLoaded('node-agent') },
  { name: "router's modules", setup: appLoaded('router') },
  { name: "fake-sandboxd's modules", setup: appLoaded('fake-sandboxd') },
];

/** Each case: a loop an optimized function runs, timed per call of the case (µs). */
const CASES: Record<string, string> = {
  'charCodeAt over a 676-char header': `(s) => { let d = 0; for (let i = 0; i < s.length; i++) d |= s.charCodeAt(i); return d; }`,
  '600 × indexOf': `(s) => { let d = 0; for (let i = 0; i < 600; i++) d += s.indexOf('Ij', 7); return d; }`,
  '600 × slice': `(s) => { let d = 0; for (let i = 0; i < 600; i++) d += s.slice(7, 20).length; return d; }`,
  '600 × toLowerCase': `(s) => { let d = 0; for (let i = 0; i < 600; i++) d += 'Content-Type'.toLowerCase().length; return d; }`,
};

/** The probe a path's process runs after its setup: each case warmed, then timed; prints JSON. */
function probe(setup: string): string {
  const cases = Object.entries(CASES)
    .map(([name, fn]) => `[${JSON.stringify(name)}, ${fn}]`)
    .join(',\n');
  return `${setup}
    const header = 'Bearer ' + 'eyJhbGciOiJSUzI1NiIsImtpZCI6Ij'.repeat(30).slice(0, ${HEADER_CHARS - 7});
    const out = { fast: %HasFastProperties(String.prototype) };
    for (const [name, f] of [${cases}]) {
      for (let k = 0; k < 5000; k++) f(header);
      const t = performance.now();
      for (let k = 0; k < 20000; k++) f(header);
      out[name] = ((performance.now() - t) * 1000) / 20000;
    }
    console.log(JSON.stringify(out));
    process.exit(0);`;
}

function run(setup: string): Record<string, number | boolean> {
  const out = execFileSync(process.execPath, ['--allow-natives-syntax', '--input-type=module', '-e', probe(setup)], {
    encoding: 'utf8',
  });
  return JSON.parse(out.trim().split('\n').at(-1) ?? '{}') as Record<string, number | boolean>;
}

const results = new Map(PATHS.map((p) => [p.name, [] as Array<Record<string, number | boolean>>]));
for (let round = 0; round < ROUNDS; round++)
  for (const path of inRandomOrder(PATHS)) results.get(path.name)?.push(run(path.setup));

const floor = results.get(PATHS[0]?.name ?? '') ?? [];
const medianOf = (runs: Array<Record<string, number | boolean>>, key: string): number =>
  median(runs.map((r) => Number(r[key])));
const rows: Row[] = [];
for (const path of PATHS) {
  const runs = results.get(path.name) ?? [];
  const fast = runs.every((r) => r['fast'] === true);
  const cells = Object.keys(CASES).map((key) => {
    const value = medianOf(runs, key);
    return `${key}: ${value.toFixed(2)} µs (${(value / medianOf(floor, key)).toFixed(1)}×)`;
  });
  const goal = path.setup.includes('extends String') ? 'the cliff, for reference' : 'String.prototype fast';
  rows.push([
    path.name,
    `String.prototype ${fast ? 'fast' : 'a dictionary'}; ${cells.join('; ')}`,
    goal,
    'bare Node',
    path.setup.includes('extends String') ? 'info' : fast ? 'PASS' : 'FAIL',
  ]);
}
printTable(
  '## String methods in optimized code, per process',
  [machineNote(), `${ROUNDS} processes per path, medians; (n×) is against bare Node.`],
  rows,
);
