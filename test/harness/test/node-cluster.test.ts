// The node cluster's promise to the machine: whatever it changed is put back,
// also when the process that started it is killed and can clean nothing up.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { eventually } from '@warmpool/harness';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const IMAGES = `${ROOT}.local/images`;
const STATE_DIR = '/run/warmpool-nodes';
const SYSCTLS = ['kernel/panic', 'kernel/panic_on_oops', 'vm/overcommit_memory'];

const sysctls = (): string[] => SYSCTLS.map((name) => readFileSync(`/proc/sys/${name}`, 'utf8').trim());
const otherClusters = (): boolean =>
  existsSync(STATE_DIR) && readdirSync(STATE_DIR).some((f) => f.endsWith('.json') && f !== 'machine.json');

/** Starts a one-node cluster in a child process that prints what it made, then waits to be killed. */
const OWNER = `
  import { startNodeCluster } from '${ROOT}test/harness/dist/index.js';
  const images = ${JSON.stringify(['control-plane', 'node-agent', 'fake-sandboxd', 'redis'].map((a) => `${IMAGES}/${a}.oci.tar`))};
  const cluster = await startNodeCluster({ nodes: 1, images, pauseImage: '${IMAGES}/pause.oci.tar' });
  console.log(JSON.stringify({ id: cluster.id, netns: cluster.netns, dataDir: cluster.dataDir }));
  setInterval(() => undefined, 1 << 30);
`;

describe('a cluster with real nodes', () => {
  it(
    'puts the machine back when its owner is killed: processes, namespace, mounts, cgroups, files, sysctls',
    { timeout: 300_000 },
    async () => {
      // The same images as the chart's spec, so both start from one image seed.
      execFileSync(`${ROOT}images/build.sh`, ['control-plane', 'node-agent', 'fake-sandboxd', 'pause', 'redis'], {
        stdio: ['ignore', 'ignore', 'inherit'],
      });
      const quiet = !otherClusters();
      const before = sysctls();
      const owner = spawn(process.execPath, ['--input-type=module', '-e', OWNER], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      const line = await new Promise<string>((resolve, reject) => {
        createInterface({ input: owner.stdout }).once('line', resolve);
        owner.once('exit', (code) => reject(new Error(`the owner exited (${code}) before the cluster was up`)));
      });
      const made = JSON.parse(line) as { id: string; netns: string; dataDir: string };
      expect(execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' })).toContain(made.netns);
      expect(existsSync(`${STATE_DIR}/${made.id}.json`)).toBe(true);

      owner.kill('SIGKILL');
      await eventually(
        () =>
          !existsSync(`${STATE_DIR}/${made.id}.json`) &&
          !existsSync(made.dataDir) &&
          !execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' }).includes(made.netns),
        { timeoutMs: 60_000, intervalMs: 500, what: `cluster ${made.id} cleaned up by its guardian` },
      );
      expect(readFileSync('/proc/self/mountinfo', 'utf8')).not.toContain(made.dataDir);
      expect(readdirSync('/sys/fs/cgroup/memory').filter((name) => name.includes(made.id))).toEqual([]);
      const left = execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' })
        .split('\n')
        .filter((args) => args.includes(made.dataDir));
      expect(left).toEqual([]);
      // The machine-wide values come back with the last cluster (another spec's may still run).
      if (quiet && !otherClusters()) {
        expect(sysctls()).toEqual(before);
        expect(execFileSync('ip', ['route', 'show', 'type', 'unreachable'], { encoding: 'utf8' })).not.toContain(
          '10.244.0.0/16',
        );
      }
    },
  );
});
