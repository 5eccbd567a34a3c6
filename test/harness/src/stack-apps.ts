// How the local stack runs its apps: each one a node process from its dist/
// (exactly as it would run in a pod), logging to `<logs>/<name>.log`, and
// ready once it answers 200 on a URL of its own.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ManagedChild } from './children.js';
import { get } from './http.js';
import { eventually } from './wait.js';

/** The repository root, found from this file in both src/ and dist/. */
export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));

export const APP_ENTRYPOINTS = {
  fakeSandboxd: join(REPO_ROOT, 'apps/fake-sandboxd/dist/main.js'),
  nodeAgent: join(REPO_ROOT, 'apps/node-agent/dist/main.js'),
  controlPlane: join(REPO_ROOT, 'apps/control-plane/dist/main.js'),
  router: join(REPO_ROOT, 'apps/router/dist/main.js'),
} as const;

/** Starts `entrypoint` with this node binary; its log starts empty on every start. */
export function startApp(logsDir: string, name: string, entrypoint: string, args: string[]): ManagedChild {
  const logFile = join(logsDir, `${name}.log`);
  writeFileSync(logFile, '');
  return new ManagedChild({
    name,
    command: process.execPath,
    args: [entrypoint, ...args],
    logFile,
    env: { ...process.env },
  });
}

/** Until `url` answers 200; fails at once when the app exits, with its last log lines on a timeout. */
export async function waitForHttp(child: ManagedChild, url: string, timeoutMs = 30_000): Promise<void> {
  let last = 'no answer yet';
  await eventually(
    async () => {
      const res = await get(url).catch((error: Error) => ({ status: 0, body: error.message }));
      last = `${res.status} ${res.body.slice(0, 500)}`;
      return res.status === 200;
    },
    {
      timeoutMs,
      intervalMs: 100,
      what: () => `${child.name} at ${url} not ready (last answer: ${last}); last log lines:\n${child.logTail()}`,
      abort: () => (child.running ? undefined : `${child.name} exited (${JSON.stringify(child.exitStatus)})`),
    },
  );
}
