// Graceful shutdown in one place: on SIGTERM/SIGINT every registered closer
// runs once, in reverse order of registration (last opened, first closed),
// bounded by a deadline so a stuck dependency cannot block pod termination.
import type { Logger } from './logger.js';

export interface Closeable {
  close(): Promise<void> | void;
}

export interface ShutdownOptions {
  logger: Logger;
  /** Give up waiting for closers after this long (Kubernetes' default grace period is 30 s). */
  timeoutMs?: number;
  signals?: NodeJS.Signals[];
  /** Exit the process when done; tests pass false. */
  exit?: boolean;
}

export class Shutdown {
  private readonly closers: Array<{ name: string; closeable: Closeable }> = [];
  private running: Promise<void> | undefined;
  private readonly options: Required<Omit<ShutdownOptions, 'logger'>> & { logger: Logger };
  private readonly onSignal = (signal: NodeJS.Signals): void => {
    this.options.logger.info('shutting down', { signal });
    void this.run().then(() => {
      if (this.options.exit) process.exit(0);
    });
  };

  constructor(options: ShutdownOptions) {
    this.options = { timeoutMs: 25_000, signals: ['SIGTERM', 'SIGINT'], exit: true, ...options };
    for (const s of this.options.signals) process.once(s, this.onSignal);
  }

  /** Register something to close at shutdown; returns it for chaining. */
  add<T extends Closeable>(name: string, closeable: T): T {
    this.closers.push({ name, closeable });
    return closeable;
  }

  get started(): boolean {
    return this.running !== undefined;
  }

  run(): Promise<void> {
    this.running ??= this.closeAll();
    return this.running;
  }

  private async closeAll(): Promise<void> {
    for (const s of this.options.signals) process.off(s, this.onSignal);
    const { logger, timeoutMs } = this.options;
    const deadline = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), timeoutMs).unref());
    for (const { name, closeable } of [...this.closers].reverse()) {
      try {
        const outcome = await Promise.race([
          Promise.resolve(closeable.close()).then(() => 'closed' as const),
          deadline,
        ]);
        if (outcome === 'timeout') {
          logger.warn('shutdown deadline passed; not waiting for the rest', { closing: name, timeoutMs });
          return;
        }
      } catch (err) {
        logger.error('close failed', { closing: name, err });
      }
    }
    logger.info('shutdown complete');
  }
}

/** One named step of a close: its own failure is logged and never skips the steps after it. */
export type CloseStep = readonly [name: string, close: () => unknown];

/**
 * Runs every step in order, each isolated: a step that throws (or rejects) is
 * logged under `what` and the next one still runs. Each step's time is logged
 * (debug), so a shutdown that took long says which step held it.
 */
export async function closeInOrder(what: string, steps: ReadonlyArray<CloseStep>, logger: Logger): Promise<void> {
  for (const step of steps) await runStep(what, step, logger);
}

/**
 * Runs every step at once, each isolated as in closeInOrder, and resolves once all have settled (never rejects): for
 * steps that do not depend on each other, so a close takes the longest of them rather than their sum.
 */
export async function closeTogether(what: string, steps: ReadonlyArray<CloseStep>, logger: Logger): Promise<void> {
  // allSettled: a logger that throws must not end the wait before every step has settled.
  await Promise.allSettled(steps.map((step) => runStep(what, step, logger)));
}

async function runStep(what: string, [name, step]: CloseStep, logger: Logger): Promise<void> {
  const started = performance.now();
  try {
    await step();
  } catch (err) {
    logger.warn(`closing ${what}: a step failed`, { step: name, err });
  }
  logger.debug(`closing ${what}: step done`, { step: name, ms: Math.round(performance.now() - started) });
}
