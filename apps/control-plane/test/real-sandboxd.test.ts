// The claim pipeline meets sandboxd as the real one behaves (cocoonstack/sandbox,
// docs/sandboxd-api.md) where fake-sandboxd does not yet: a real apiserver and
// Redis, two real node agents each in front of a fake-sandboxd with the
// harness's SandboxdVariant between them (redirect answers, claim answers with
// more fields, without owner_addr or with a URL for it, a `?claim_ref=`
// filter ignored, slow claims), and one control plane in this process.
import { claimBodySchema, parseNodeClaimRef, type ClaimBody } from '@warmpool/api';
import { eventually, sleep, template, warmPool } from '@warmpool/harness';
import { silentLogger } from '@warmpool/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpNodeClaims } from '../src/controllers/sandboxclaims/node-claims.js';
import { AgentClaims } from '../src/provisioning/agent-claims.js';
import { callClaims, claimsOnNodes, serviceAccountToken } from './support/claims.js';
import type { FleetNode } from './support/fleet.js';
import type { ControlPlane } from './support/internals.js';
import { apply, condition, getPool, kubectl } from './support/objects.js';
import { testWorld, type TestWorld } from './support/world.js';

const TOKEN = 'fleet-token-for-the-real-sandboxd-spec';
const IMAGE = 'registry.test/meet:1';
const ELSEWHERE = ['10.9.9.9:7777'];

describe('claims against sandboxd as the real one behaves', () => {
  let world: TestWorld;
  let cp: ControlPlane;
  let ns: string;
  let caller: string;
  let node0: FleetNode;
  let node1: FleetNode;

  const claim = async (claimRef: string) => {
    const answer = await callClaims(cp.claimsUrl ?? '', 'POST', `/v1/namespaces/${ns}/claims`, caller, {
      warmPool: 'meet',
      claimRef,
      ttlSeconds: 600,
    });
    return { status: answer.status, body: answer.body, claim: claimBodySchema.safeParse(answer.body).data };
  };
  /** The sandboxes the nodes' own fake-sandboxd hold for one HTTP claimRef of this spec. */
  const heldFor = async (claimRef: string) =>
    (await claimsOnNodes(world.fleet, TOKEN)).filter((c) => {
      const owner = parseNodeClaimRef(c.claimRef);
      return owner?.door === 'http' && owner.namespace === ns && owner.claimRef === claimRef;
    });
  const redirected = async (): Promise<number> => {
    const line = /warmpool_controlplane_node_claims_total\{outcome="redirected"\} (\d+)/.exec(
      await cp.metrics.render(),
    );
    return Number(line?.[1] ?? 0);
  };
  const publishedOwnerAddr = async (node: string): Promise<string | undefined> => {
    const inventory = JSON.parse(await kubectl(world.cluster, ['get', 'nodeinventory', node, '-o', 'json'])) as {
      status?: { ownerAddr?: string };
    };
    return inventory.status?.ownerAddr;
  };

  beforeAll(async () => {
    world = await testWorld({
      name: 'cp-meet',
      token: TOKEN,
      redis: true,
      fleet: { count: 2, capacity: 40, variants: { 0: {}, 1: {} } },
    });
    [node0, node1] = world.fleet.nodes as [FleetNode, FleetNode];
    ns = await world.namespace('meet');
    caller = await serviceAccountToken(world.cluster, ns, 'claimer', ['create', 'get', 'update', 'delete']);
    await apply(world.cluster, template(ns, 'tpl', IMAGE), warmPool(ns, 'meet', 'tpl', 4));
    cp = await world.leader('default', {
      claims: world.claimsOptions({ settings: { claimTimeoutMs: 10_000, nodeTimeoutMs: 1_000 } }),
    });
    await eventually(async () => (await world.fleet.warmOf(`${IMAGE}|none|small`)).every((w) => w === 2), {
      what: '2 warm on each node',
      timeoutMs: 30_000,
    });
    await eventually(() => cp.claims?.notReadyReasons().length === 0, { what: 'the replica ready to claim' });
  }, 120_000);

  afterAll(() => world?.close());

  it('takes a redirect answer as a refusal: the claim goes to another node at once, nothing is looked up', async () => {
    node0.variant!.behaviour = { redirectClaims: ELSEWHERE };
    node1.variant!.behaviour = {};
    // Placement picks among both nodes: claim until node-0 was asked at least once (and answered a redirect).
    for (let i = 0; i < 20 && (i < 3 || (await redirected()) === 0); i++) {
      const answer = await claim(`redirect-${i}`);
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      expect(answer.claim?.node).toBe('node-1');
    }
    expect(await redirected()).toBeGreaterThan(0);
    // A redirect claimed nothing: no lookup by claim_ref (the old ≈2 s stall), and nothing on node-0.
    expect(node0.variant!.calls.filter((call) => call.includes('claim_ref='))).toEqual([]);
    expect(node0.variant!.claimBodies.every((b) => (b as { no_redirect?: unknown }).no_redirect === true)).toBe(true);
    expect((await claimsOnNodes(world.fleet, TOKEN)).filter((c) => c.node === 'node-0')).toEqual([]);
  });

  it("serves a claim answer without owner_addr (and with more fields) with the node's published owner address", async () => {
    // The agent learns its node's owner address from a claim it passes on, and publishes it.
    node0.variant!.behaviour = {};
    const direct = await fetch(`${node0.agentUrl}/v1/claim`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ template: IMAGE, claim_ref: 'direct/learn' }),
    });
    expect(direct.status).toBe(200);
    await direct.body?.cancel();
    const advertised = `127.0.0.1:${node0.sandboxdPort}`;
    await eventually(async () => (await publishedOwnerAddr('node-0')) === advertised, {
      what: "node-0's published owner address",
    });
    node0.variant!.behaviour = {
      ownerAddr: null,
      claimExtras: { template_digest: 'sha256:0', volumes: [{ name: 'v', mount: '/volumes/v' }], net_route: 'r' },
    };
    node1.variant!.behaviour = { redirectClaims: ELSEWHERE };
    const answer = await claim('no-owner');
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.claim).toMatchObject({ node: 'node-0', ownerAddr: advertised });
  });

  it('reduces an owner_addr given as a full https origin to host:port, in the grant and in the inventory', async () => {
    node0.variant!.behaviour = { ownerAddr: 'https://sbx-0.example.test:8443' };
    node1.variant!.behaviour = { redirectClaims: ELSEWHERE };
    const answer = await claim('url-owner');
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect((answer.claim as ClaimBody).ownerAddr).toBe('sbx-0.example.test:8443');
    await eventually(async () => (await publishedOwnerAddr('node-0')) === 'sbx-0.example.test:8443', {
      what: 'the normalized owner address published',
    });
  });

  it('finds a slow claim on a node that ignores the claim_ref filter, and releases none of its other claims', async () => {
    const before = (await claimsOnNodes(world.fleet, TOKEN)).filter((c) => c.node === 'node-0');
    expect(before.length).toBeGreaterThanOrEqual(3);
    // Answered after 2.5 s, the node call's timeout is 1 s: the claimer looks the claim up by its claim_ref.
    node0.variant!.behaviour = { ignoreClaimRefFilter: true, claimDelayMs: 2_500 };
    node1.variant!.behaviour = { redirectClaims: ELSEWHERE };
    const answer = await claim('slow');
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.claim?.node).toBe('node-0');
    expect(node0.variant!.calls.some((call) => call.startsWith('GET /v1/sandboxes?claim_ref='))).toBe(true);
    expect((await heldFor('slow')).map((c) => c.id)).toEqual([answer.claim?.id]);
    const after = (await claimsOnNodes(world.fleet, TOKEN)).map((c) => c.id);
    for (const held of before) expect(after).toContain(held.id);
  });

  it("the control plane's own lookup keeps only the claim_ref asked for, whatever the daemon answers", async () => {
    node0.variant!.behaviour = { ignoreClaimRefFilter: true };
    // The variant speaks the list as an agent does: ask it directly, without the agent's filter in between.
    const agents = new AgentClaims({ token: () => TOKEN, logger: silentLogger });
    try {
      const address = node0.variant!.url.replace('http://', '');
      const all = await agents.list(address);
      expect(all.length).toBeGreaterThanOrEqual(4);
      const one = all.find((row) => row.claim_ref !== undefined) ?? all[0];
      const found = await agents.findByClaimRef(address, one?.claim_ref ?? '');
      expect(found.map((row) => row.id)).toEqual([one?.id]);
      expect(await agents.findByClaimRef(address, 'http:nobody')).toEqual([]);
    } finally {
      await agents.close();
    }
  });

  it('reads node lists row by row (pipeline and janitor): rows without claimed_at pass, a row without an id is skipped and logged once', async () => {
    const broken = { key: { template: IMAGE, net: 'none', size: 'small' }, deadline: '2030-01-01T00:00:00Z' };
    node0.variant!.behaviour = {
      dropClaimedAt: true,
      rowExtras: { hibernated: false, volumes: [] },
      extraRows: [broken],
    };
    const address = node0.variant!.url.replace('http://', '');
    const held = (await claimsOnNodes(world.fleet, TOKEN)).filter((c) => c.node === 'node-0').map((c) => c.id);
    const warnings: unknown[] = [];
    const logger = { ...silentLogger, warn: (msg: string, fields?: unknown) => warnings.push({ msg, fields }) };
    const agents = new AgentClaims({ token: () => TOKEN, logger });
    try {
      for (let i = 0; i < 2; i++) {
        const rows = await agents.list(address);
        expect(rows.map((r) => r.id).sort()).toEqual([...held].sort());
        expect(rows.every((r) => r.claimed_at === undefined)).toBe(true);
      }
    } finally {
      await agents.close();
    }
    const janitorsView = await new HttpNodeClaims(() => TOKEN, logger).list(
      { node: 'node-0', address },
      AbortSignal.timeout(5_000),
    );
    expect(janitorsView.map((r) => r.id).sort()).toEqual([...held].sort());
    // One line from the pipeline's client (twice listed), one from the janitor's.
    expect(warnings).toHaveLength(2);
  });
});

describe('slow claims: a node call that times out while the node boots the claim', () => {
  let world: TestWorld;
  let cp: ControlPlane;
  let ns: string;
  let caller: string;
  let node0: FleetNode;
  let node1: FleetNode;

  const claim = async (claimRef: string) => {
    const answer = await callClaims(cp.claimsUrl ?? '', 'POST', `/v1/namespaces/${ns}/claims`, caller, {
      warmPool: 'slow',
      claimRef,
      ttlSeconds: 600,
    });
    return { status: answer.status, body: answer.body, claim: claimBodySchema.safeParse(answer.body).data };
  };
  const heldFor = async (claimRef: string) =>
    (await claimsOnNodes(world.fleet, TOKEN)).filter((c) => {
      const owner = parseNodeClaimRef(c.claimRef);
      return owner?.door === 'http' && owner.namespace === ns && owner.claimRef === claimRef;
    });

  beforeAll(async () => {
    world = await testWorld({
      name: 'cp-slow',
      token: TOKEN,
      redis: true,
      fleet: { count: 2, capacity: 40, variants: { 0: {}, 1: {} } },
    });
    [node0, node1] = world.fleet.nodes as [FleetNode, FleetNode];
    ns = await world.namespace('slow');
    caller = await serviceAccountToken(world.cluster, ns, 'claimer', ['create', 'get', 'update', 'delete']);
    await apply(world.cluster, template(ns, 'tpl', IMAGE), warmPool(ns, 'slow', 'tpl', 4));
    // A 1 s warm-claim timeout, callers wait 6 s.
    cp = await world.leader('default', {
      claims: world.claimsOptions({ settings: { claimTimeoutMs: 6_000, nodeTimeoutMs: 1_000 } }),
    });
    await eventually(async () => (await world.fleet.warmOf(`${IMAGE}|none|small`)).every((w) => w === 2), {
      what: '2 warm on each node',
      timeoutMs: 30_000,
    });
    await eventually(() => cp.claims?.notReadyReasons().length === 0, { what: 'the replica ready to claim' });
  }, 120_000);

  afterAll(() => world?.close());

  it('a 3 s cold claim with a 1 s warm-claim timeout yields exactly one sandbox, on the node that booted it', async () => {
    // node-0 lands every claim 3 s late (nothing listed under its claim_ref before); node-1 would serve at once, but
    // refuses the first claim it gets, so whichever node placement picks first, node-0 is asked.
    node0.variant!.behaviour = { claimLandsAfterMs: 3_000 };
    node1.variant!.behaviour = { redirectClaims: ELSEWHERE, redirectNext: 1 };
    const answer = await claim('cold-3s');
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.claim?.node).toBe('node-0');
    expect((await heldFor('cold-3s')).map((c) => c.id)).toEqual([answer.claim?.id]);
  });

  it('a claim that lands after its caller gave up is found by the retry with the same claimRef, once', async () => {
    // Lands after 8 s: past the caller's 6 s; the node call timed out after 1 s.
    node0.variant!.behaviour = { claimLandsAfterMs: 8_000 };
    node1.variant!.behaviour = { redirectClaims: ELSEWHERE, redirectNext: 1 };
    const first = await claim('late');
    expect(first.status, JSON.stringify(first.body)).toBe(504);
    expect(first.body).toMatchObject({ reason: 'Timeout' });
    await eventually(async () => (await heldFor('late')).length === 1, {
      what: 'the late claim to land',
      timeoutMs: 10_000,
    });
    const again = await claim('late');
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    const held = await heldFor('late');
    expect(held.map((c) => c.id)).toEqual([again.claim?.id]);
    expect(held[0]?.node).toBe('node-0');
  });
});

describe('a slow PUT /v1/pools (sandboxd answers once the VMs it trims are gone)', () => {
  let world: TestWorld;

  beforeAll(async () => {
    world = await testWorld({ name: 'cp-slow-put', token: TOKEN, fleet: { count: 1, variants: { 0: {} } } });
  }, 120_000);

  afterAll(() => world?.close());

  it(
    'is waited for, once per change: no resend storm, and the node stays in placement',
    { timeout: 60_000 },
    async () => {
      const node = world.fleet.nodes[0] as FleetNode;
      node.variant!.behaviour = { poolsDelayMs: 3_000 };
      // Probes keep the specs' 1 s timeout; pushes have the default, generous one.
      const cp = await world.leader(await world.namespace('warmpool-system'));
      const ns = await world.namespace('slowput');
      const puts = (): number => node.variant!.calls.filter((call) => call === 'PUT /v1/pools').length;
      await apply(world.cluster, template(ns, 'tpl', IMAGE), warmPool(ns, 'pool', 'tpl', 3));
      await eventually(async () => (await node.targets()).get(`${IMAGE}|none|small`) === 3, {
        what: 'the target on the node',
      });
      const before = puts();
      await apply(world.cluster, warmPool(ns, 'pool', 'tpl', 5));
      // The push is applied at once and answered after 3 s: wait for its answer (the node's info shows it applied).
      await eventually(async () => (await node.targets()).get(`${IMAGE}|none|small`) === 5, { what: 'the new target' });
      for (let i = 0; i < 8; i++) {
        await sleep(500);
        expect(cp.reconciler.inPlacement(node.name), `after ${(i + 1) * 500} ms`).toBe(true);
      }
      // One push for the change (a slow answer is no failure, and nothing is resent while it is under way).
      expect(puts() - before).toBe(1);
      expect(await cp.metrics.render()).not.toMatch(/warmpool_controlplane_set_pools_errors_total\{[^}]*\} [1-9]/);
    },
  );
});

describe("sandboxd's pool settings, set per pool with annotations", () => {
  let world: TestWorld;
  let node: FleetNode;

  beforeAll(async () => {
    world = await testWorld({ name: 'cp-pool-options', token: TOKEN, fleet: { count: 1, variants: { 0: {} } } });
    node = world.fleet.nodes[0] as FleetNode;
    await world.leader(await world.namespace('warmpool-system'));
  }, 120_000);

  afterAll(() => world?.close());

  type PushedPool = Record<string, unknown> & { template: string };
  const lastPushed = (image: string): PushedPool | undefined => {
    const bodies = node.variant!.poolsBodies as Array<{ pools: PushedPool[] }>;
    return bodies.at(-1)?.pools.find((p) => p.template === image);
  };

  it("reach sandboxd through the agent: the pool's annotations over its template's, warm_max never below the node's share", async () => {
    const ns = await world.namespace('options');
    const image = 'registry.test/options:1';
    const tpl = template(ns, 'tpl', image, {
      annotations: {
        'warmpool.dev/warm-max': '1',
        'warmpool.dev/idle-hibernate-seconds': '300',
        'warmpool.dev/archive-after-seconds': '3600',
      },
    });
    const pool = warmPool(ns, 'pool', 'tpl', 3);
    pool.metadata.annotations = {
      'warmpool.dev/idle-hibernate-seconds': '600',
      'warmpool.dev/archive-delete-after-seconds': '86400',
    };
    await apply(world.cluster, tpl, pool);
    await eventually(() => lastPushed(image) !== undefined, { what: 'the pool pushed' });
    expect(lastPushed(image)).toEqual({
      template: image,
      net: 'none',
      size: 'small',
      warm: 3,
      warm_max: 3,
      idle_hibernate_seconds: 600,
      archive_after_seconds: 3600,
      archive_delete_after_seconds: 86400,
    });
    await eventually(async () => (await node.targets()).get(`${image}|none|small`) === 3, { what: 'the target' });
  });

  it('refuse a value that is not a non-negative integer on its pool, which is never pushed', async () => {
    const ns = await world.namespace('bad-options');
    const image = 'registry.test/bad-options:1';
    const pool = warmPool(ns, 'pool', 'tpl', 2);
    pool.metadata.annotations = { 'warmpool.dev/idle-hibernate-seconds': 'soon' };
    await apply(world.cluster, template(ns, 'tpl', image), pool);
    const status = await eventually(
      async () => {
        const p = await getPool(world.cluster, ns, 'pool');
        return condition(p, 'Ready')?.reason === 'InvalidTemplate' ? p : undefined;
      },
      { what: 'an InvalidTemplate condition' },
    );
    expect(condition(status, 'Ready')?.message).toContain(
      'annotation warmpool.dev/idle-hibernate-seconds "soon": must be a non-negative integer',
    );
    expect(node.variant!.poolsBodies.some((b) => JSON.stringify(b).includes(image))).toBe(false);
  });
});
