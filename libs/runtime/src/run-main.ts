// How every app's process starts and fails: a bad setting is the operator's to
// fix (its reason on stderr, exit 2, nothing logged as a crash); anything else
// that stops the start is logged as JSON and exits 1.
import { ConfigError } from './config.js';
import { createLogger } from './logger.js';

export interface RunMainOptions {
  /** Further error classes that mean a bad setting (exit 2), beside ConfigError. */
  usageErrors?: ReadonlyArray<abstract new (...args: never[]) => Error>;
}

/**
 * Runs `main`; on a ConfigError writes `<name>: <reason>` to stderr and exits 2, on any other failure logs "failed to
 * start" and exits 1.
 */
export function runMain(name: string, main: () => Promise<void>, options: RunMainOptions = {}): void {
  main().catch((err: unknown) => {
    if (
      err instanceof ConfigError ||
      (err instanceof Error && options.usageErrors?.some((type) => err instanceof type) === true)
    ) {
      process.stderr.write(`${name}: ${err.message}\n`);
      process.exit(2);
    }
    createLogger(name).error('failed to start', { err });
    process.exit(1);
  });
}
