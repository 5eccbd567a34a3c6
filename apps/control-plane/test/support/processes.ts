// Child processes (node agents, fake sandboxds, control planes) that never
// outlive the test file: every one is tracked, and killed at exit even if the
// file's afterAll never runs.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';

const live = new Set<Proc>();
let hooked = false;

function hookExit(): void {
  if (hooked) return;
  hooked = true;
  process.on('exit', () => {
    for (const proc of live) proc.killNow('SIGKILL');
  });
}

export interface ProcOptions {
  name: string;
  /** A JS file run by this very Node. */
  script: string;
  args: string[];
  env?: NodeJS.ProcessEnv;
  /** stdout and stderr are appended here. */
  logFile: string;
}

export class Proc {
  readonly name: string;
  readonly logFile: string;
  readonly #child: ChildProcess;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  #running = true;

  constructor(options: ProcOptions) {
    hookExit();
    this.name = options.name;
    this.logFile = options.logFile;
    const log = openSync(options.logFile, 'a');
    try {
      this.#child = spawn(process.execPath, [options.script, ...options.args], { stdio: ['ignore', log, log], env: { ...process.env, ...options.env } });
    } finally {
      closeSync(log);
    }
    live.add(this);
    this.exited = new Promise((resolve) => {
      this.#child.once('exit', (code, signal) => {
        this.#running = false;
        live.delete(this);
        resolve({ code, signal });
      });
    });
  }

  get pid(): number | undefined {
    return this.#child.pid;
  }

  get running(): boolean {
    return this.#running;
  }

  killNow(signal: NodeJS.Signals): void {
    if (this.#running) this.#child.kill(signal);
  }

  /** Sends `signal` (SIGTERM by default; SIGKILL after `graceMs`) and waits for the exit. */
  async stop(signal: NodeJS.Signals = 'SIGTERM', graceMs = 10_000): Promise<void> {
    if (!this.#running) return;
    this.#child.kill(signal);
    const timer = setTimeout(() => this.killNow('SIGKILL'), graceMs);
    await this.exited;
    clearTimeout(timer);
  }

  log(): string {
    try {
      return readFileSync(this.logFile, 'utf8');
    } catch {
      return '';
    }
  }

  /** Parsed JSON log lines (others are skipped). */
  logLines(): Array<Record<string, unknown>> {
    const lines: Array<Record<string, unknown>> = [];
    for (const line of this.log().split('\n')) {
      if (!line.startsWith('{')) continue;
      try {
        lines.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        // a partial last line
      }
    }
    return lines;
  }
}

/** Stops every process still running, SIGKILL after a short grace. */
export async function stopAll(): Promise<void> {
  await Promise.all([...live].map((proc) => proc.stop('SIGTERM', 5_000)));
}
