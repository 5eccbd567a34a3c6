// V8's `--trace-gc` lines, summed: how often a process collected and how long
// its main thread stood still for it. Concurrent and parallel GC work on V8's
// other threads is not in these pauses (it shows in the process's CPU time).
import { readFileSync } from 'node:fs';

export interface GcTrace {
  scavenges: number;
  markCompacts: number;
  /** The main thread's pause time over every collection, ms. */
  pauseMs: number;
  /** Old-generation marking done on the main thread in steps between pauses, ms (its incremental part). */
  markingStepsMs: number;
}

// "[pid:0x…]  1234 ms: Scavenge 16.3 (20.2) -> 14.7 (20.2) MB, pooled: 12 MB, 0.40 / 0.00 ms  (…"
const COLLECTION = /ms: (Scavenge|Mark-Compact|Minor Mark-Sweep)\b.*?, ([\d.]+) \/ [\d.]+ ms/;
const STEPS = /\(\+ ([\d.]+) ms in \d+ steps/;

/** The sums of the `--trace-gc` lines in `logFile` (a process's whole output). */
export function gcTraceOf(logFile: string): GcTrace {
  const trace: GcTrace = { scavenges: 0, markCompacts: 0, pauseMs: 0, markingStepsMs: 0 };
  for (const line of readFileSync(logFile, 'utf8').split('\n')) {
    const collection = COLLECTION.exec(line);
    if (collection === null) continue;
    if (collection[1] === 'Mark-Compact') trace.markCompacts += 1;
    else trace.scavenges += 1;
    trace.pauseMs += Number(collection[2]);
    trace.markingStepsMs += Number(STEPS.exec(line)?.[1] ?? 0);
  }
  return trace;
}
