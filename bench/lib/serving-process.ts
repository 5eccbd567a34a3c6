// A benchmarked server as its own process (this Node running an app's
// dist/main.js or an inline script), ready once it logs that it serves.
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

export interface Server {
  /** What `address` made of the serving record: `http://host:port`, `host:port`, or `unix:/path` for a server on a unix socket. */
  base: string;
  pid: number;
  /** `signal` (default SIGTERM), then the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Spawns `node argv…` and resolves once it logs `msg` on stderr (its address taken from the record by `address`). */
export async function startProcess(
  argv: string[],
  env: NodeJS.ProcessEnv,
  msg: string,
  address: (record: Record<string, string>) => string,
): Promise<Server> {
  const child: ChildProcess = spawn(process.execPath, argv, {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, ...env },
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const stderr = child.stderr;
  if (stderr === null) throw new Error('no stderr');
  const lines = createInterface({ input: stderr });
  for await (const line of lines) {
    let record: Record<string, string>;
    try {
      record = JSON.parse(line) as Record<string, string>;
    } catch {
      continue; // not a log line (a runtime warning, say)
    }
    if (record['msg'] === msg) {
      lines.close();
      stderr.resume();
      return {
        base: address(record),
        pid: child.pid ?? -1,
        stop: (signal = 'SIGTERM') => {
          child.kill(signal);
          return exited;
        },
      };
    }
  }
  throw new Error(`${argv[0]} exited before serving (code ${await exited})`);
}
