// SIGSTOP a process and wait until the kernel has stopped every thread of it.
// kill() returns once the signal is queued: on a loaded machine a thread
// already on a CPU may still read a request and answer it for a while after,
// and a spec that counts on "frozen" then sees an answer.
import { readdirSync, readFileSync } from 'node:fs';
import { sleep } from './wait.js';

/** The state letter of each thread of `pid` (/proc/<pid>/task/<tid>/stat); empty when the process is gone. */
function threadStates(pid: number): string[] {
  try {
    return readdirSync(`/proc/${pid}/task`).map(
      (tid) => readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8').split(') ')[1]?.[0] ?? '',
    );
  } catch {
    return [];
  }
}

/** Stops `pid` (SIGSTOP) and resolves once every thread of it is stopped; rejects after `timeoutMs`. */
export async function freezeProcess(pid: number, timeoutMs = 5_000): Promise<void> {
  process.kill(pid, 'SIGSTOP');
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const states = threadStates(pid);
    if (states.length > 0 && states.every((state) => state === 'T' || state === 't')) return;
    if (performance.now() > deadline)
      throw new Error(`process ${pid} not stopped after ${timeoutMs} ms: ${states.join('')}`);
    await sleep(1);
  }
}

/** Lets a process stopped by freezeProcess run again. */
export function thawProcess(pid: number): void {
  process.kill(pid, 'SIGCONT');
}

/**
 * A process a spec stops and lets run again, possibly many times: thaw() continues it only when this froze it, so a
 * spec's teardown may always call thaw() (Redis or the apiserver must answer the next case and the teardown).
 */
export class Freezer {
  readonly #pid: () => number;
  #frozen = false;

  /** `pid` is asked at each freeze: the process may be started after the Freezer is made. */
  constructor(pid: () => number) {
    this.#pid = pid;
  }

  async freeze(): Promise<void> {
    this.#frozen = true;
    await freezeProcess(this.#pid());
  }

  thaw(): void {
    if (this.#frozen) thawProcess(this.#pid());
    this.#frozen = false;
  }
}
