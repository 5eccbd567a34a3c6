// Each Node component runs `node <nodeFlags> <the image's script>`: the flags
// on Node's command line, where every V8 flag is accepted (NODE_OPTIONS takes
// only an allowlist, and `--min-semi-space-size` there makes Node exit at
// once). Two ways that could leave a pod crash-looping are checked here: a
// default Node refuses, and a command that no longer runs the script the
// image's entrypoint runs.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadAllYaml } from '@kubernetes/client-node';
import { load as loadYamlPlain } from 'js-yaml';
import { runHelm } from '@warmpool/harness';
import { describe, expect, it } from 'vitest';
import { CHART, setArgs } from './support.js';

const COMPONENTS = { controlPlane: 'control-plane', nodeAgent: 'node-agent', router: 'router' } as const;
type Component = keyof typeof COMPONENTS;

const values = loadYamlPlain(readFileSync(join(CHART, 'values.yaml'), 'utf8')) as Record<
  Component,
  { nodeFlags: string[] }
>;
const defaults = Object.keys(COMPONENTS).map((component) => {
  const flags = values[component as Component].nodeFlags;
  return { component, flags };
});

/** The entrypoint images/build.sh gives each app's image, with `$app` left in. */
function imageEntrypoint(): string[] {
  const build = readFileSync(join(CHART, '../../images/build.sh'), 'utf8');
  const match = /--entrypoint "(\[\\"\/usr\/local\/bin\/node\\", \\"[^"]*\$app[^"]*\\"\])"/.exec(build);
  if (match?.[1] === undefined) throw new Error("images/build.sh: the apps' --entrypoint not found");
  return JSON.parse(match[1].replaceAll('\\"', '"')) as string[];
}

interface Workload {
  kind: string;
  spec?: {
    template: { spec: { containers: Array<{ name: string; command?: string[]; env?: Array<{ name: string }> }> } };
  };
}

describe("the chart's Node flags", () => {
  it.each(defaults)('$component: Node starts with its default flags on the command line', ({ flags }) => {
    expect(flags.length).toBeGreaterThan(0);
    const run = spawnSync(process.execPath, [...flags, '-e', ''], { encoding: 'utf8' });
    expect({ status: run.status, stderr: run.stderr }).toEqual({ status: 0, stderr: '' });
  });

  it('are on the command line because NODE_OPTIONS refuses some of them (the reason still holds)', () => {
    const run = spawnSync(process.execPath, ['-e', ''], {
      env: { ...process.env, NODE_OPTIONS: '--min-semi-space-size=32' },
      encoding: 'utf8',
    });
    expect(run.status).not.toBe(0);
    expect(values.controlPlane.nodeFlags).toContain('--min-semi-space-size=32');
  });

  it("run the script the image's entrypoint runs, with the flags between node and it, and no NODE_OPTIONS", async () => {
    const [node, script] = imageEntrypoint();
    const rendered = await runHelm([
      'template',
      'warmpool',
      CHART,
      ...setArgs(['fakeSandboxd.enabled=true', 'fleetToken.value=t', 'router.enabled=true']),
    ]);
    const workloads = (loadAllYaml(rendered) as Array<Workload | null>).filter(
      (o): o is Workload => o?.kind === 'Deployment' || o?.kind === 'DaemonSet',
    );
    const containers = workloads.flatMap((w) => w.spec?.template.spec.containers ?? []);
    for (const [component, app] of Object.entries(COMPONENTS)) {
      const container = containers.find((c) => c.name === app);
      expect(container, app).toBeDefined();
      expect(container?.command).toEqual([
        node,
        ...values[component as Component].nodeFlags,
        script?.replace('$app', app),
      ]);
      expect(container?.env?.map((e) => e.name) ?? []).not.toContain('NODE_OPTIONS');
    }
  });

  it("take a flag in V8's underscore spelling, and refuse what is not one flag (Node would exit at once)", async () => {
    const render = (flag: string): Promise<string> =>
      runHelm([
        'template',
        'warmpool',
        CHART,
        ...setArgs(['fakeSandboxd.enabled=true', 'fleetToken.value=t', `nodeAgent.nodeFlags[0]=${flag}`]),
      ]);
    // Node takes both spellings on its command line.
    const run = spawnSync(process.execPath, ['--max_old_space_size=100', '-e', ''], { encoding: 'utf8' });
    expect({ status: run.status, stderr: run.stderr }).toEqual({ status: 0, stderr: '' });
    expect(await render('--max_old_space_size=100')).toContain(
      '["/usr/local/bin/node","--max_old_space_size=100","/app/apps/node-agent/dist/main.js"]',
    );
    // A former nodeOptions string put whole into one element is one argument to Node, which refuses it.
    const joined = '--max-old-space-size=256 --max-semi-space-size=32';
    expect(spawnSync(process.execPath, [joined, '-e', ''], { encoding: 'utf8' }).status).not.toBe(0);
    for (const flag of [joined, 'max-old-space-size=100', '-e'])
      await expect(render(flag)).rejects.toThrow(/nodeFlags/);
  });
});
