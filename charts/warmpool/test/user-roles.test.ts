// The roles teams already hold work with warmpool: the chart's ClusterRoles
// carry the aggregate-to-view/edit/admin labels that Kubernetes' built-in
// roles select, so a user bound to the built-in `edit` role may claim (create
// a SandboxClaim, or POST a claim: the claim API asks the same
// SubjectAccessReview), and one bound to `view` may only read.
//
// The test apiserver runs no kube-controller-manager, whose
// clusterrole-aggregation controller fills the built-in roles' rules. The spec
// therefore reads each built-in role's aggregationRule from the real apiserver
// and does what that controller does (the union of the rules of every
// ClusterRole its selectors match) before asking the apiserver's authorizer.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type TestCluster } from '@warmpool/harness';
import { helmInstall } from './support.js';

interface ClusterRole {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string>; resourceVersion?: string };
  aggregationRule?: { clusterRoleSelectors: Array<{ matchLabels?: Record<string, string> }> };
  rules?: unknown[];
}

const TEAM = 'team-roles';

describe("the chart's ClusterRoles aggregate to the built-in view, edit and admin", () => {
  let cluster: TestCluster;

  async function kubectl(args: string[], input?: string): Promise<string> {
    const result = await cluster.kubectl(args, input === undefined ? {} : { input });
    if (result.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${result.stderr}`);
    return result.stdout;
  }
  async function clusterRoles(): Promise<ClusterRole[]> {
    return (JSON.parse(await kubectl(['get', 'clusterroles', '-o', 'json'])) as { items: ClusterRole[] }).items;
  }
  /** What the clusterrole-aggregation controller does for one aggregated role. */
  async function aggregate(name: string): Promise<void> {
    const all = await clusterRoles();
    const role = all.find((r) => r.metadata.name === name);
    const selectors = role?.aggregationRule?.clusterRoleSelectors ?? [];
    const matches = (r: ClusterRole): boolean =>
      r.metadata.name !== name &&
      selectors.some((s) =>
        Object.entries(s.matchLabels ?? {}).every(([key, value]) => r.metadata.labels?.[key] === value),
      );
    const rules = all.filter(matches).flatMap((r) => r.rules ?? []);
    await kubectl(['replace', '-f', '-'], JSON.stringify({ ...role, rules }));
  }
  /** The apiserver's answer to the SubjectAccessReview the claim API and the Sandbox API ask for `user`. */
  async function canI(user: string, verb: string, resource: string): Promise<string> {
    const [plural, ...group] = resource.split('.');
    const review = {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SubjectAccessReview',
      spec: { user, resourceAttributes: { namespace: TEAM, verb, group: group.join('.'), resource: plural } },
    };
    const answer = JSON.parse(await kubectl(['create', '-f', '-', '-o', 'json'], JSON.stringify(review))) as {
      status: { allowed: boolean };
    };
    return answer.status.allowed ? 'yes' : 'no';
  }

  beforeAll(async () => {
    cluster = await startCluster({ name: 'chart-user-roles', crds: false });
    await helmInstall(cluster, ['fakeSandboxd.enabled=true']);
    for (const role of ['view', 'edit', 'admin']) await aggregate(role);
    await kubectl(['create', 'namespace', TEAM]);
    await kubectl(['create', 'rolebinding', 'alice-edit', '--clusterrole=edit', '--user=alice', '-n', TEAM]);
    await kubectl(['create', 'rolebinding', 'bob-view', '--clusterrole=view', '--user=bob', '-n', TEAM]);
    await kubectl(['create', 'rolebinding', 'carol-admin', '--clusterrole=admin', '--user=carol', '-n', TEAM]);
  }, 180_000);
  afterAll(async () => cluster?.stop());

  it("the built-in roles' own selectors pick the chart's ClusterRoles", async () => {
    const all = await clusterRoles();
    const selected = (name: string): string[] => {
      const selectors = all.find((r) => r.metadata.name === name)?.aggregationRule?.clusterRoleSelectors ?? [];
      return all
        .filter((r) =>
          selectors.some((s) =>
            Object.entries(s.matchLabels ?? {}).every(([key, value]) => r.metadata.labels?.[key] === value),
          ),
        )
        .map((r) => r.metadata.name)
        .filter((n) => n.startsWith('warmpool'))
        .sort();
    };
    expect(selected('view')).toEqual(['warmpool-view']);
    expect(selected('edit')).toEqual(['warmpool-edit', 'warmpool-view']);
    expect(selected('admin')).toEqual(['warmpool-edit', 'warmpool-view']);
  });

  it('a user bound to edit may claim, renew and release (SandboxClaims and the claim API), and create a claim', async () => {
    for (const verb of ['create', 'get', 'update', 'delete'])
      expect(await canI('alice', verb, 'sandboxclaims.extensions.agents.x-k8s.io')).toBe('yes');
    for (const verb of ['list', 'create', 'delete'])
      expect(await canI('alice', verb, 'sandboxes.agents.x-k8s.io')).toBe('yes');
    expect(await canI('alice', 'create', 'sandboxenvs.warmpool.dev')).toBe('yes');
    for (const verb of ['create', 'patch', 'delete'])
      expect(await canI('alice', verb, 'sandboxwarmpoolautoscalers.warmpool.dev')).toBe('yes');
    await kubectl(
      ['create', '-f', '-', '--as=alice'],
      JSON.stringify({
        apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
        kind: 'SandboxClaim',
        metadata: { name: 'by-alice', namespace: TEAM },
        spec: { warmPoolRef: { name: 'python' } },
      }),
    );
  });

  it('a user bound to admin may too; one bound to view only reads', async () => {
    expect(await canI('carol', 'create', 'sandboxclaims.extensions.agents.x-k8s.io')).toBe('yes');
    expect(await canI('bob', 'list', 'sandboxclaims.extensions.agents.x-k8s.io')).toBe('yes');
    expect(await canI('bob', 'get', 'sandboxes.agents.x-k8s.io')).toBe('yes');
    expect(await canI('bob', 'list', 'sandboxenvs.warmpool.dev')).toBe('yes');
    // `kubectl get warmpool` lists every kind of the category, the autoscalers among them.
    expect(await canI('bob', 'list', 'sandboxwarmpoolautoscalers.warmpool.dev')).toBe('yes');
    expect(await canI('bob', 'create', 'sandboxwarmpoolautoscalers.warmpool.dev')).toBe('no');
    expect(await canI('bob', 'create', 'sandboxclaims.extensions.agents.x-k8s.io')).toBe('no');
    expect(await canI('bob', 'delete', 'sandboxes.agents.x-k8s.io')).toBe('no');
  });

  it('nobody gets cluster-scoped NodeInventories through a namespace role', async () => {
    expect(await canI('carol', 'list', 'nodeinventories.warmpool.dev')).toBe('no');
  });
});
