// Summarises a V8 .cpuprofile (node --cpu-prof, or a bench's CPU_PROF=<dir>):
// the process's serving time, without start-up (samples whose stack is in
// module loading) and idle, and its top frames by self time; or, given
// function-name fragments, the inclusive share of every frame that matches;
// or, with --own, the time of each innermost frame of our own code (apps,
// libs, the bench's servers) with everything it called into (libraries,
// builtins, Node), the rest by package: what each of our functions costs.
//
//   node bench/cpu-profile.ts <file.cpuprofile> [--own | fragment ...]
//   node bench/cpu-profile.ts /tmp/prof/agent-123.cpuprofile 'admit' 'readIncomingJson' 'claimInto'
import { readFileSync } from 'node:fs';
import { isOwnCode } from './lib/own-code.ts';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const START_UP =
  /esm\/module_job|esm\/loader|cjs\/loader|dist\/main\.js:1$|dist\/process\.js:1$|compileForInternalLoader/;

const [file, ...rest] = process.argv.slice(2);
const byOwnFrame = rest.includes('--own');
const fragments = rest.filter((arg) => arg !== '--own');
if (file === undefined || (byOwnFrame && fragments.length > 0)) {
  console.error('usage: node bench/cpu-profile.ts <file.cpuprofile> [--own | function-name fragment ...]');
  process.exit(2);
}
const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
const parents = new Map<number, number>();
for (const node of profile.nodes) for (const child of node.children ?? []) parents.set(child, node.id);

function frameName(id: number): string {
  const { functionName, url, lineNumber } = (nodes.get(id) as ProfileNode).callFrame;
  return `${functionName || '(anonymous)'} ${url.split('/').slice(-2).join('/')}:${lineNumber + 1}`;
}

/** Where a sample's time goes by --own: its innermost frame of our own code, else the package (or builtin) it ran. */
function ownerOf(stack: number[]): string {
  for (const id of stack) {
    const { url } = (nodes.get(id) as ProfileNode).callFrame;
    if (isOwnCode(url)) return frameName(id);
  }
  const { url, functionName } = (nodes.get(stack[0] as number) as ProfileNode).callFrame;
  const where = /node_modules\/((@[^/]+\/)?[^/]+)/.exec(url)?.[1] ?? (url.startsWith('node:') ? 'node' : functionName);
  return `(outside our code) ${where}`;
}

let serving = 0;
let startUp = 0;
const self = new Map<string, number>();
const inclusive = new Map<string, number>();
const owned = new Map<string, number>();
profile.samples.forEach((id, i) => {
  // A sample's time is the delta to the next one.
  const micros = profile.timeDeltas[i + 1] ?? 0;
  const name = frameName(id);
  if (name.startsWith('(idle)')) return;
  const ids: number[] = [];
  for (let at: number | undefined = id; at !== undefined; at = parents.get(at)) ids.push(at);
  const stack = ids.map(frameName);
  if (stack.some((frame) => START_UP.test(frame))) {
    startUp += micros;
    return;
  }
  serving += micros;
  self.set(name, (self.get(name) ?? 0) + micros);
  if (byOwnFrame) {
    const owner = ownerOf(ids);
    owned.set(owner, (owned.get(owner) ?? 0) + micros);
  }
  for (const frame of new Set(stack)) inclusive.set(frame, (inclusive.get(frame) ?? 0) + micros);
});

const share = (micros: number): string => `${((100 * micros) / serving).toFixed(1).padStart(5)} %`;
console.log(`start-up ${(startUp / 1e6).toFixed(2)} s; serving (busy) ${(serving / 1e6).toFixed(2)} s`);
if (byOwnFrame) {
  console.log('time by the innermost frame of our own code (with what it called), share of serving:');
  for (const [name, micros] of [...owned].sort((a, b) => b[1] - a[1]).slice(0, 40))
    console.log(`${share(micros)}  ${name}`);
} else if (fragments.length === 0) {
  console.log('top frames by self time, share of serving:');
  for (const [name, micros] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 25))
    console.log(`${share(micros)}  ${name}`);
} else {
  console.log('inclusive time of the matching frames, share of serving:');
  for (const [name, micros] of [...inclusive].sort((a, b) => b[1] - a[1]))
    if (fragments.some((fragment) => name.includes(fragment))) console.log(`${share(micros)}  ${name}`);
}
