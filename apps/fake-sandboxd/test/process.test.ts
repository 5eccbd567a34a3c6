// fake-sandboxd as a process: the built dist/main.js (run `npx tsc -b apps/fake-sandboxd` first),
// behind the harness's watchdog, its stdout kept apart from its log (stderr).
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { NodeScript, stopScripts, type ChildExit } from '@warmpool/harness';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';

const MAIN = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const dirs: string[] = [];

interface Exit extends ChildExit {
  stdout: string;
  stderr: string;
}

function run(args: string[], env: NodeJS.ProcessEnv = {}): { child: NodeScript; exited: Promise<Exit> } {
  const dir = mkdtempSync(join(tmpdir(), 'sandboxd-proc-'));
  dirs.push(dir);
  const child = new NodeScript({
    name: 'fake-sandboxd',
    script: MAIN,
    args,
    env,
    logFile: join(dir, 'stderr'),
    stdoutFile: join(dir, 'stdout'),
  });
  const exited = child.exited.then((exit) => ({ ...exit, stdout: child.stdout(), stderr: child.log() }));
  return { child, exited };
}

beforeAll(() => {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run "npx tsc -b apps/fake-sandboxd" first`);
});

afterEach(async () => {
  await stopScripts();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** The address the process logs once it serves. */
function servingAddress(child: NodeScript): Promise<string> {
  return child.logged(
    (line) => {
      const record = JSON.parse(line) as { msg: string; address?: string };
      return record.msg === 'serving' ? (record.address ?? '') : undefined;
    },
    { what: 'fake-sandboxd to log "serving"' },
  );
}

describe('fake-sandboxd process', () => {
  it('prints every flag with its env variable on --help and exits 0', async () => {
    const { exited } = run(['--help']);
    const { code, stdout } = await exited;
    expect(code).toBe(0);
    for (const flag of [
      '--listen',
      '--api-token',
      '--api-token-file',
      '--token-grace',
      '--max-claims',
      '--room',
      '--refill-rate',
      '--refill-concurrency',
      '--warm-claim-ms',
      '--cold-boot-ms',
      '--default-ttl',
      '--boot-failure-rate',
      '--claim-failure-rate',
      '--advertise',
      '--clone-ms',
      '--trim-ms-per-vm',
      '--unadvertised',
      '--client-advertise',
      '--egress-attachment',
      '--redirect-peers',
      '--tenants',
      '--omit-claimed-at',
      '--older-daemon',
      '--log-level',
    ]) {
      expect(stdout).toContain(flag);
    }
    expect(stdout).toContain('(default ":7777")');
    expect(stdout).toContain('SANDBOXD_API_TOKEN');
    expect(stdout).toContain('SANDBOXD_API_TOKEN_FILE');
  });

  it('exits 2 with a message on a bad flag', async () => {
    const { code, stderr } = await run(['--room', 'lots']).exited;
    expect(code).toBe(2);
    expect(stderr).toMatch(/--room/);
  });

  it.each([
    [['--tenants', 'team-a'], /--tenants: "team-a" is not NAME=TOKEN/],
    [['--tenants', 'a=same,b=same'], /--tenants: two tenants share a token/],
    [['--redirect-peers', 'not-an-address'], /--redirect-peers/],
    [['--unadvertised', '--advertise', '10.0.0.5:7777'], /--unadvertised: not with --advertise/],
    [['--client-advertise', '10.0.0.5:7777'], /clientAdvertise must be an http or https origin/],
  ])('exits 2 on %j', async (args, why) => {
    const { code, stderr } = await run(args).exited;
    expect(code).toBe(2);
    expect(stderr).toMatch(why);
  });

  it("serves the real daemon's variants from their flags", async () => {
    const { child } = run(
      [
        '--listen=127.0.0.1:0',
        '--cold-boot-ms=5ms',
        '--unadvertised',
        '--older-daemon',
        '--omit-claimed-at',
        '--redirect-peers=10.0.0.6:7777',
        '--tenants=team-a=tok-a',
      ],
      { SANDBOXD_API_TOKEN: 'root' },
    );
    const base = `http://${await servingAddress(child)}`;
    const call = (method: string, path: string, token: string, body?: unknown) =>
      fetch(`${base}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
    expect(await (await call('POST', '/v1/claim', 'tok-a', { template: 'img' })).json()).toEqual({
      redirect: ['10.0.0.6:7777'],
    });
    const granted = (await (
      await call('POST', '/v1/claim', 'tok-a', { template: 'img', no_redirect: true })
    ).json()) as {
      id: string;
      token: string;
    };
    expect(granted).not.toHaveProperty('owner_addr');
    expect((await call('GET', '/v1/info', 'tok-a')).status).toBe(403);
    const rows = (await (await call('GET', '/v1/sandboxes?claim_ref=x', 'root')).json()) as {
      sandboxes: Array<Record<string, unknown>>;
    };
    expect(rows.sandboxes).toEqual([expect.objectContaining({ id: granted.id, tenant: 'team-a' })]);
    expect(rows.sandboxes[0]).not.toHaveProperty('claimed_at');
    expect((await call('POST', `/v1/sandboxes/${granted.id}/renew`, granted.token, {})).status).toBe(404);
  });

  it('serves the API with the token from SANDBOXD_API_TOKEN and exits 0 on SIGTERM', async () => {
    const { child, exited } = run(['--listen', '127.0.0.1:0', '--cold-boot-ms', '5ms'], {
      SANDBOXD_API_TOKEN: 'env-token',
    });
    const address = await servingAddress(child);
    expect(address).toMatch(/^127\.0\.0\.1:\d+$/);
    const base = `http://${address}`;
    expect(await (await fetch(`${base}/healthz`)).text()).toBe('ok');
    expect((await fetch(`${base}/v1/info`)).status).toBe(401);
    const info = await fetch(`${base}/v1/info`, { headers: { authorization: 'Bearer env-token' } });
    expect(info.status).toBe(200);
    expect(await info.json()).toEqual({ pools: [], claimed: 0, hibernated: 0, archived: 0 });

    child.kill('SIGTERM');
    const exit = await exited;
    expect(exit.code).toBe(0);
    expect(exit.stderr).toContain('shutdown complete');
  });

  it('serves on a unix socket with --listen unix:/path, and removes the socket on SIGTERM', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sandboxd-proc-'));
    const socketPath = join(dir, 'sandboxd.sock');
    try {
      const { child, exited } = run(['--listen', `unix:${socketPath}`, '--api-token', 'root']);
      const address = await servingAddress(child);
      expect(address).toBe(`unix:${socketPath}`);
      const status = await new Promise<number | undefined>((resolve, reject) => {
        request({ socketPath, path: '/v1/info', headers: { authorization: 'Bearer root' } }, (res) => {
          res.resume();
          resolve(res.statusCode);
        })
          .on('error', reject)
          .end();
      });
      expect(status).toBe(200);
      child.kill('SIGTERM');
      expect((await exited).code).toBe(0);
      expect(existsSync(socketPath)).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('exits 2 on a unix socket path that is not absolute', async () => {
    const { code, stderr } = await run(['--listen', 'unix:relative.sock']).exited;
    expect(code).toBe(2);
    expect(stderr).toMatch(/--listen: invalid socket/);
  });
});
