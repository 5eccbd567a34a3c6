// A benchmarked server as its own process (this Node running an app's
// dist/main.js or an inline script) behind the harness's watchdog, so it dies
// with the benchmark even on SIGKILL; ready once it logs that it serves.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManagedChild } from '@warmpool/harness';

export interface Server {
  /**
   * What `address` made of the serving record: `http://host:port`, `host:port`, or `unix:/path` for a server on a unix
   * socket.
   */
  base: string;
  pid: number;
  /** Everything the process printed (stdout and stderr) so far; removed when it stops. */
  logFile: string;
  /** `signal` (default SIGTERM; SIGKILL after 10 s), then the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * The JSON log record `line` holds if its `msg` is `msg` (a line that is no JSON, a runtime warning say, throws: no
 * match).
 */
function recordOf(line: string, msg: string): Record<string, string> | undefined {
  const record = JSON.parse(line) as Record<string, string>;
  return record['msg'] === msg ? record : undefined;
}

/** Spawns `node argv…` and resolves once it logs `msg` (its address taken from the record by `address`). */
export async function startProcess(
  argv: string[],
  env: NodeJS.ProcessEnv,
  msg: string,
  address: (record: Record<string, string>) => string,
): Promise<Server> {
  const dir = mkdtempSync(join(tmpdir(), 'warmpool-bench-server-'));
  const logFile = join(dir, 'server.log');
  const child = new ManagedChild({
    name: `node ${argv[0] ?? ''}`,
    command: process.execPath,
    args: argv,
    env: { ...process.env, ...env },
    logFile,
    orphanCleanupDir: dir,
  });
  const stop = async (signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> => {
    const { code } = await child.stop(signal);
    rmSync(dir, { recursive: true, force: true });
    return code;
  };
  try {
    const record = await child.logged((line) => recordOf(line, msg), { timeoutMs: 60_000, what: `"${msg}"` });
    return { base: address(record), pid: child.pid, logFile, stop };
  } catch (error) {
    await stop('SIGKILL');
    throw error;
  }
}
