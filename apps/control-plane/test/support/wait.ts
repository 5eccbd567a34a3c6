/** Polls `check` until it returns something other than undefined/false; its last error is in the timeout message. */
export async function eventually<T>(check: () => Promise<T | undefined | false> | T | undefined | false, options: { timeoutMs?: number; what?: string; everyMs?: number } = {}): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 20_000;
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  let lastValue: unknown;
  for (;;) {
    try {
      const value = await check();
      lastValue = value;
      if (value !== undefined && value !== false) return value;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      const detail = lastError !== undefined ? `: ${(lastError as Error).message}` : lastValue !== undefined ? ` (last: ${JSON.stringify(lastValue)})` : '';
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${options.what ?? 'condition'}${detail}`);
    }
    await new Promise((resolve) => setTimeout(resolve, options.everyMs ?? 50));
  }
}

export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
