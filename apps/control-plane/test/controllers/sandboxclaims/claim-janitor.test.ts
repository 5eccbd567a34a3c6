// The claim janitor's rules, in process: which node claims it releases (a
// SandboxClaim's sandbox whose uid is positively gone), which it never touches
// (HTTP and federated claims, rows warmpool did not write), and which it
// records again in the claim index (whatever live claim the index lacks: the
// nodes are the truth); and how a sweep ends the index's recovery after a
// loss. Nodes and the claim index are scripted here; the end-to-end sweep
// over real agents and Redis is in sandboxclaims.test.ts.
import { createHash } from 'node:crypto';
import {
  formatNodeClaimRef,
  parseNodeClaimRef,
  type ClaimRecord,
  type SandboxClaim,
  type SandboxRow,
  type TolerantSandboxRow,
} from '@warmpool/api';
import { eventually, ManualClock } from '@warmpool/harness';
import { Lister, ObjectStore } from '@warmpool/kube';
import { silentLogger } from '@warmpool/runtime';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { ClaimJanitor, type ClaimRepair, type NodeClaims } from '../../../src/controllers/sandboxclaims/janitor.js';
import { SandboxClaimMetrics } from '../../../src/controllers/sandboxclaims/metrics.js';
import type { AgentAddress } from '../../../src/nodes/addresses.js';
import { ClaimFailure, type ClaimScope } from '../../../src/provisioning/claim-service.js';

const clock = new ManualClock();
const OLD = clock.iso(-120_000);
const YOUNG = clock.iso(-5_000);
const DIGEST = '0123456789abcdef0123456789abcdef';

/** A SandboxClaim uid (hex, as the node claim_ref requires), one per seed. */
const uidOf = (seed: string): string => createHash('sha256').update(seed).digest('hex').slice(0, 32);
const crd = (name: string, uid = uidOf(name)): string =>
  formatNodeClaimRef({ door: 'crd', namespace: 'ns', name, uid });
const http = (claimRef: string): string =>
  formatNodeClaimRef({ door: 'http', namespace: 'ns', claimRef, pool: 'p', owner: DIGEST });
const fed = (peer: string, claimRef: string): string =>
  formatNodeClaimRef({ door: 'fed', peer, namespace: 'ns', claimRef, pool: 'p' });

function row(id: string, claimRef: string | undefined, claimedAt = OLD): SandboxRow {
  return {
    id,
    key: { template: 'img', net: 'none', size: 'small' },
    deadline: clock.iso(600_000),
    claimed_at: claimedAt,
    ...(claimRef === undefined ? {} : { claim_ref: claimRef }),
  };
}

/** The record a node's row rebuilds (what ClaimDirectory.recordOf answers). */
function recordOfRow(node: string, r: TolerantSandboxRow): ClaimRecord | undefined {
  const owner = parseNodeClaimRef(r.claim_ref);
  if (owner === undefined) return undefined;
  return {
    id: r.id,
    token: 't',
    deadline: r.deadline,
    ownerAddr: `${node}:2`,
    node,
    namespace: owner.namespace,
    warmPool: 'p',
    claimRef: owner.door === 'crd' ? owner.name : owner.claimRef,
    tier: 'warm',
    door: owner.door,
    owner: owner.door === 'crd' ? owner.uid : owner.door === 'http' ? owner.owner : owner.peer,
    ...(owner.door === 'fed' ? { peer: owner.peer } : {}),
  };
}

const inScope = (scope: ClaimScope, r: ClaimRecord): boolean =>
  r.namespace === scope.namespace && r.door === scope.door && r.peer === scope.peer;

/** A scripted claim index: records by scope, what was recorded and dropped, and a recovery to end. */
class FakeIndex implements Pick<ClaimRepair['index'], 'lookup' | 'record' | 'drop' | 'recovering' | 'endRecovery'> {
  records: ClaimRecord[] = [];
  dropped: string[] = [];
  recordedBy: string[] = [];
  down = false;
  recovery: { marker: string; since: number } | undefined;
  endedWith: string[] = [];

  lookup(scope: ClaimScope, idOrClaimRef: string): Promise<ClaimRecord | undefined> {
    if (this.down) return Promise.reject(new ClaimFailure('Unavailable', 'redis down'));
    return Promise.resolve(
      this.records.find((r) => inScope(scope, r) && (r.id === idOrClaimRef || r.claimRef === idOrClaimRef)),
    );
  }

  record(record: ClaimRecord, job: string): Promise<{ ok: true } | { ok: false; holder: ClaimRecord }> {
    if (this.down) return Promise.reject(new ClaimFailure('Unavailable', 'redis down'));
    const holder = this.records.find(
      (r) =>
        inScope({ namespace: record.namespace, door: record.door, peer: record.peer }, r) &&
        r.claimRef === record.claimRef,
    );
    if (holder !== undefined && holder.id !== record.id) return Promise.resolve({ ok: false, holder });
    this.records = [...this.records.filter((r) => r !== holder), record];
    this.recordedBy.push(`${record.id}:${job}`);
    return Promise.resolve({ ok: true });
  }

  drop(record: ClaimRecord): Promise<void> {
    this.records = this.records.filter((r) => r.id !== record.id);
    this.dropped.push(record.id);
    return Promise.resolve();
  }

  recovering(): Promise<{ marker: string; since: number } | undefined> {
    return Promise.resolve(this.recovery);
  }

  endRecovery(marker: string): Promise<boolean> {
    this.endedWith.push(marker);
    if (this.recovery?.marker !== marker) return Promise.resolve(false);
    this.recovery = undefined;
    return Promise.resolve(true);
  }
}

interface Setup {
  rows: Record<string, SandboxRow[]>;
  /** Records the index holds at the start (rebuilt from these rows of node 'a'). */
  indexed?: SandboxRow[];
  /** SandboxClaims in the cache: their name, and uid (default uidOf(name)). */
  claims?: Array<string | { name: string; uid: string }>;
  lookupFails?: boolean;
  unreachable?: string[];
  synced?: boolean;
  clock?: ManualClock;
  intervalMs?: number;
  recoveryPollMs?: number;
  settleMs?: number;
  /** Each node list waits for this first (a slow node). */
  listGate?: () => Promise<void>;
}

function janitorFor(setup: Setup): {
  janitor: ClaimJanitor;
  index: FakeIndex;
  releasedOnNode: string[];
  listed: string[];
  rebuilt: string[];
  secretsDeleted: string[];
} {
  const releasedOnNode: string[] = [];
  const secretsDeleted: string[] = [];
  const listed: string[] = [];
  const rebuilt: string[] = [];
  const store = new ObjectStore<SandboxClaim>();
  for (const claim of setup.claims ?? []) {
    const { name, uid } = typeof claim === 'string' ? { name: claim, uid: uidOf(claim) } : claim;
    store.upsert({ metadata: { namespace: 'ns', name, uid }, spec: { warmPoolRef: { name: 'p' } } });
  }
  const index = new FakeIndex();
  for (const r of setup.indexed ?? []) {
    const record = recordOfRow('a', r);
    if (record !== undefined) index.records.push(record);
  }
  index.down = setup.lookupFails ?? false;
  const nodeClaims: NodeClaims = {
    list: async (agent: AgentAddress) => {
      listed.push(agent.node);
      await setup.listGate?.();
      if (setup.unreachable?.includes(agent.node)) throw new Error('down');
      return setup.rows[agent.node] ?? [];
    },
    release: (agent: AgentAddress, id: string) => {
      releasedOnNode.push(`${agent.node}/${id}`);
      return Promise.resolve();
    },
  };
  const repair: ClaimRepair = {
    index,
    recordOf: (agent, r) => {
      rebuilt.push(r.id);
      return Promise.resolve(recordOfRow(agent.node, r));
    },
  };
  const janitor = new ClaimJanitor({
    repair,
    cache: new Lister(store),
    cacheSynced: () => setup.synced ?? true,
    agents: () => Object.keys(setup.rows).map((node) => ({ node, address: `${node}:1` })),
    nodeClaims,
    deleteSecret: (ref, owner) => {
      secretsDeleted.push(`${ref.namespace}/${ref.name}@${owner}`);
      return Promise.resolve();
    },
    metrics: new SandboxClaimMetrics(new Registry()),
    logger: silentLogger,
    clock: setup.clock ?? clock,
    graceMs: 60_000,
    ...(setup.intervalMs !== undefined ? { intervalMs: setup.intervalMs } : {}),
    ...(setup.recoveryPollMs !== undefined ? { recoveryPollMs: setup.recoveryPollMs } : {}),
    ...(setup.settleMs !== undefined ? { settleMs: setup.settleMs } : {}),
  });
  return { janitor, index, releasedOnNode, listed, rebuilt, secretsDeleted };
}

describe('the claim janitor', () => {
  it("releases, on its node, an old node claim of a SandboxClaim that does not exist, and deletes that claim's Secret", async () => {
    const { janitor, releasedOnNode, index, secretsDeleted } = janitorFor({ rows: { a: [row('sb_1', crd('gone'))] } });
    expect(await janitor.sweep()).toMatchObject({ nodes: 1, failedNodes: 0, released: 1, recorded: 0 });
    expect(releasedOnNode).toEqual(['a/sb_1']);
    expect(secretsDeleted).toEqual([`ns/gone@${uidOf('gone')}`]);
    // Released, not recorded again.
    expect(index.records).toEqual([]);
  });

  it("releases the sandbox of a SandboxClaim whose name lives on with another uid (a re-created namesake), and deletes only the gone uid's Secret", async () => {
    const { janitor, releasedOnNode, secretsDeleted } = janitorFor({
      rows: { a: [row('sb_1', crd('again', uidOf('first')))] },
      claims: [{ name: 'again', uid: uidOf('second') }],
    });
    expect((await janitor.sweep()).released).toBe(1);
    expect(releasedOnNode).toEqual(['a/sb_1']);
    expect(secretsDeleted).toEqual([`ns/again@${uidOf('first')}`]);
  });

  it('drops from the index the record of an orphan it released on its node', async () => {
    const orphan = row('sb_1', crd('gone'));
    const { janitor, releasedOnNode, index } = janitorFor({ rows: { a: [orphan] }, indexed: [orphan] });
    expect(await janitor.sweep()).toMatchObject({ nodes: 1, failedNodes: 0, released: 1, recorded: 0 });
    expect(releasedOnNode).toEqual(['a/sb_1']);
    expect(index.dropped).toEqual(['sb_1']);
    expect(index.records).toEqual([]);
  });

  it('never releases an HTTP or federated claim, even one the index lacks: it records it again instead', async () => {
    const known = row('sb_3', http('known'));
    const { janitor, releasedOnNode, index, secretsDeleted } = janitorFor({
      rows: { a: [row('sb_1', http('lost')), row('sb_2', fed('peer-a', 'lost')), known] },
      indexed: [known],
    });
    expect(await janitor.sweep()).toMatchObject({ nodes: 1, failedNodes: 0, released: 0, recorded: 2 });
    expect(releasedOnNode).toEqual([]);
    expect(secretsDeleted).toEqual([]);
    expect(index.dropped).toEqual([]);
    // Rebuilt records go in as no job's (job ''), each in its own door's key space.
    expect(index.recordedBy.sort()).toEqual(['sb_1:', 'sb_2:']);
    expect(await index.lookup({ namespace: 'ns', door: 'http' }, 'lost')).toMatchObject({ id: 'sb_1', owner: DIGEST });
    expect(await index.lookup({ namespace: 'ns', door: 'fed', peer: 'peer-a' }, 'lost')).toMatchObject({
      id: 'sb_2',
      peer: 'peer-a',
    });
    expect(await index.lookup({ namespace: 'ns', door: 'http' }, 'known')).toMatchObject({ id: 'sb_3' });
  });

  it('never releases a claim whose SandboxClaim exists with that uid, or one younger than the grace; records them again when the index lacks them', async () => {
    const { janitor, releasedOnNode, index } = janitorFor({
      rows: { a: [row('sb_1', crd('alive')), row('sb_2', crd('young'), YOUNG)] },
      claims: ['alive'],
    });
    expect(await janitor.sweep()).toMatchObject({ nodes: 1, failedNodes: 0, released: 0, recorded: 2 });
    expect(releasedOnNode).toEqual([]);
    expect(await index.lookup({ namespace: 'ns', door: 'crd' }, 'alive')).toMatchObject({
      id: 'sb_1',
      owner: uidOf('alive'),
    });
  });

  it('leaves alone the rows warmpool did not write: no claim_ref, an old <namespace>/<name> one, or anything else', async () => {
    const { janitor, releasedOnNode, index, rebuilt } = janitorFor({
      rows: { a: [row('sb_1', undefined), row('sb_2', 'ns/gone'), row('sb_3', 'not a ref'), row('sb_4', 'crd:ns/x')] },
    });
    expect(await janitor.sweep()).toMatchObject({ nodes: 1, failedNodes: 0, released: 0, recorded: 0 });
    expect(releasedOnNode).toEqual([]);
    expect(rebuilt).toEqual([]);
    expect(index.records).toEqual([]);
  });

  it('does not count a claim the index already knows, nor one the index refuses (another sandbox holds its claimRef)', async () => {
    const holder = row('sb_1', http('taken'));
    const { janitor, index } = janitorFor({
      rows: { a: [holder, row('sb_2', http('taken'))] },
      indexed: [holder],
    });
    expect(await janitor.sweep()).toMatchObject({ nodes: 1, failedNodes: 0, released: 0, recorded: 0 });
    expect(index.records.map((r) => r.id)).toEqual(['sb_1']);
  });

  it('releases nothing before the SandboxClaim cache has synced, but still records what the index lacks', async () => {
    const { janitor, releasedOnNode, index } = janitorFor({
      rows: { a: [row('sb_1', crd('gone'))] },
      synced: false,
    });
    expect(await janitor.sweep()).toMatchObject({ nodes: 1, failedNodes: 0, released: 0, recorded: 1 });
    expect(releasedOnNode).toEqual([]);
    expect(index.records.map((r) => r.id)).toEqual(['sb_1']);
  });

  it('while the index cannot be asked: still releases an orphan by its uid alone, and counts the node as not swept for the rest', async () => {
    const orphan = janitorFor({ rows: { a: [row('sb_1', crd('gone'))] }, lookupFails: true });
    expect(await orphan.janitor.sweep()).toMatchObject({ nodes: 1, failedNodes: 0, released: 1, recorded: 0 });
    expect(orphan.releasedOnNode).toEqual(['a/sb_1']);
    const live = janitorFor({
      rows: { a: [row('sb_2', http('live')), row('sb_3', crd('alive'))] },
      lookupFails: true,
      claims: ['alive'],
    });
    expect(await live.janitor.sweep()).toMatchObject({ nodes: 1, failedNodes: 1, released: 0, recorded: 0 });
    expect(live.releasedOnNode).toEqual([]);
  });

  it('sweeps the nodes that answer and counts the ones that do not, every release counted once', async () => {
    const rows: Record<string, SandboxRow[]> = {};
    for (let n = 0; n < 40; n++) rows[`n${n}`] = [row(`sb_${n}`, crd(`gone-${n}`))];
    const { janitor } = janitorFor({ rows, unreachable: ['n3', 'n7'] });
    expect(await janitor.sweep()).toMatchObject({ nodes: 40, failedNodes: 2, released: 38, recorded: 0 });
  });

  describe('after the index lost entries', () => {
    it('sweeps once node calls from before the loss have settled, records what the index lacks, and ends the recovery', async () => {
      const own = new ManualClock();
      const { janitor, index, listed } = janitorFor({
        rows: { a: [row('sb_1', http('lost'))] },
        clock: own,
        intervalMs: 3_600_000,
        recoveryPollMs: 5,
        settleMs: 2_500,
      });
      index.recovery = { marker: `${own.now()}:m1`, since: own.now() };
      janitor.start();
      try {
        await new Promise((resolve) => setTimeout(resolve, 50));
        // Within settleMs of the loss: a node call from before it may still land, so no sweep yet.
        expect(listed).toEqual([]);
        expect(index.recovery).toBeDefined();
        own.advance(2_500);
        await eventually(() => index.recovery === undefined, { what: 'the recovery ended', timeoutMs: 5_000 });
        expect(index.endedWith).toEqual([`${own.now() - 2_500}:m1`]);
        expect(index.records.map((r) => r.id)).toEqual(['sb_1']);
      } finally {
        await janitor.stop();
      }
    });

    it('does not end the recovery with a sweep that began before the loss settled: it sweeps again', async () => {
      const own = new ManualClock();
      let open: () => void = () => undefined;
      const gate = new Promise<void>((resolve) => (open = resolve));
      const { janitor, index, listed } = janitorFor({
        rows: { a: [row('sb_1', http('lost'))] },
        clock: own,
        intervalMs: 3_600_000,
        recoveryPollMs: 5,
        settleMs: 100,
        listGate: () => gate,
      });
      // A sweep under way (a slow node) when the index loses its keys.
      const early = janitor.sweep();
      await eventually(() => listed.length === 1, { what: 'the early sweep listing' });
      index.recovery = { marker: `${own.now()}:m1`, since: own.now() };
      own.advance(100);
      janitor.start();
      try {
        await new Promise((resolve) => setTimeout(resolve, 30));
        open();
        await early;
        await eventually(() => index.recovery === undefined, { what: 'the recovery ended', timeoutMs: 5_000 });
        // Ended by a sweep that listed the node after the loss, not by the early one.
        expect(listed).toEqual(['a', 'a']);
      } finally {
        await janitor.stop();
      }
    });

    it('does not end the recovery after a sweep that missed a node', async () => {
      const own = new ManualClock();
      const { janitor, index, listed } = janitorFor({
        rows: { a: [row('sb_1', http('lost'))], b: [] },
        unreachable: ['b'],
        clock: own,
        intervalMs: 3_600_000,
        recoveryPollMs: 5,
        settleMs: 0,
      });
      index.recovery = { marker: `${own.now()}:m1`, since: own.now() };
      janitor.start();
      try {
        await eventually(() => listed.filter((n) => n === 'b').length >= 2, {
          what: 'two recovery sweeps',
          timeoutMs: 5_000,
        });
        expect(index.endedWith).toEqual([]);
        expect(index.recovery).toBeDefined();
        expect(index.records.map((r) => r.id)).toEqual(['sb_1']);
      } finally {
        await janitor.stop();
      }
    });
  });
});
