// The images `make images` builds, run as a container runtime would run them:
// the archive's layers unpacked into a root filesystem, the entrypoint started
// in a chroot as the image's user with only the image's environment. Nothing
// of the host is visible to the process but the kernel and loopback.
import { existsSync, readFileSync } from 'node:fs';
import { readdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, findOnPath, freePorts, ManagedChild, runCommand, type RunResult } from '@warmpool/harness';
import { unpackImage, type UnpackedImage } from './oci-archive.js';

/** A command run to its end behind the harness's watchdog; a non-zero exit fails with its stderr. */
async function run(command: string, args: string[], timeoutMs = 60_000): Promise<RunResult> {
  const result = await runCommand({ command, args, timeoutMs });
  if (result.code !== 0)
    throw new Error(`${command} ${args.join(' ')} exited ${result.code ?? result.signal}:\n${result.stderr}`);
  return result;
}
const REPO = fileURLToPath(new URL('../..', import.meta.url));
const BUILD = join(REPO, 'images/build.sh');
const APPS = ['control-plane', 'node-agent', 'fake-sandboxd', 'router'] as const;
type App = (typeof APPS)[number];
const archiveOf = (app: App) => join(REPO, '.local/images', `${app}.oci.tar`);

function missingPrerequisite(): string | undefined {
  if (process.getuid?.() !== 0) return 'building and chroot-running images needs root';
  for (const tool of ['buildah', 'mmdebstrap'])
    if (findOnPath(tool) === undefined) return `${tool} is not installed (\`make images\` installs it from Debian)`;
  return undefined;
}
const skipReason = missingPrerequisite();
if (skipReason) console.warn(`images test skipped: ${skipReason}`);

/** The command line that runs `image`'s entrypoint as its runtime would: its user, its environment, its root. */
function entrypoint(image: UnpackedImage, args: string[]): { command: string; args: string[] } {
  return {
    command: '/usr/bin/env',
    args: [
      '-i',
      ...image.config.Env,
      '/usr/sbin/chroot',
      `--userspec=${image.config.User}`,
      image.rootfs,
      ...image.config.Entrypoint,
      ...args,
    ],
  };
}

async function filesUnder(dir: string): Promise<string[]> {
  return (await readdir(dir, { recursive: true })).map((p) => String(p));
}

describe.skipIf(skipReason !== undefined)('the OCI images, run in a chroot', () => {
  const images = new Map<App, UnpackedImage>();
  const children: ManagedChild[] = [];

  beforeAll(async () => {
    // Always through the build, so the images under test hold the code just built; cached, it rebuilds only what
    // changed.
    await run(BUILD, [], 600_000);
    for (const app of APPS) images.set(app, await unpackImage(archiveOf(app)));
  }, 600_000);

  afterAll(async () => {
    await Promise.allSettled(children.map((c) => c.stop()));
    await Promise.allSettled([...images.values()].map((i) => i.remove()));
  });

  const image = (app: App): UnpackedImage => images.get(app) as UnpackedImage;

  it.each(APPS)('%s: an exec-form entrypoint, a non-root user, one gzip layer, named and labelled', (app) => {
    const { config, name, layerMediaTypes } = image(app);
    expect(config.Entrypoint).toEqual(['/usr/local/bin/node', `/app/apps/${app}/dist/main.js`]);
    expect(config.User).toBe('65532:65532');
    expect(config.Env).toContain('NODE_ENV=production');
    expect(layerMediaTypes).toEqual(['application/vnd.oci.image.layer.v1.tar+gzip']);
    expect(name).toMatch(new RegExp(`/${app}:[^:]+$`));
    expect(config.Labels['org.opencontainers.image.title']).toBe(`warmpool-${app}`);
    expect(config.Labels['org.opencontainers.image.version']).toMatch(/^\d+\.\d+\.\d+/);
    expect(config.Labels['org.opencontainers.image.licenses']).toBe('Apache-2.0');
  });

  it.each(APPS)('%s: --help and --version answer from inside the image', async (app) => {
    const help = entrypoint(image(app), ['--help']);
    expect((await run(help.command, help.args)).stdout).toContain(`Usage: ${app}`);
    const version = entrypoint(image(app), ['--version']);
    expect((await run(version.command, version.args)).stdout).toMatch(
      new RegExp(`^${app} \\d+\\.\\d+\\.\\d+ \\(node v24\\.`),
    );
  });

  it.each(APPS)(
    '%s: holds only the allow-listed files: no sources, tests, dev dependencies, shell or package manager',
    async (app) => {
      const { rootfs } = image(app);
      const appFiles = await filesUnder(join(rootfs, 'app'));
      expect(appFiles.filter((f) => /(^|\/)(src|test)\//.test(f) && f.startsWith('apps/'))).toEqual([]);
      expect(
        appFiles
          .filter((f) => f.startsWith('apps/') || f.startsWith('libs/'))
          .filter((f) => /\.(ts|map|tsbuildinfo)$/.test(f)),
      ).toEqual([]);
      for (const dev of ['vitest', 'typescript', 'eslint', 'fast-check', '@types'])
        expect(existsSync(join(rootfs, 'app/node_modules', dev)), dev).toBe(false);
      for (const other of APPS.filter((a) => a !== app))
        expect(existsSync(join(rootfs, 'app/apps', other)), other).toBe(false);
      for (const absent of ['bin/sh', 'usr/bin/apt-get', 'usr/bin/dpkg', 'root/.npmrc', 'app/.git', 'app/.local'])
        expect(existsSync(join(rootfs, absent)), absent).toBe(false);
      expect((await stat(join(rootfs, 'tmp'))).mode & 0o7777).toBe(0o1777);
    },
  );

  it('fake-sandboxd and node-agent, each started from its image, serve /healthz on loopback and answer through each other', async () => {
    const [sandboxdPort, agentPort] = await freePorts(2);
    const token = 'image-test-token-0123456789abcdef';
    // The token, as the chart mounts it: a file inside each container's filesystem.
    for (const app of ['fake-sandboxd', 'node-agent'] as const)
      await writeFile(join(image(app).rootfs, 'tmp/token'), token, { mode: 0o644 });
    const start = (app: App, args: string[]) => {
      const { command, args: argv } = entrypoint(image(app), args);
      const child = new ManagedChild({
        name: app,
        command,
        args: argv,
        logFile: join(image(app).rootfs, '..', `${app}.log`),
      });
      children.push(child);
      return child;
    };
    const sandboxd = start('fake-sandboxd', [`--listen=127.0.0.1:${sandboxdPort}`, '--api-token-file=/tmp/token']);
    const agent = start('node-agent', [
      `--listen=127.0.0.1:${agentPort}`,
      `--sandboxd-url=http://127.0.0.1:${sandboxdPort}`,
      '--token-file=/tmp/token',
      '--no-inventory',
    ]);
    const healthy = (port: number) => async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).ok;
    for (const [child, port] of [
      [sandboxd, sandboxdPort],
      [agent, agentPort],
    ] as const) {
      await eventually(healthy(port as number), {
        timeoutMs: 60_000,
        what: () => `${child.name} never served /healthz:\n${child.logTail()}`,
        abort: () => (child.running ? undefined : `${child.name} exited`),
      });
    }
    // The agent reaches the fake sandboxd with the token each read from its own filesystem.
    await eventually(async () => (await fetch(`http://127.0.0.1:${agentPort}/readyz`)).ok, {
      timeoutMs: 60_000,
      what: () => agent.logTail(),
    });
    const info = await fetch(`http://127.0.0.1:${agentPort}/v1/info`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(info.status, agent.logTail()).toBe(200);
    // Started as the image's user, not root.
    expect(readFileSync(`/proc/${agent.pid}/status`, 'utf8')).toMatch(/^Uid:\s+65532\s/m);
  }, 180_000);
});
