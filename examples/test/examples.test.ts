// Every example in examples/ works as its comments say, against the local
// stack (a real kube-apiserver with warmpool's CRDs, Redis, the control plane
// and node agents over fake-sandboxd): the manifests apply and are served, the
// claimer's RBAC is enough to claim, and the HTTP script claims, renews,
// reads and releases a sandbox. So the examples cannot rot.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SandboxClaim, SandboxEnv, SandboxWarmPool } from '@warmpool/api';
import { binDir, eventually, runCommand, runHelm, startStack, type LocalStack } from '@warmpool/harness';

const EXAMPLES = fileURLToPath(new URL('..', import.meta.url));
const CHART = fileURLToPath(new URL('../../charts/warmpool', import.meta.url));
const NAMESPACE = 'team-a';

describe('examples/', () => {
  let stack: LocalStack;
  let dir: string;

  async function kubectl(args: string[]): Promise<string> {
    const result = await stack.cluster.kubectl(args);
    if (result.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${result.stderr}`);
    return result.stdout;
  }
  async function getJson<T>(args: string[]): Promise<T> {
    return JSON.parse(await kubectl(['get', ...args, '-o', 'json'])) as T;
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'warmpool-examples-'));
    stack = await startStack({
      dir,
      nodes: 2,
      loopbackPrefix: '127.0.58',
      controlPlanePort: 0,
      claimsPort: 0,
      interval: '1s',
      sample: false,
    });
  }, 180_000);
  afterAll(async () => {
    await stack?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('every manifest applies to the real apiserver, in the order of its file name', async () => {
    const manifests = readdirSync(EXAMPLES)
      .filter((file) => file.endsWith('.yaml'))
      .sort();
    expect(manifests).toEqual([
      '00-namespace.yaml',
      '10-python-pool.yaml',
      '20-claimer-rbac.yaml',
      '30-sandboxclaim.yaml',
      '40-sandboxenv.yaml',
    ]);
    for (const file of manifests) await kubectl(['apply', '-f', join(EXAMPLES, file)]);
  });

  // The Env of 40-sandboxenv.yaml autoscales the pool (targetIdle 2, minReplicas 2) from its first run on, so its
  // replicas may move from the 4 it was applied with: filled means ready = replicas, at least the Env's minimum.
  it('the pool fills to its replicas on the nodes', async () => {
    await eventually(
      async () => {
        const pool = await getJson<SandboxWarmPool>(['sandboxwarmpool', 'python', '-n', NAMESPACE]);
        const ready = pool.status?.readyReplicas ?? 0;
        return ready >= 2 && ready === pool.spec?.replicas;
      },
      { timeoutMs: 60_000, what: 'SandboxWarmPool team-a/python ready' },
    );
  }, 90_000);

  it("the SandboxClaim turns Ready and its Secret holds the sandbox's token", async () => {
    await eventually(
      async () => {
        const claim = await getJson<SandboxClaim>(['sandboxclaim', 'notebook', '-n', NAMESPACE]);
        return claim.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;
      },
      { timeoutMs: 60_000, what: 'SandboxClaim team-a/notebook Ready' },
    );
    const secret = await getJson<{ type: string; data: Record<string, string> }>([
      'secret',
      'notebook',
      '-n',
      NAMESPACE,
    ]);
    expect(secret.type).toBe('warmpool.dev/sandbox');
    const data = Object.fromEntries(
      Object.entries(secret.data).map(([key, value]) => [key, Buffer.from(value, 'base64').toString('utf8')]),
    );
    expect(Object.keys(data).sort()).toEqual(['deadline', 'id', 'node', 'ownerAddr', 'token']);
    expect(data['id']).toMatch(/^sb_/);
    expect(data['token']).not.toBe('');
  }, 90_000);

  it('the SandboxEnv gets its scaling groups in status', async () => {
    await eventually(
      async () => {
        const env = await getJson<SandboxEnv>(['sandboxenv', 'python', '-n', NAMESPACE]);
        return env.status?.scalingGroups?.some((group) => group.name === 'cpu') === true;
      },
      { timeoutMs: 60_000, what: 'SandboxEnv team-a/python status' },
    );
  }, 90_000);

  it("the claimer's RBAC allows what the claim API and SandboxClaims need, and no more", async () => {
    const canI = async (verb: string, resource: string): Promise<string> => {
      const result = await stack.cluster.kubectl([
        'auth',
        'can-i',
        verb,
        resource,
        '-n',
        NAMESPACE,
        `--as=system:serviceaccount:${NAMESPACE}:claimer`,
      ]);
      return result.stdout.trim();
    };
    for (const verb of ['create', 'get', 'update', 'delete'])
      expect(await canI(verb, 'sandboxclaims.extensions.agents.x-k8s.io')).toBe('yes');
    expect(await canI('list', 'sandboxes.agents.x-k8s.io')).toBe('yes');
    expect(await canI('create', 'sandboxwarmpools.extensions.agents.x-k8s.io')).toBe('no');
  });

  it('claim-over-http.sh claims, renews, reads back and releases a sandbox as the claimer', async () => {
    const origin = new URL(stack.description.claimsUrl as string).origin;
    const run = await runCommand({
      command: 'bash',
      args: [join(EXAMPLES, 'claim-over-http.sh')],
      env: {
        ...process.env,
        PATH: `${binDir()}${delimiter}${process.env['PATH'] ?? ''}`,
        KUBECONFIG: stack.cluster.kubeconfigPath,
        CLAIMS_URL: origin,
        CLAIM_REF: 'example-script',
      },
      timeoutMs: 120_000,
    });
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
    const lines = run.stdout.trim().split('\n');
    expect(lines[0]).toMatch(
      /^claimed sb_\S+ \(claimRef example-script\) on node warmpool-node-\d, reached at \S+:\d+/,
    );
    expect(lines[1]).toMatch(/^renewed until \d{4}-/);
    expect(lines[2]).toMatch(/^read back sb_\S+, tier (warm|cold)$/);
    expect(lines[3]).toMatch(/^released sb_/);
  });

  it('the two federated clusters’ chart values render with the chart', async () => {
    for (const values of ['values-east.yaml', 'values-west.yaml']) {
      const rendered = await runHelm(['template', 'warmpool', CHART, '-f', join(EXAMPLES, 'federation', values)]);
      expect(rendered).toContain('--cluster-id=');
      expect(rendered).toContain('--federation-peers-file=');
    }
  });
});
