// Summarises a V8 `--trace-gc-nvp` trace (a process's output, e.g. kept by
// claims.bench.ts's LOG_DIR): per scavenge, what it found live in the young
// generation (new_space_survived), what it moved to the old generation
// (promoted), what was allocated since the one before and its pause; per
// mark-compact, its pause and the incremental marking done on the main
// thread before it. Lines before `--after <ms>` (the isolate's clock, as the
// trace prints it) are left out, e.g. start-up.
//
//   node bench/gc-trace.ts <log> [--after <ms>]
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface Collection {
  atMs: number;
  kind: string;
  fields: Map<string, number>;
}

const USAGE = 'usage: node bench/gc-trace.ts <log> [--after <ms>]';
function argsOf(): { file: string; afterMs: number } {
  try {
    const { values, positionals } = parseArgs({ options: { after: { type: 'string' } }, allowPositionals: true });
    const afterMs = Number(values.after ?? 0);
    if (positionals.length !== 1 || !Number.isFinite(afterMs)) throw new Error('one log and a number of ms');
    return { file: positionals[0] ?? '', afterMs };
  } catch (err) {
    console.error(`${err instanceof Error ? err.message : String(err)}\n${USAGE}`);
    process.exit(2);
  }
}
const { file, afterMs } = argsOf();

/** One `--trace-gc-nvp` line: `[pid:isolate:0]   1234 ms: pause=2.1 mutator=… gc=s … promoted=… …`. */
function collectionOf(line: string): Collection | undefined {
  const head = /\]\s+(\d+) ms: (.*)$/.exec(line);
  if (head === null) return undefined;
  const fields = new Map<string, number>();
  let kind = '';
  for (const pair of (head[2] ?? '').split(' ')) {
    const [key, value] = pair.split('=');
    if (key === undefined || value === undefined) continue;
    if (key === 'gc') kind = value;
    else fields.set(key, Number(value.replace('%', '')));
  }
  return kind === '' ? undefined : { atMs: Number(head[1]), kind, fields };
}

const collections = readFileSync(file, 'utf8')
  .split('\n')
  .map(collectionOf)
  .filter((c): c is Collection => c !== undefined && c.atMs >= afterMs);

/** A field's mean over collections, of which there is at least one. */
const mean = (of: Collection[], field: string): number =>
  of.reduce((sum, c) => sum + (c.fields.get(field) ?? 0), 0) / of.length;
const kib = (bytes: number): string => `${(bytes / 1_024).toFixed(0)} KiB`;
/** `<what>: <n>`, then the averages only when there is something to average (no zero that reads as measured). */
const line = (what: string, of: Collection[], averages: () => string): string =>
  of.length === 0 ? `${what}: none` : `${what}: ${of.length}; each, on average: ${averages()}`;

const scavenges = collections.filter((c) => c.kind === 's');
const markCompacts = collections.filter((c) => c.kind === 'mc');
const spanMs = collections.length > 1 ? (collections.at(-1)?.atMs ?? 0) - (collections[0]?.atMs ?? 0) : 0;
console.log(`${file}: ${collections.length} collections from ${afterMs} ms on, over ${spanMs} ms`);
console.log(
  line(
    'scavenges',
    scavenges,
    () =>
      `allocated ${kib(mean(scavenges, 'allocated'))} since the one before, ` +
      `found ${kib(mean(scavenges, 'new_space_survived'))} live, promoted ${kib(mean(scavenges, 'promoted'))}, ` +
      `paused ${mean(scavenges, 'pause').toFixed(2)} ms`,
  ),
);
console.log(
  line(
    'mark-compacts',
    markCompacts,
    () =>
      `paused ${mean(markCompacts, 'pause').toFixed(2)} ms ` +
      `after ${mean(markCompacts, 'incremental').toFixed(1)} ms of incremental marking steps`,
  ),
);
