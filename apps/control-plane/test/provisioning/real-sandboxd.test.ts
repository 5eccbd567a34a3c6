// The claim pipeline meets sandboxd as the real one behaves: a real apiserver
// and Redis, real node agents each in front of a fake-sandboxd, and one control
// plane in this process. Every variant the fake has a switch for runs on the
// fake itself (docs/sandboxd.md, "The variants warmpool must tolerate"): a mesh
// node, an older daemon that ignores `?claim_ref=`, rows without claimed_at,
// owner_addr absent or a full URL, slow cold boots, slow PUTs that wait for
// trimmed VMs. The harness's SandboxdVariant stands between an agent and its
// fake only for what the fake cannot answer — a redirect despite `no_redirect`
// (the real daemon honours it, and so does the fake), answer fields and broken
// rows the fake never gives, an owner address switched off in mid-life — and to
// record the pool bodies the agent forwards.
import { claimBodySchema, parseNodeClaimRef, type ClaimBody } from '@warmpool/api';
import { eventually, sleep, template, warmPool } from '@warmpool/harness';
import { silentLogger } from '@warmpool/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimsReady, metricSum } from '../support/metrics.js';
import { AgentClient } from '../../src/agents/client.js';
import { nodeClaimsOf } from '../../src/controllers/sandboxclaims/janitor.js';
import { callClaims, claimsOnNodes, serviceAccountToken } from '../support/claims.js';
import type { FleetNode } from '../support/fleet.js';
import type { ControlPlane } from '../../src/options.js';
import { apply, condition, getPool, kubectl } from '../support/objects.js';
import { testWorld, type TestWorld } from '../support/world.js';

const TOKEN = 'fleet-token-for-the-real-sandboxd-spec';
const IMAGE = 'registry.test/meet:1';
const KEY = `${IMAGE}|none|small`;
const ELSEWHERE = ['10.9.9.9:7777'];
const MESH_PEERS = ['10.9.9.9:7777', '10.9.9.8:7777'];
const ORIGIN = 'https://sbx-0.example.test:8443';

type Answer = { status: number; body: Record<string, unknown>; claim: ClaimBody | undefined };

/** One world's claims: an HTTP claim of its pool, what its nodes hold for a claimRef, the pipeline's counters. */
function claimsOf(pool: string, get: () => { world: TestWorld; cp: ControlPlane; ns: string; caller: string }) {
  const claim = async (claimRef: string): Promise<Answer> => {
    const { cp, ns, caller } = get();
    const answer = await callClaims(cp.claimsUrl ?? '', 'POST', `/v1/namespaces/${ns}/claims`, caller, {
      warmPool: pool,
      claimRef,
      ttlSeconds: 600,
    });
    return { status: answer.status, body: answer.body, claim: claimBodySchema.safeParse(answer.body).data };
  };
  /** The sandboxes the nodes' own fake-sandboxd hold for one HTTP claimRef of this spec. */
  const heldFor = async (claimRef: string) => {
    const { world, ns } = get();
    return (await claimsOnNodes(world.fleet, TOKEN)).filter((c) => {
      const owner = parseNodeClaimRef(c.claimRef);
      return owner?.door === 'http' && owner.namespace === ns && owner.claimRef === claimRef;
    });
  };
  /** warmpool_controlplane_node_claims_total for one outcome. */
  const nodeClaims = async (outcome: 'redirected' | 'unreachable'): Promise<number> => {
    const line = new RegExp(`warmpool_controlplane_node_claims_total\\{outcome="${outcome}"\\} (\\d+)`).exec(
      await get().cp.registry.metrics(),
    );
    return Number(line?.[1] ?? 0);
  };
  return { claim, heldFor, nodeClaims };
}

/** The owner address a node's agent publishes in its NodeInventory. */
async function publishedOwnerAddr(world: TestWorld, node: string): Promise<string | undefined> {
  const inventory = JSON.parse(await kubectl(world.cluster, ['get', 'nodeinventory', node, '-o', 'json'])) as {
    status?: { ownerAddr?: string };
  };
  return inventory.status?.ownerAddr;
}

/** A claim straight at a node's fake-sandboxd (root token), past its agent and the control plane. */
async function claimAtSandboxd(node: FleetNode, body: Record<string, unknown>): Promise<Record<string, unknown>> {
  const res = await fetch(`${node.sandboxdUrl}/v1/claim`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as Record<string, unknown>;
}

/** A world with one pool of 4 warm over two nodes, a claimer, and a leader with a 1 s node-call timeout. */
async function meetWorld(
  name: string,
  fleet: NonNullable<Parameters<typeof testWorld>[0]['fleet']>,
  settings: { claimTimeoutMs: number; warm: number[] },
): Promise<{ world: TestWorld; cp: ControlPlane; ns: string; caller: string }> {
  const world = await testWorld({ name, token: TOKEN, redis: true, fleet });
  const ns = await world.namespace(name);
  const caller = await serviceAccountToken(world.cluster, ns, 'claimer', ['create', 'get', 'update', 'delete']);
  await apply(world.cluster, template(ns, 'tpl', IMAGE), warmPool(ns, 'meet', 'tpl', 4));
  const cp = await world.leader('default', {
    claims: world.claimsOptions({ settings: { claimTimeoutMs: settings.claimTimeoutMs, nodeTimeoutMs: 1_000 } }),
  });
  await eventually(async () => (await world.fleet.warmOf(KEY)).every((w, i) => w === settings.warm[i]), {
    what: `warm ${settings.warm.join(', ')} on the nodes`,
    timeoutMs: 30_000,
  });
  await eventually(() => claimsReady(cp), { what: 'the replica ready to claim' });
  return { world, cp, ns, caller };
}

describe("claims against fake-sandboxd in the real daemon's variants", () => {
  let world: TestWorld;
  let cp: ControlPlane;
  let ns: string;
  let caller: string;
  let node0: FleetNode;
  let node1: FleetNode;
  const { claim, heldFor, nodeClaims } = claimsOf('meet', () => ({ world, cp, ns, caller }));

  /**
   * Claims (new claimRefs) until one is served by `node`; every claim on the way is served somewhere. `timedOut`: the
   * served claim's node call went silent (a 1 s timeout), so it was found by a lookup.
   */
  const claimOn = async (node: string, prefix: string): Promise<{ ref: string; answer: Answer; timedOut: boolean }> => {
    for (let i = 0; i < 20; i++) {
      const ref = `${prefix}-${i}`;
      const silentBefore = await nodeClaims('unreachable');
      const answer = await claim(ref);
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      const timedOut = (await nodeClaims('unreachable')) > silentBefore;
      if (answer.claim?.node === node) return { ref, answer, timedOut };
    }
    throw new Error(`20 claims and none placed on ${node}`);
  };

  beforeAll(async () => {
    // node-0: a mesh member naming itself by a full origin, whose rows predate claimed_at. node-1: an older daemon
    // (no claim_ref filter) without an advertise address, whose claims answer after 2.5 s (past the 1 s node call).
    ({ world, cp, ns, caller } = await meetWorld(
      'cp-variants',
      {
        count: 2,
        capacity: 40,
        nodeSandboxdArgs: {
          0: ['--redirect-peers', MESH_PEERS.join(','), '--client-advertise', ORIGIN, '--omit-claimed-at'],
          1: ['--older-daemon', '--unadvertised', '--warm-claim-ms', '2500'],
        },
      },
      { claimTimeoutMs: 10_000, warm: [2, 2] },
    ));
    [node0, node1] = world.fleet.nodes as [FleetNode, FleetNode];
  }, 120_000);

  afterAll(() => world?.close());

  it(
    'a mesh node never stalls a claim: it serves what its agent forwards (no_redirect), nothing is redirected',
    { timeout: 120_000 },
    async () => {
      expect((await node0.info()).peers).toEqual(MESH_PEERS);
      // Asked without no_redirect, the node redirects a warm miss (a key it has no pool for) ...
      expect(await claimAtSandboxd(node0, { template: 'registry.test/elsewhere:1' })).toEqual({ redirect: MESH_PEERS });
      // ... through its agent, it serves it.
      const direct = await fetch(`${node0.agentUrl}/v1/claim`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ template: 'registry.test/elsewhere:1', claim_ref: 'direct/miss' }),
      });
      expect(direct.status).toBe(200);
      expect(((await direct.json()) as { id?: string }).id).toMatch(/^sb_/);
      // And the pipeline's claims placed there are served by the call itself: never silent, so never looked up.
      const { answer, timedOut } = await claimOn('node-0', 'mesh');
      expect(answer.claim?.id).toMatch(/^sb_/);
      expect(timedOut).toBe(false);
      expect(await nodeClaims('redirected')).toBe(0);
    },
  );

  it(
    'reduces an owner_addr given as a full https origin to host:port, in the grant and in the inventory',
    { timeout: 120_000 },
    async () => {
      const { answer } = await claimOn('node-0', 'url-owner');
      expect(answer.claim?.ownerAddr).toBe('sbx-0.example.test:8443');
      await eventually(async () => (await publishedOwnerAddr(world, 'node-0')) === 'sbx-0.example.test:8443', {
        what: 'the normalized owner address published',
      });
    },
  );

  it(
    'an older daemon (claim_ref filter ignored) never loses another claim: a slow claim is found by its own claim_ref',
    { timeout: 120_000 },
    async () => {
      for (let i = 0; i < 3; i++) await claimAtSandboxd(node1, { template: IMAGE, claim_ref: `someone-else/${i}` });
      const before = (await claimsOnNodes(world.fleet, TOKEN)).filter((c) => c.node === 'node-1');
      expect(before.length).toBeGreaterThanOrEqual(3);
      // Answered after 2.5 s, the node call's timeout is 1 s: the claimer looks the claim up by its claim_ref, and the
      // node answers every claim it holds.
      const { ref, answer, timedOut } = await claimOn('node-1', 'older');
      expect(timedOut).toBe(true);
      expect((await heldFor(ref)).map((c) => c.id)).toEqual([answer.claim?.id]);
      const after = (await claimsOnNodes(world.fleet, TOKEN)).map((c) => c.id);
      for (const held of before) expect(after).toContain(held.id);
      // Without an advertise address the grant names no owner (its agent never learned one): still a grant.
      expect(answer.claim?.ownerAddr).toBe('');
      expect(await publishedOwnerAddr(world, 'node-1')).toBeUndefined();
    },
  );

  it("the control plane's own lookup keeps only the claim_ref asked for, whatever the daemon answers", async () => {
    // The fake speaks the list as an agent does: ask it directly, without the agent's filter in between.
    const address = `127.0.0.1:${node1.sandboxdPort}`;
    const raw = await fetch(`http://${address}/v1/sandboxes?claim_ref=nobody`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    const everything = ((await raw.json()) as { sandboxes: unknown[] }).sandboxes;
    expect(everything.length).toBeGreaterThanOrEqual(4);
    const agents = new AgentClient({ token: () => TOKEN, logger: silentLogger });
    try {
      const all = await agents.list(address);
      expect(all).toHaveLength(everything.length);
      const one = all.find((row) => row.claim_ref !== undefined) ?? all[0];
      const found = await agents.findByClaimRef(address, one?.claim_ref ?? '');
      expect(found.map((row) => row.id)).toEqual([one?.id]);
      expect(await agents.findByClaimRef(address, 'http:nobody')).toEqual([]);
    } finally {
      await agents.close();
    }
  });

  it('reads node lists without claimed_at (pipeline and janitor): every row passes, nothing is skipped', async () => {
    const address = `127.0.0.1:${node0.sandboxdPort}`;
    const held = (await claimsOnNodes(world.fleet, TOKEN)).filter((c) => c.node === 'node-0').map((c) => c.id);
    expect(held.length).toBeGreaterThanOrEqual(2);
    const warnings: unknown[] = [];
    const logger = { ...silentLogger, warn: (msg: string, fields?: unknown) => warnings.push({ msg, fields }) };
    const agents = new AgentClient({ token: () => TOKEN, logger });
    try {
      const rows = await agents.list(address);
      expect(rows.map((r) => r.id).sort()).toEqual([...held].sort());
      expect(rows.every((r) => r.claimed_at === undefined)).toBe(true);
    } finally {
      await agents.close();
    }
    const janitorsClient = new AgentClient({ token: () => TOKEN, timeoutMs: 5_000, logger });
    const janitorsView = await nodeClaimsOf(janitorsClient)
      .list({ node: 'node-0', address }, AbortSignal.timeout(5_000))
      .finally(() => janitorsClient.close());
    expect(janitorsView.map((r) => r.id).sort()).toEqual([...held].sort());
    expect(warnings).toEqual([]);
  });
});

describe('answers the fake cannot give, through the stand-in (SandboxdVariant)', () => {
  let world: TestWorld;
  let cp: ControlPlane;
  let ns: string;
  let caller: string;
  let node0: FleetNode;
  let node1: FleetNode;
  const { claim, nodeClaims } = claimsOf('meet', () => ({ world, cp, ns, caller }));

  beforeAll(async () => {
    ({ world, cp, ns, caller } = await meetWorld(
      'cp-meet',
      { count: 2, capacity: 40, variants: { 0: {}, 1: {} } },
      { claimTimeoutMs: 10_000, warm: [2, 2] },
    ));
    [node0, node1] = world.fleet.nodes as [FleetNode, FleetNode];
  }, 120_000);

  afterAll(() => world?.close());

  // A mesh node redirects only a claim without no_redirect, which warmpool never sends: a redirect reaching the
  // control plane is a daemon that ignores the field, which the fake (as the real daemon) never is.
  it('takes a redirect answer as a refusal: the claim goes to another node at once, nothing is looked up', async () => {
    node0.variant!.behaviour = { redirectClaims: ELSEWHERE };
    node1.variant!.behaviour = {};
    // Placement picks among both nodes: claim until node-0 was asked at least once (and answered a redirect).
    for (let i = 0; i < 20 && (i < 3 || (await nodeClaims('redirected')) === 0); i++) {
      const answer = await claim(`redirect-${i}`);
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      expect(answer.claim?.node).toBe('node-1');
    }
    expect(await nodeClaims('redirected')).toBeGreaterThan(0);
    // A redirect claimed nothing: no lookup by claim_ref (the old ≈2 s stall), and nothing on node-0.
    expect(node0.variant!.calls.filter((call) => call.includes('claim_ref='))).toEqual([]);
    expect(node0.variant!.claimBodies.every((b) => (b as { no_redirect?: unknown }).no_redirect === true)).toBe(true);
    expect((await claimsOnNodes(world.fleet, TOKEN)).filter((c) => c.node === 'node-0')).toEqual([]);
  });

  // The fake's advertise address is fixed for its life (--unadvertised from the start: nothing to learn); fields of
  // promoted templates, volumes and newer daemons it never adds.
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
    await eventually(async () => (await publishedOwnerAddr(world, 'node-0')) === advertised, {
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

  // Every row the fake lists is whole and has only its own fields.
  it('reads node lists row by row (pipeline and janitor): extra fields pass, a row without an id is skipped and logged once', async () => {
    const broken = { key: { template: IMAGE, net: 'none', size: 'small' }, deadline: '2030-01-01T00:00:00Z' };
    node0.variant!.behaviour = { rowExtras: { hibernated: false, volumes: [] }, extraRows: [broken] };
    const address = node0.variant!.url.replace('http://', '');
    const held = (await claimsOnNodes(world.fleet, TOKEN)).filter((c) => c.node === 'node-0').map((c) => c.id);
    const warnings: unknown[] = [];
    const logger = { ...silentLogger, warn: (msg: string, fields?: unknown) => warnings.push({ msg, fields }) };
    const agents = new AgentClient({ token: () => TOKEN, logger });
    try {
      for (let i = 0; i < 2; i++) {
        const rows = await agents.list(address);
        expect(rows.map((r) => r.id).sort()).toEqual([...held].sort());
      }
    } finally {
      await agents.close();
    }
    const janitorsClient = new AgentClient({ token: () => TOKEN, timeoutMs: 5_000, logger });
    const janitorsView = await nodeClaimsOf(janitorsClient)
      .list({ node: 'node-0', address }, AbortSignal.timeout(5_000))
      .finally(() => janitorsClient.close());
    expect(janitorsView.map((r) => r.id).sort()).toEqual([...held].sort());
    // One line from the pipeline's client (twice listed), one from the janitor's.
    expect(warnings).toHaveLength(2);
  });
});

/**
 * Slow claims on fake-sandboxd: node-0 provisions a warm miss (and refills) in `coldBootMs`; node-1 boots one warm
 * sandbox ever (--refill-rate 0), then serves cold at once. The spec takes node-0's warm sandboxes straight at its
 * sandboxd and claims at once: placement still counts them (the next report is ≤ 0.5 s away), so the claim goes to
 * node-0 on the warm tier, whose 1 s call times out while node-0 boots it. When a fresher report came first, the
 * claim went to node-1, and the spec tries again.
 */
function slowClaims(name: string, coldBootMs: number, claimTimeoutMs: number) {
  const state = {} as { world: TestWorld; cp: ControlPlane; ns: string; caller: string };
  const claims = claimsOf('meet', () => state);

  beforeAll(async () => {
    Object.assign(
      state,
      await meetWorld(
        name,
        {
          count: 2,
          capacity: 40,
          nodeSandboxdArgs: {
            0: ['--cold-boot-ms', String(coldBootMs), '--refill-rate', '1'],
            1: ['--refill-rate', '0'],
          },
        },
        { claimTimeoutMs, warm: [2, 1] },
      ),
    );
  }, 120_000);

  afterAll(() => state.world?.close());

  /** The first answer of a claim placed on node-0 while its warm sandboxes were just taken. */
  const claimWhileNode0Boots = async (prefix: string): Promise<{ ref: string; answer: Answer }> => {
    const node0 = state.world.fleet.nodes[0] as FleetNode;
    for (let attempt = 0; attempt < 6; attempt++) {
      await eventually(async () => (await node0.warm()).get(KEY) === 2, {
        what: 'node-0 refilled',
        timeoutMs: 4 * coldBootMs + 5_000,
      });
      // Long enough for every report to say so.
      await sleep(1_200);
      const silentBefore = await claims.nodeClaims('unreachable');
      for (let i = 0; i < 2; i++)
        await claimAtSandboxd(node0, { template: IMAGE, claim_ref: `other/${prefix}-${attempt}-${i}` });
      const ref = `${prefix}-${attempt}`;
      const answer = await claims.claim(ref);
      const timedOut = (await claims.nodeClaims('unreachable')) > silentBefore;
      if (timedOut) return { ref, answer };
      // Placed elsewhere by a fresher report: served there, once.
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      expect(answer.claim?.node).toBe('node-1');
      expect((await claims.heldFor(ref)).map((c) => c.id)).toEqual([answer.claim?.id]);
    }
    throw new Error('6 attempts and no claim placed on node-0 while it booted');
  };

  return { state, claims, claimWhileNode0Boots };
}

describe('slow claims: a node call that times out while the node boots the claim (--cold-boot-ms 3000)', () => {
  const { claims, claimWhileNode0Boots } = slowClaims('cp-slow', 3_000, 6_000);

  it(
    'a 3 s cold claim with a 1 s warm-claim timeout yields exactly one sandbox, on the node that booted it',
    { timeout: 120_000 },
    async () => {
      const { ref, answer } = await claimWhileNode0Boots('cold-3s');
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      expect(answer.claim?.node).toBe('node-0');
      const held = await claims.heldFor(ref);
      expect(held.map((c) => c.id)).toEqual([answer.claim?.id]);
      expect(held[0]?.node).toBe('node-0');
    },
  );
});

describe('slow claims: a claim that lands after its caller gave up (--cold-boot-ms 8000, callers wait 6 s)', () => {
  const { claims, claimWhileNode0Boots } = slowClaims('cp-late', 8_000, 6_000);

  it('is found by the retry with the same claimRef, once', { timeout: 120_000 }, async () => {
    const { ref, answer: first } = await claimWhileNode0Boots('late');
    expect(first.status, JSON.stringify(first.body)).toBe(504);
    expect(first.body).toMatchObject({ reason: 'Timeout' });
    await eventually(async () => (await claims.heldFor(ref)).length === 1, {
      what: 'the late claim to land',
      timeoutMs: 10_000,
    });
    const again = await claims.claim(ref);
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    const held = await claims.heldFor(ref);
    expect(held.map((c) => c.id)).toEqual([again.claim?.id]);
    expect(held[0]?.node).toBe('node-0');
  });
});

describe('a slow PUT /v1/pools (sandboxd answers once the VMs it trims are gone: --trim-ms-per-vm 3000)', () => {
  let world: TestWorld;

  beforeAll(async () => {
    world = await testWorld({
      name: 'cp-slow-put',
      token: TOKEN,
      // The fake logs every pool set it applies (info).
      fleet: { count: 1, nodeSandboxdArgs: { 0: ['--trim-ms-per-vm', '3000', '--log-level', 'info'] } },
    });
  }, 120_000);

  afterAll(() => world?.close());

  it(
    'is waited for, once per change: no resend storm, and the node stays in placement',
    { timeout: 60_000 },
    async () => {
      const node = world.fleet.nodes[0] as FleetNode;
      // Probes keep the specs' 1 s timeout; pushes have the default, generous one.
      const cp = await world.leader(await world.namespace('warmpool-system'));
      const ns = await world.namespace('slowput');
      const puts = (): number => (node.sandboxd?.logLines() ?? []).filter((line) => line['msg'] === 'pools set').length;
      await apply(world.cluster, template(ns, 'tpl', IMAGE), warmPool(ns, 'pool', 'tpl', 3));
      await eventually(async () => (await node.warm()).get(KEY) === 3, { what: '3 warm on the node' });
      const before = puts();
      // Lowering the target trims 2 warm VMs: the node applies it at once and answers 3 s later.
      await apply(world.cluster, warmPool(ns, 'pool', 'tpl', 1));
      await eventually(async () => (await node.targets()).get(KEY) === 1, { what: 'the new target' });
      for (let i = 0; i < 8; i++) {
        await sleep(500);
        // A slow answer is no failure: no node leaves placement as failing.
        expect(
          await metricSum(cp, 'warmpool_controlplane_nodes', { state: 'failing' }),
          `after ${(i + 1) * 500} ms`,
        ).toBe(0);
      }
      // One push for the change (a slow answer is no failure, and nothing is resent while it is under way).
      expect(puts() - before).toBe(1);
      expect(await cp.registry.metrics()).not.toMatch(/warmpool_controlplane_set_pools_errors_total\{[^}]*\} [1-9]/);
    },
  );
});

// The fake, as the daemon, echoes no pool settings (GET /v1/info has none): the bodies the agent forwards are
// recorded by the stand-in.
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
