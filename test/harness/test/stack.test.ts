// `make up` as a user runs it: the stack-main process, with its real children.
// Needs the built dist of the harness and of the three apps (`make test` builds first).
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  findBinary,
  isAlive,
  ManagedChild,
  processGroupMembers,
  REPO_ROOT,
  runCommand,
  type StackDescription,
} from '../src/index.js';

const STACK_MAIN = join(REPO_ROOT, 'test/harness/dist/stack-main.js');

interface Run {
  /** stack-main itself, behind the watchdog like every child of a test. */
  child: ManagedChild;
  dir: string;
  output: () => string;
  exited: Promise<number | null>;
}

const runs: Run[] = [];

/** Each run gets its own loopback block and directory, so it can run next to `make up` and the e2e spec. */
function runStack(args: string[]): Run {
  const dir = mkdtempSync(join(tmpdir(), 'warmpool-stack-test-'));
  const child = new ManagedChild({
    name: 'stack-main',
    command: process.execPath,
    args: [
      STACK_MAIN,
      `--dir=${dir}`,
      '--loopback-prefix=127.0.3',
      '--control-plane-port=0',
      '--claims-port=0',
      '--router-port=0',
      '--interval=1s',
      ...args,
    ],
    cwd: REPO_ROOT,
    logFile: join(dir, 'stack-main.log'),
    orphanCleanupDir: dir,
  });
  const run = { child, dir, output: () => child.log(), exited: child.exited.then(({ code }) => code) };
  runs.push(run);
  return run;
}

/**
 * The stack's exit code, or, when it has not exited within `timeoutMs` (kept under the spec's own timeout), an error
 * carrying everything it printed: a spec that times out in vitest says nothing about where the stack stood.
 */
async function exitCodeWithin(run: Run, timeoutMs: number): Promise<number | null> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`the stack did not exit within ${timeoutMs} ms; it printed:\n${run.output()}`)),
      timeoutMs,
    );
  });
  try {
    return await Promise.race([run.exited, late]);
  } finally {
    clearTimeout(timer);
  }
}

async function waitForOutput(run: Run, text: string, timeoutMs: number): Promise<void> {
  await run.child.logged((line) => (line.includes(text) ? line : undefined), { timeoutMs, what: `"${text}"` });
}

function expectNothingLeft(run: Run): StackDescription {
  const description = JSON.parse(readFileSync(join(run.dir, 'stack.json'), 'utf8')) as StackDescription;
  expect(Object.keys(description.pids)).toEqual(
    expect.arrayContaining([
      'etcd',
      'kube-apiserver',
      'redis',
      'control-plane',
      'router',
      'fake-sandboxd-1',
      'node-agent-1',
      'fake-sandboxd-3',
      'node-agent-3',
    ]),
  );
  for (const [name, pid] of Object.entries(description.pids)) {
    expect(isAlive(pid), `${name} (pid ${pid}) is gone`).toBe(false);
    expect(processGroupMembers(pid), `nothing is left in ${name}'s process group`).toEqual([]);
  }
  expect(existsSync(description.clusterDataDir), 'the cluster temp dir is removed').toBe(false);
  return description;
}

afterEach(async () => {
  for (const run of runs.splice(0)) {
    await run.child.stop('SIGKILL');
    rmSync(run.dir, { recursive: true, force: true });
  }
});

describe('the local stack (make up)', () => {
  it(
    'lets the warmpool-demo ServiceAccount claim over HTTP with the printed curl line, and serves the SandboxClaim example',
    { timeout: 180_000 },
    async () => {
      const run = runStack(['--replicas=3']);
      await waitForOutput(run, 'Ctrl-C stops everything', 120_000);
      const kubectl = async (args: string[]): Promise<string> => {
        const result = await runCommand({
          command: findBinary('kubectl'),
          args,
          env: { ...process.env, KUBECONFIG: join(run.dir, 'kubeconfig') },
          timeoutMs: 90_000,
        });
        if (result.code !== 0) throw new Error(`kubectl ${args.join(' ')} exited ${result.code}:\n${result.stderr}`);
        return result.stdout;
      };

      const claimsUrl = readFileSync(join(run.dir, 'claims-url'), 'utf8').trim();
      expect(claimsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1\/namespaces\/default\/claims$/);
      expect(run.output()).toContain(claimsUrl);
      expect(run.output()).toContain('curl -X POST -H "Authorization: Bearer $(kubectl create token warmpool-demo)"');
      expect(
        (
          await kubectl([
            'auth',
            'can-i',
            'create',
            'sandboxclaims.extensions.agents.x-k8s.io',
            '--as=system:serviceaccount:default:warmpool-demo',
            '-n',
            'default',
          ])
        ).trim(),
      ).toBe('yes');

      const token = (await kubectl(['create', 'token', 'warmpool-demo'])).trim();
      const res = await fetch(claimsUrl, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ warmPool: 'python', ttlSeconds: 60 }),
      });
      const claim = (await res.json()) as { id?: string };
      expect(res.status, JSON.stringify(claim)).toBe(200);
      expect(claim.id).toMatch(/^sb_/);
      // The README's line for the same claim with the TypeScript client, as written there (.local is run.dir here).
      const readmeLine = `WARMPOOL_TOKEN=$TOKEN node clients/typescript/dist/cli.js claim --url $(sed 's|/v1/.*||' ${join(run.dir, 'claims-url')}) --pool python --ttl 60`;
      const byClient = await runCommand({
        command: 'bash',
        args: ['-c', readmeLine],
        cwd: REPO_ROOT,
        env: { ...process.env, TOKEN: token, KUBECONFIG: join(run.dir, 'kubeconfig') },
        timeoutMs: 60_000,
      });
      expect(byClient.code, byClient.stderr).toBe(0);
      expect((JSON.parse(byClient.stdout) as { id?: string }).id).toMatch(/^sb_/);
      expect(readFileSync(join(REPO_ROOT, 'README.md'), 'utf8').replace(/\s+/g, ' ')).toContain(
        readmeLine.replace(join(run.dir, 'claims-url'), '.local/claims-url'),
      );

      await kubectl(['apply', '-f', join(run.dir, 'sandboxclaim.yaml')]);
      await kubectl(['wait', '--for=condition=Ready', 'sandboxclaim/demo', '-n', 'default', '--timeout=60s']);
      expect(await kubectl(['get', 'secret', 'demo', '-n', 'default', '-o', 'jsonpath={.data.id}'])).not.toBe('');

      run.child.kill('SIGINT');
      expect(await run.exited, run.output()).toBe(0);
      expectNothingLeft(run);
    },
  );

  it(
    'fills the sample pool to READY = DESIRED and, with --exit-when-ready, stops everything and exits 0',
    { timeout: 180_000 },
    async () => {
      const run = runStack(['--exit-when-ready', '--replicas=9', '--ready-timeout=120']);
      expect(await exitCodeWithin(run, 170_000), run.output()).toBe(0);

      const output = run.output();
      expect(output).toContain('kubectl get swp,nodeinventories');
      expect(output).toContain('export PATH=$HOME/.cache/warmpool/bin:$PATH');
      expect(output).toMatch(/curl -H "Authorization: Bearer \$\(cat .*token\)" http:\/\/127\.0\.3\.1:\d+\/v1\/info/);
      expect(output).toMatch(/swp default\/python \d+\/9/);
      expect(output).toContain('swp default/python 9/9');
      expect(output).toContain('every pool is READY = DESIRED');
      expect(output).toMatch(/claim API +http:\/\/127\.0\.0\.1:\d+/);
      expect(output).toMatch(/Sandbox API +https:\/\/127\.0\.0\.1:\d+/);
      expect(output).toContain('stopped');

      const description = expectNothingLeft(run);
      expect(description.nodes.map((n) => n.name)).toEqual(['warmpool-node-1', 'warmpool-node-2', 'warmpool-node-3']);
      expect(description.nodes.map((n) => n.host)).toEqual(['127.0.3.1', '127.0.3.2', '127.0.3.3']);
      for (const name of ['control-plane', 'node-agent-1', 'fake-sandboxd-2']) {
        expect(
          readFileSync(join(run.dir, 'logs', `${name}.log`), 'utf8'),
          `${name} logged to logs/${name}.log`,
        ).not.toBe('');
      }
      expect(readFileSync(join(run.dir, 'kubeconfig'), 'utf8')).toContain(description.server);
    },
  );

  it('stops everything in reverse order on Ctrl-C (SIGINT) and exits 0', { timeout: 180_000 }, async () => {
    const run = runStack(['--replicas=3']);
    await waitForOutput(run, 'Ctrl-C stops everything', 120_000);
    run.child.kill('SIGINT');
    expect(await run.exited, run.output()).toBe(0);

    const output = run.output();
    const stops = [
      'control-plane',
      'node-agent-3',
      'fake-sandboxd-3',
      'node-agent-1',
      'fake-sandboxd-1',
      'redis-server',
      'kube-apiserver and etcd',
    ].map((name) => output.indexOf(`stopping ${name}`));
    expect(
      stops.every((at) => at >= 0),
      output,
    ).toBe(true);
    expect([...stops].sort((a, b) => a - b)).toEqual(stops);
    expectNothingLeft(run);
  });
});
