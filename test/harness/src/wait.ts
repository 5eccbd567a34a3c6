// Polling until something becomes true, bounded in time.

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export interface WaitOptions {
  timeoutMs: number;
  intervalMs?: number;
  /** Called on timeout; its text becomes the error message. */
  describe: () => string;
  /** Stop early: a reason to give up (e.g. the process died), or undefined to keep waiting. */
  abort?: () => string | undefined;
}

export async function waitUntil(check: () => Promise<boolean>, options: WaitOptions): Promise<void> {
  const deadline = Date.now() + options.timeoutMs;
  const interval = options.intervalMs ?? 100;
  for (;;) {
    if (await check().catch(() => false)) return;
    const aborted = options.abort?.();
    if (aborted !== undefined) throw new Error(`${aborted}\n${options.describe()}`);
    if (Date.now() >= deadline) throw new Error(`timed out after ${options.timeoutMs} ms: ${options.describe()}`);
    await sleep(interval);
  }
}
