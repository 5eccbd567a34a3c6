// The end of a spec that started real parts: each step runs in the order
// given and on its own (one throwing does not skip the rest; the first error is
// rethrown once all ran), then the spec's log directory goes, unless
// WARMPOOL_KEEP_LOGS=1 keeps it (and says where it is).
import { rmSync } from 'node:fs';

export type TeardownStep = (() => unknown) | undefined;

export async function tearDown(
  logs: { dir: string | undefined; what: string },
  ...steps: TeardownStep[]
): Promise<void> {
  const errors = await eachIsolated(steps);
  if (logs.dir !== undefined) {
    if (process.env['WARMPOOL_KEEP_LOGS'] !== '1') rmSync(logs.dir, { recursive: true, force: true });
    else console.error(`${logs.what} logs kept in ${logs.dir}`);
  }
  if (errors.length > 0) throw errors[0];
}

/** Runs each step in order, on its own (one that throws or rejects does not skip the rest); answers their errors. */
export async function eachIsolated(steps: readonly TeardownStep[]): Promise<unknown[]> {
  const errors: unknown[] = [];
  for (const step of steps) {
    try {
      await step?.();
    } catch (err) {
      errors.push(err);
    }
  }
  return errors;
}
