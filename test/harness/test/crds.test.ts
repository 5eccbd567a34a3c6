// The chart's CRDs on a real apiserver: every field of the TypeScript types in
// @warmpool/api survives a round trip (nothing pruned), and invalid objects are
// refused by the server with its own message.
import {
  apiVersionOf,
  MAX_INVENTORY_ENTRIES,
  NodeInventoryType,
  type NodeInventory,
  type NodeInventoryStatus,
  type Sandbox,
  type SandboxClaim,
  type SandboxEnv,
  type SandboxTemplate,
  type SandboxWarmPool,
} from '@warmpool/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sandboxClaim, sandboxEnv, startCluster, template, warmPool, type TestCluster } from '../src/index.js';

let cluster: TestCluster;
let ns: string;

beforeAll(async () => {
  cluster = await startCluster({ name: 'harness-crds' });
  console.log(`cluster startup: ${cluster.startupMs} ms, CRDs established in ${cluster.timings.crdsMs} ms`);
  ns = await cluster.createNamespace('crds');
});
afterAll(() => cluster?.stop());

interface Named {
  kind?: string;
  metadata?: { name?: string };
}

async function create(object: Named, namespace: string | undefined = ns): Promise<{ code: number; stderr: string }> {
  const args = ['create', '-f', '-', ...(namespace ? ['-n', namespace] : [])];
  return cluster.kubectl(args, { input: JSON.stringify(object) });
}

async function mustCreate(object: Named, namespace: string | undefined = ns): Promise<void> {
  const result = await create(object, namespace);
  expect(result.stderr).toBe('');
  expect(result.code).toBe(0);
}

async function setStatus(
  resource: string,
  name: string,
  status: object,
  namespace: string | undefined = ns,
): Promise<{ code: number; stderr: string }> {
  return cluster.kubectl([
    'patch',
    resource,
    name,
    ...(namespace ? ['-n', namespace] : []),
    '--subresource=status',
    '--type=merge',
    `-p=${JSON.stringify({ status })}`,
  ]);
}

async function read<T>(resource: string, name: string, namespace: string | undefined = ns): Promise<T> {
  const result = await cluster.kubectl(['get', resource, name, ...(namespace ? ['-n', namespace] : []), '-o', 'json']);
  expect(result.stderr).toBe('');
  return JSON.parse(result.stdout) as T;
}

const condition = {
  type: 'Ready',
  status: 'True',
  reason: 'Warm',
  message: 'all warm',
  lastTransitionTime: '2026-01-02T03:04:05Z',
  observedGeneration: 1,
} as const;

/** A SandboxWarmPool of the template "python" in this spec's namespace, `spec` added. */
function pool(name: string, spec: Partial<SandboxWarmPool['spec']> = {}): SandboxWarmPool {
  const built = warmPool(ns, name, 'python', undefined);
  return { ...built, spec: { ...built.spec, ...spec } };
}

function inventory(name: string): NodeInventory {
  return {
    apiVersion: apiVersionOf(NodeInventoryType),
    kind: NodeInventoryType.kind,
    metadata: { name },
    spec: { nodeName: name, address: '10.0.0.7:9090' },
  };
}

function entries(count: number): NonNullable<NodeInventoryStatus['entries']> {
  return Array.from({ length: count }, (_, i) => ({
    id: `sb-${i}`,
    template: 'python:3.13',
    net: 'none',
    size: 'small',
    deadline: '2026-01-02T03:04:05Z',
  }));
}

describe('the CRDs', () => {
  it('are all Established and served', async () => {
    const result = await cluster.kubectl([
      'get',
      'crd',
      '-o',
      'jsonpath={range .items[*]}{.metadata.name}{"\\n"}{end}',
    ]);
    expect(result.stdout.trim().split('\n').sort()).toEqual([
      'nodeinventories.warmpool.dev',
      'sandboxclaims.extensions.agents.x-k8s.io',
      'sandboxenvs.warmpool.dev',
      'sandboxes.agents.x-k8s.io',
      'sandboxtemplates.extensions.agents.x-k8s.io',
      'sandboxwarmpoolautoscalers.warmpool.dev',
      'sandboxwarmpools.extensions.agents.x-k8s.io',
    ]);
    const resources = await cluster.kubectl(['api-resources', '-o', 'wide', '--api-group=extensions.agents.x-k8s.io']);
    expect(resources.stdout).toMatch(
      /sandboxwarmpools\s+swp\s+extensions\.agents\.x-k8s\.io\/v1beta1\s+true\s+SandboxWarmPool/,
    );
    expect(resources.stdout).toMatch(
      /sandboxclaims\s+sandboxclaim\s+extensions\.agents\.x-k8s\.io\/v1beta1\s+true\s+SandboxClaim/,
    );
    expect(resources.stdout).toMatch(
      /sandboxtemplates\s+sandboxtemplate\s+extensions\.agents\.x-k8s\.io\/v1beta1\s+true\s+SandboxTemplate/,
    );
  });

  it('install again without error (server-side apply is idempotent)', async () => {
    await expect(cluster.installCrds()).resolves.toBeUndefined();
  });
});

describe('SandboxTemplate', () => {
  it('keeps every field of the type, including the whole PodSpec as written', async () => {
    const written: SandboxTemplate = {
      ...template(ns, 'python', undefined, {
        annotations: { 'warmpool.dev/net': 'none', 'warmpool.dev/size': 'small' },
      }),
      spec: {
        podTemplate: {
          metadata: { labels: { app: 'py' }, annotations: { note: 'x' } },
          spec: {
            containers: [
              {
                name: 'main',
                image: 'python:3.13',
                resources: { limits: { cpu: '1' } },
                ports: [{ containerPort: 8888 }],
              },
            ],
            runtimeClassName: 'gvisor',
            someFutureField: { kept: true },
          },
        },
        networkPolicy: { ingress: [{ from: [{ podSelector: { matchLabels: { role: 'client' } } }] }] },
        networkPolicyManagement: 'Unmanaged',
        envVarsInjectionPolicy: 'Allowed',
        volumeClaimTemplatesPolicy: 'Allowed',
      },
    };
    await mustCreate(written);
    const stored = await read<SandboxTemplate>('sandboxtemplate', 'python');
    expect(stored.spec).toEqual(written.spec);
  });

  it('fills upstream defaults', async () => {
    await mustCreate(template(ns, 'bare', undefined, { optIn: false }));
    const stored = await read<SandboxTemplate>('sandboxtemplate', 'bare');
    expect(stored.spec).toMatchObject({
      networkPolicyManagement: 'Managed',
      envVarsInjectionPolicy: 'Disallowed',
      volumeClaimTemplatesPolicy: 'Disallowed',
    });
  });

  it('refuses a pod template without containers', async () => {
    const result = await create({ ...template(ns, 'empty', undefined), spec: { podTemplate: { spec: {} } } } as Named);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('spec.podTemplate.spec.containers: Required value');
  });
});

describe('SandboxWarmPool', () => {
  it('keeps every field of the type, warmpool conditions included', async () => {
    const full = pool('full', { replicas: 4, updateStrategy: { type: 'Recreate' } });
    await mustCreate(full);
    const status: SandboxWarmPool['status'] = {
      replicas: 4,
      readyReplicas: 3,
      selector: 'warmpool.dev/pool=full',
      observedGeneration: 1,
      conditions: [condition],
    };
    expect((await setStatus('swp', 'full', status ?? {})).stderr).toBe('');
    const stored = await read<SandboxWarmPool>('swp', 'full');
    expect(stored.spec).toEqual(full.spec);
    expect(stored.status).toEqual(status);
  });

  it('defaults replicas to 1', async () => {
    await mustCreate(pool('defaulted'));
    expect((await read<SandboxWarmPool>('swp', 'defaulted')).spec.replicas).toBe(1);
  });

  it('refuses negative replicas', async () => {
    const result = await create(pool('negative', { replicas: -1 }));
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(
      'spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0',
    );
  });

  it('refuses a pool without sandboxTemplateRef', async () => {
    const result = await create({ ...pool('no-ref'), spec: { replicas: 1 } } as Named);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('spec.sandboxTemplateRef: Required value');
  });

  it('refuses a template reference without a name', async () => {
    const result = await create({ ...pool('no-name'), spec: { sandboxTemplateRef: {} } } as Named);
    expect(result.stderr).toContain('spec.sandboxTemplateRef.name: Required value');
  });

  it('refuses an unknown update strategy', async () => {
    const result = await create({
      ...pool('bad-strategy'),
      spec: { sandboxTemplateRef: { name: 'python' }, updateStrategy: { type: 'Sometimes' } },
    } as Named);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(
      'spec.updateStrategy.type: Unsupported value: "Sometimes": supported values: "Recreate", "OnReplenish"',
    );
  });

  it('scales through the scale subresource with kubectl scale', async () => {
    await mustCreate(pool('scaled', { replicas: 1 }));
    await setStatus('swp', 'scaled', { replicas: 1, readyReplicas: 1, selector: 'warmpool.dev/pool=scaled' });
    const scaled = await cluster.kubectl(['scale', 'swp', 'scaled', '-n', ns, '--replicas=7']);
    expect(scaled).toMatchObject({ code: 0, stdout: 'sandboxwarmpool.extensions.agents.x-k8s.io/scaled scaled\n' });
    expect((await read<SandboxWarmPool>('swp', 'scaled')).spec.replicas).toBe(7);

    const scale = await cluster.kubectl([
      'get',
      '--raw',
      `/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/${ns}/sandboxwarmpools/scaled/scale`,
    ]);
    expect(JSON.parse(scale.stdout)).toMatchObject({
      kind: 'Scale',
      spec: { replicas: 7 },
      status: { replicas: 1, selector: 'warmpool.dev/pool=scaled' },
    });
  });

  it('shows READY, DESIRED, REASON and AGE in kubectl get, and the template, Degraded and message with -o wide', async () => {
    await mustCreate(pool('columns', { replicas: 5 }));
    await setStatus('swp', 'columns', {
      replicas: 5,
      readyReplicas: 2,
      conditions: [
        {
          type: 'Ready',
          status: 'False',
          reason: 'Filling',
          message: 'filling',
          lastTransitionTime: '2030-01-01T00:00:00Z',
        },
      ],
    });
    const result = await cluster.kubectl(['get', 'swp', 'columns', '-n', ns]);
    const [header, row] = result.stdout
      .trim()
      .split('\n')
      .map((line) => line.trim().split(/\s+/));
    expect(header).toEqual(['NAME', 'READY', 'DESIRED', 'REASON', 'AGE']);
    expect(row?.slice(0, 4)).toEqual(['columns', '2', '5', 'Filling']);
    const wide = (await cluster.kubectl(['get', 'swp', 'columns', '-n', ns, '-o', 'wide'])).stdout
      .trim()
      .split('\n')[0]
      ?.trim()
      .split(/\s+/);
    expect(wide).toEqual(['NAME', 'READY', 'DESIRED', 'REASON', 'AGE', 'TEMPLATE', 'DEGRADED', 'MESSAGE']);
  });

  it('refuses status conditions with an unknown status value', async () => {
    await mustCreate(pool('bad-condition'));
    const result = await setStatus('swp', 'bad-condition', { conditions: [{ type: 'Ready', status: 'Maybe' }] });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('status.conditions[0].status: Unsupported value: "Maybe"');
  });
});

describe('SandboxClaim', () => {
  it('keeps every field of the type', async () => {
    const claim: SandboxClaim = {
      ...sandboxClaim(ns, 'full', 'full'),
      spec: {
        warmPoolRef: { name: 'full' },
        lifecycle: { shutdownTime: '2026-01-02T03:04:05Z', ttlSecondsAfterFinished: 60, shutdownPolicy: 'Delete' },
        additionalPodMetadata: { labels: { team: 'a' }, annotations: { why: 'test' } },
        env: [{ name: 'MODE', value: 'fast' }],
        volumeClaimTemplates: [
          {
            metadata: { name: 'scratch' },
            spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
          },
        ],
      },
    };
    await mustCreate(claim);
    const status: SandboxClaim['status'] = { conditions: [condition], sandbox: { name: 'sb-1', podIPs: ['10.1.2.3'] } };
    expect((await setStatus('sandboxclaim', 'full', status ?? {})).stderr).toBe('');
    const stored = await read<SandboxClaim>('sandboxclaim', 'full');
    expect(stored.spec).toEqual(claim.spec);
    expect(stored.status).toEqual(status);
  });

  it('requires every condition field and env values, exactly as upstream does', async () => {
    await mustCreate(sandboxClaim(ns, 'strict', 'p'));
    const result = await setStatus('sandboxclaim', 'strict', { conditions: [{ type: 'Ready', status: 'True' }] });
    expect(result.stderr).toContain('status.conditions[0].message: Required value');
    expect(result.stderr).toContain('status.conditions[0].lastTransitionTime: Required value');
    const noValue = await create({
      ...sandboxClaim(ns, 'no-value', 'p'),
      spec: { warmPoolRef: { name: 'p' }, env: [{ name: 'A' }] },
    } as Named);
    expect(noValue.stderr).toContain('spec.env[0].value: Required value');
  });

  it('refuses a claim without warmPoolRef', async () => {
    const result = await create({ ...sandboxClaim(ns, 'no-pool', 'p'), spec: {} } as Named);
    expect(result.stderr).toContain('spec.warmPoolRef: Required value');
  });

  it('refuses an unknown shutdown policy', async () => {
    const result = await create({
      ...sandboxClaim(ns, 'bad-policy', 'p'),
      spec: { warmPoolRef: { name: 'p' }, lifecycle: { shutdownPolicy: 'Never' } },
    } as Named);
    expect(result.stderr).toContain('spec.lifecycle.shutdownPolicy: Unsupported value: "Never"');
  });

  it('shows READY, SANDBOX, REASON and AGE in kubectl get', async () => {
    await mustCreate(sandboxClaim(ns, 'columns', 'p'));
    await setStatus('sandboxclaim', 'columns', { conditions: [condition], sandbox: { name: 'sb-9' } });
    const result = await cluster.kubectl(['get', 'sandboxclaim', 'columns', '-n', ns]);
    const [header, row] = result.stdout
      .trim()
      .split('\n')
      .map((line) => line.trim().split(/\s+/));
    expect(header).toEqual(['NAME', 'READY', 'SANDBOX', 'REASON', 'AGE']);
    expect(row?.slice(0, 4)).toEqual(['columns', 'True', 'sb-9', 'Warm']);
  });
});

describe('Sandbox', () => {
  it('is served as agents.x-k8s.io/v1beta1 sandboxes with its status', async () => {
    const sandbox: Sandbox = {
      // Upstream's wire string, not libs/api's constant: this checks the CRD serves that group/version.
      apiVersion: 'agents.x-k8s.io/v1beta1',
      kind: 'Sandbox',
      metadata: { name: 'one' },
      spec: { podTemplate: { spec: { containers: [{ name: 'main', image: 'python:3.13' }] } } },
    };
    await mustCreate(sandbox);
    const status: Sandbox['status'] = { conditions: [condition], nodeName: 'node-1', podIPs: ['10.1.2.4'] };
    expect((await setStatus('sandboxes.agents.x-k8s.io', 'one', status ?? {})).stderr).toBe('');
    const stored = await read<Sandbox>('sandboxes.agents.x-k8s.io', 'one');
    expect(stored.spec).toMatchObject(sandbox.spec ?? {});
    expect(stored.status).toEqual(status);
  });
});

describe('NodeInventory', () => {
  it('is cluster-scoped and keeps every field of the type', async () => {
    await mustCreate(inventory('node-full'), undefined);
    const status: NodeInventoryStatus = {
      pools: [{ template: 'python:3.13', net: 'none', size: 'small', target: 10, warm: 8, refilling: 2 }],
      claimed: 3,
      capacity: 40,
      draining: false,
      atCapacity: false,
      publishedAt: '2026-01-02T03:04:05Z',
      appliedGeneration: 12,
      entries: [{ ...entries(1)[0]!, claimRef: 'team-a/claim-1' }],
      entriesTruncated: false,
    };
    expect((await setStatus('nodeinventory', 'node-full', status, undefined)).stderr).toBe('');
    const stored = await read<NodeInventory>('nodeinventory', 'node-full', undefined);
    expect(stored.metadata?.namespace).toBeUndefined();
    expect(stored.spec).toEqual({ nodeName: 'node-full', address: '10.0.0.7:9090' });
    expect(stored.status).toEqual(status);
  });

  it(`accepts ${MAX_INVENTORY_ENTRIES} entries and refuses one more`, async () => {
    await mustCreate(inventory('node-cap'), undefined);
    expect(
      (await setStatus('nodeinventory', 'node-cap', { entries: entries(MAX_INVENTORY_ENTRIES) }, undefined)).code,
    ).toBe(0);
    const result = await setStatus(
      'nodeinventory',
      'node-cap',
      { entries: entries(MAX_INVENTORY_ENTRIES + 1) },
      undefined,
    );
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(
      `status.entries: Too many: ${MAX_INVENTORY_ENTRIES + 1}: must have at most ${MAX_INVENTORY_ENTRIES} items`,
    );
  });

  it('refuses an address without a port', async () => {
    const result = await create(
      { ...inventory('node-bad'), spec: { nodeName: 'node-bad', address: '10.0.0.7' } } as Named,
      undefined,
    );
    expect(result.stderr).toContain('spec.address');
  });

  it('shows its address, claimed, draining and published time in kubectl get', async () => {
    const result = await cluster.kubectl(['get', 'nodeinventory', 'node-full']);
    const [header, row] = result.stdout
      .trim()
      .split('\n')
      .map((line) => line.trim().split(/\s+/));
    expect(header).toEqual(['NAME', 'ADDRESS', 'CLAIMED', 'CAPACITY', 'DRAINING', 'PUBLISHED', 'AGE']);
    expect(row?.slice(0, 5)).toEqual(['node-full', '10.0.0.7:9090', '3', '40', 'false']);
  });
});

describe('SandboxEnv', () => {
  it('keeps every field of the type, the whole-Env row and foreign clusters included', async () => {
    const env: SandboxEnv = sandboxEnv(ns, 'full', { 'py-small': 'py', 'py-large': 'py' }, [
      { scalingGroup: 'py', enabled: true, minReplicas: 1, maxReplicas: 50, targetIdle: 5 },
    ]);
    await mustCreate(env);
    const status: SandboxEnv['status'] = {
      observedGeneration: 1,
      scalingGroups: [
        { name: '', idle: 3, running: 4, pending: 1, desired: 8, autoscalingEnabled: true, capacity: -1 },
        {
          name: 'py',
          idle: 3,
          running: 4,
          pending: 1,
          desired: 8,
          autoscalingEnabled: true,
          capacity: 0,
          saturatedFor: '90s',
        },
      ],
      clusters: [
        {
          clusterId: 'eu-1',
          memberPool: 'py-small',
          scalingGroup: 'py',
          idle: 2,
          running: 1,
          pending: 0,
          desired: 3,
          autoscalingEnabled: false,
          capacity: 7,
        },
      ],
    };
    expect((await setStatus('sandboxenv', 'full', status ?? {})).stderr).toBe('');
    const stored = await read<SandboxEnv>('sandboxenv', 'full');
    expect(stored.spec).toEqual(env.spec);
    expect(stored.status).toEqual(status);
  });

  it('refuses minReplicas above maxReplicas', async () => {
    const result = await create(
      sandboxEnv(ns, 'inverted', { p: 'g' }, [{ scalingGroup: 'g', enabled: true, minReplicas: 9, maxReplicas: 2 }]),
    );
    expect(result.stderr).toContain('minReplicas must not exceed maxReplicas');
  });

  it('refuses a pool listed twice', async () => {
    const result = await create({
      ...sandboxEnv(ns, 'twice', {}),
      spec: {
        members: [
          { pool: 'p', scalingGroup: 'a' },
          { pool: 'p', scalingGroup: 'b' },
        ],
      },
    } as Named);
    expect(result.stderr).toContain('spec.members[1]: Duplicate value');
  });
});
