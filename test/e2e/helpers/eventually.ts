// Waiting for a cluster to converge: the assertion is retried until it
// passes, and its last failure is what the test reports.
import { setTimeout as sleep } from 'node:timers/promises';

export async function eventually<T>(assertion: () => Promise<T>, options: { timeoutMs?: number; intervalMs?: number } = {}): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  for (;;) {
    try {
      return await assertion();
    } catch (error) {
      if (Date.now() >= deadline) throw error;
    }
    await sleep(options.intervalMs ?? 250);
  }
}
