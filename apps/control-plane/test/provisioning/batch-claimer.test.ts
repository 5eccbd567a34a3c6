// The batch claimer's exactly-once core, on a real Redis (the claim index and
// its Lua scripts) with scripted node agents and a placement over fixed
// snapshots: a fresh batch serves each claimRef once; a replay answers the
// sandbox served before (to its owner only) without asking a node; a job whose
// reservation vanished, or whose served claim another job took meanwhile,
// never leaves a second sandbox behind; while the index recovers from a loss
// the nodes are asked before anything is claimed; a node that cannot be
// asked keeps the reservation, so a retry asks it first; and a rerun of a
// killed job asks every node its first run asked (the job's progress, in
// BullMQ's hash of the job) even when Redis lost the reservations.
import {
  formatNodeClaimRef,
  type BatchClaim,
  type BatchJob,
  type BatchProgress,
  type BatchReply,
  type ClaimOutcome,
  type SandboxRow,
  batchProgressSchema,
} from '@warmpool/api';
import { sleep, startRedis, type TestRedis } from '@warmpool/harness';
import { silentLogger } from '@warmpool/runtime';
import { Job, Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { Registry } from 'prom-client';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { AgentClient, ClaimAnswer } from '../../src/agents/client.js';
import { BatchClaimer, type BatchJobHandle } from '../../src/provisioning/batch-claimer.js';
import { ClaimIndex } from '../../src/provisioning/claim-index.js';
import { ClaimWorker } from '../../src/provisioning/claim-worker.js';
import { RedisClose } from '../../src/provisioning/redis-close.js';
import type { ClaimScope } from '../../src/provisioning/claim-service.js';
import { ProvisioningMetrics, type ProvisioningReaders } from '../../src/provisioning/metrics.js';
import { Placement } from '../../src/provisioning/placement.js';
import type { NodeSnapshot } from '../../src/nodes/snapshots.js';

const KEY = { template: 'img', net: 'none', size: 'small' };
const KEY_ID = 'img|none|small';
const NAMESPACE = 'ns';
const POOL = 'py';
const HTTP: ClaimScope = { namespace: NAMESPACE, door: 'http' };
/** Two callers' owner marks (HTTP owner digests). */
const ALICE = '0123456789abcdef0123456789abcdef';
const BOB = 'fedcba9876543210fedcba9876543210';
const NODE_TIMEOUT_MS = 50;
const noReaders: ProvisioningReaders = {
  jobCounts: () => Promise.resolve({ waiting: 0, active: 0 }),
  recovering: () => Promise.resolve(false),
};

function snapshot(name: string, warm: number): NodeSnapshot {
  return {
    name,
    address: `${name}:7071`,
    stamp: 's1',
    warm: new Map([[KEY_ID, warm]]),
    claimed: 0,
    coldRoom: Infinity,
  };
}

function claim(claimRef: string, owner = ALICE): BatchClaim {
  return { claimRef, ttlSeconds: 60, door: 'http', owner, generated: false };
}

/** What a node records for an HTTP claim of the pool (see libs/api node-claim-ref). */
function nodeRefOf(claimRef: string, owner = ALICE): string {
  return formatNodeClaimRef({ door: 'http', namespace: NAMESPACE, claimRef, pool: POOL, owner });
}

/** A batch job handle; `progress` is what an earlier run recorded. */
function job(
  id: string,
  claims: BatchClaim[],
  progress?: BatchProgress,
  deadline = Date.now() + 10_000,
): BatchJobHandle {
  const data: BatchJob = {
    replyTo: 'replica-1',
    namespace: NAMESPACE,
    warmPool: POOL,
    key: KEY,
    deadline,
    claims,
  };
  return { id, data, progress, progressKey: `test:job:${id}` };
}

/** The verbs BatchClaimer calls on the node agents. */
type NodeAgents = Pick<AgentClient, 'claim' | 'findByClaimRef' | 'list' | 'get' | 'release'>;

interface Call {
  verb: 'claim' | 'findByClaimRef' | 'list' | 'get' | 'release';
  address: string;
  /** The claim_ref of a claim or a find, the sandbox id of a get or a release. */
  arg?: string;
}

/**
 * Node agents with a script: each node holds its claimed sandboxes as rows
 * (with their tokens); by default a claim serves a new one. A spec replaces
 * `onClaim` to refuse, to go silent, or to change Redis while the node works,
 * and marks nodes `unreadable` whose reads fail.
 */
class ScriptedNodes implements NodeAgents {
  readonly calls: Call[] = [];
  readonly held = new Map<string, SandboxRow[]>();
  readonly unreadable = new Set<string>();
  onClaim: (address: string, claimRef: string) => Promise<ClaimAnswer> = (address, claimRef) =>
    Promise.resolve(this.serve(address, claimRef));
  #next = 0;

  /** Serves a new sandbox on the node under the claim_ref. */
  serve(address: string, claimRef: string): ClaimAnswer {
    const row = this.hold(address, claimRef);
    return {
      ok: true,
      claim: { id: row.id, token: row.token ?? '', deadline: row.deadline, ownerAddr: `${address}-sandboxes` },
    };
  }

  /** Puts a claimed sandbox on the node (as a claim served earlier, or by another control plane run). */
  hold(address: string, claimRef: string): SandboxRow {
    const n = ++this.#next;
    const row: SandboxRow = {
      id: `sb_${n}`,
      key: KEY,
      deadline: new Date(Date.now() + 60_000).toISOString(),
      claimed_at: new Date().toISOString(),
      claim_ref: claimRef,
      token: `token-${n}`,
    };
    this.held.set(address, [...(this.held.get(address) ?? []), row]);
    return row;
  }

  callsOf(verb: Call['verb']): Call[] {
    return this.calls.filter((c) => c.verb === verb);
  }

  claim(address: string, _key: unknown, _ttlSeconds: number, claimRef: string): Promise<ClaimAnswer> {
    this.calls.push({ verb: 'claim', address, arg: claimRef });
    return this.onClaim(address, claimRef);
  }

  findByClaimRef(address: string, claimRef: string): Promise<SandboxRow[]> {
    this.calls.push({ verb: 'findByClaimRef', address, arg: claimRef });
    return this.#read(address, () => this.#rows(address).filter((row) => row.claim_ref === claimRef));
  }

  list(address: string): Promise<SandboxRow[]> {
    this.calls.push({ verb: 'list', address });
    return this.#read(address, () => this.#rows(address));
  }

  get(address: string, id: string): Promise<SandboxRow | undefined> {
    this.calls.push({ verb: 'get', address, arg: id });
    return this.#read(address, () => this.held.get(address)?.find((row) => row.id === id));
  }

  release(address: string, id: string): Promise<boolean> {
    this.calls.push({ verb: 'release', address, arg: id });
    const rows = this.held.get(address) ?? [];
    this.held.set(
      address,
      rows.filter((row) => row.id !== id),
    );
    return Promise.resolve(rows.some((row) => row.id === id));
  }

  /** Lists never carry tokens. */
  #rows(address: string): SandboxRow[] {
    return (this.held.get(address) ?? []).map(({ token: _token, ...row }) => row);
  }

  #read<T>(address: string, answer: () => T): Promise<T> {
    if (this.unreadable.has(address)) return Promise.reject(new Error(`connect ECONNREFUSED ${address}`));
    return Promise.resolve(answer());
  }
}

function successOf(outcome: ClaimOutcome | undefined): Extract<ClaimOutcome, { ok: true }> {
  if (outcome?.ok !== true) throw new Error(`expected a served claim, got ${JSON.stringify(outcome)}`);
  return outcome;
}

describe('BatchClaimer (real Redis, scripted nodes)', () => {
  let server: TestRedis;
  let redis: Redis;
  let connections: Redis[] = [];
  let index: ClaimIndex;
  let agents: ScriptedNodes;
  let dead: Set<string>;

  /** An index on a connection of its own, made once that connection is ready (the index checks the server then). */
  async function freshIndex(): Promise<ClaimIndex> {
    const connection = new Redis(server.url);
    connections.push(connection);
    await new Promise<void>((resolve, reject) => {
      connection.once('ready', resolve);
      connection.once('error', reject);
    });
    return new ClaimIndex(connection, { prefix: 'test:' });
  }

  function claimer(nodes: NodeSnapshot[], on: ClaimIndex = index): BatchClaimer {
    return new BatchClaimer({
      index: on,
      // The scripted stand-in implements every verb BatchClaimer calls; the options name the HTTP client class.
      agents: agents as unknown as AgentClient,
      placement: new Placement(
        () => nodes,
        () => 0,
      ),
      nodes: () => nodes.map((n) => ({ node: n.name, address: n.address })),
      ownerAddrOf: (node) => `${node}:7071-sandboxes`,
      jobAlive: (id) => Promise.resolve(!dead.has(id)),
      metrics: new ProvisioningMetrics(new Registry(), noReaders),
      logger: silentLogger,
      maxAttempts: 3,
      pollMs: 5,
      nodeTimeoutMs: NODE_TIMEOUT_MS,
    });
  }

  beforeAll(async () => {
    server = await startRedis();
    redis = new Redis(server.url);
  });
  afterAll(async () => {
    redis?.disconnect();
    await server?.stop();
  });
  beforeEach(async () => {
    await redis.flushall();
    index = await freshIndex();
    // An empty Redis starts the index in recovery; a completed repair sweep ends it.
    const recovering = await index.recovering();
    expect(await index.endRecovery(recovering?.marker ?? '')).toBe(true);
    agents = new ScriptedNodes();
    dead = new Set();
  });
  afterEach(() => {
    for (const connection of connections) connection.disconnect();
    connections = [];
  });

  describe('a fresh batch', () => {
    it('serves every claim once, records it under its scope, and answers it fresh', async () => {
      const nodes = [snapshot('a', 5)];
      const emitted: ClaimOutcome[] = [];
      const outcomes = await claimer(nodes).serve(job('job-1', [claim('one'), claim('two')]), (o) => emitted.push(o));

      expect(agents.callsOf('claim')).toEqual([
        { verb: 'claim', address: 'a:7071', arg: nodeRefOf('one') },
        { verb: 'claim', address: 'a:7071', arg: nodeRefOf('two') },
      ]);
      const [one, two] = outcomes.map(successOf);
      expect(one).toMatchObject({ claimRef: 'one', fresh: true, grant: { id: 'sb_1', token: 'token-1', node: 'a' } });
      expect(two).toMatchObject({ claimRef: 'two', fresh: true, grant: { id: 'sb_2', token: 'token-2', node: 'a' } });
      expect(one?.grant).toMatchObject({ door: 'http', owner: ALICE, namespace: NAMESPACE, warmPool: POOL });
      // Each recorded in the index under its front door's key space, where any replica finds it.
      expect(await index.peek(HTTP, 'one')).toEqual(one?.grant);
      expect(await index.lookup(HTTP, 'sb_2')).toEqual(two?.grant);
      expect(await index.peek({ namespace: NAMESPACE, door: 'crd' }, 'one')).toBeUndefined();
      expect(emitted).toEqual(outcomes);
    });

    it('gives a claimRef twice in the batch one sandbox, fresh only for its first position', async () => {
      const outcomes = await claimer([snapshot('a', 5)]).serve(
        job('job-1', [claim('twice'), claim('other'), claim('twice')]),
      );

      expect(agents.callsOf('claim').map((c) => c.arg)).toEqual([nodeRefOf('twice'), nodeRefOf('other')]);
      const [first, , again] = outcomes.map(successOf);
      expect(first).toMatchObject({ claimRef: 'twice', fresh: true });
      expect(again?.grant).toEqual(first?.grant);
      expect(again?.fresh).toBeUndefined();
    });
  });

  describe('a replay of a served claimRef', () => {
    it('by the same owner answers the same sandbox, not fresh, and asks no node', async () => {
      const nodes = [snapshot('a', 5)];
      const [served] = await claimer(nodes).serve(job('job-1', [claim('one')]));
      agents.calls.length = 0;

      const [replay] = await claimer(nodes).serve(job('job-2', [claim('one')]));

      expect(replay).toEqual({ ok: true, claimRef: 'one', grant: successOf(served).grant });
      expect(agents.calls).toEqual([]);
    });

    it('by another owner answers ClaimRefInUse, asks no node, and shows no token', async () => {
      const nodes = [snapshot('a', 5)];
      const [served] = await claimer(nodes).serve(job('job-1', [claim('one', ALICE)]));
      agents.calls.length = 0;

      const [replay] = await claimer(nodes).serve(job('job-2', [claim('one', BOB)]));

      expect(replay).toMatchObject({ ok: false, claimRef: 'one', reason: 'ClaimRefInUse' });
      expect(JSON.stringify(replay)).not.toContain(successOf(served).grant.token);
      expect(agents.calls).toEqual([]);
      // The owner's record stays.
      expect(await index.peek(HTTP, 'one')).toEqual(successOf(served).grant);
    });
  });

  it('claims nothing for a job that runs past its deadline (its callers have their answers): Timeout, no node asked', async () => {
    // An add that timed out while Redis was stopped, run once it answered again; or a job that waited out its deadline.
    const stale = job('job-late', [claim('late')], undefined, Date.now() - 1);
    const [outcome] = await claimer([snapshot('a', 5)]).serve(stale);
    expect(outcome).toMatchObject({ ok: false, claimRef: 'late', reason: 'Timeout' });
    expect(agents.callsOf('claim')).toEqual([]);
    expect(agents.held.size).toBe(0);
    // Its reservation is dropped: the client's retry with the claimRef is served as new.
    expect(await index.peek(HTTP, 'late')).toBeUndefined();
    const [retried] = await claimer([snapshot('a', 5)]).serve(job('job-retry', [claim('late')]));
    expect(successOf(retried)).toMatchObject({ claimRef: 'late', fresh: true });
  });

  it('does not ask another node once its reservation vanished (Redis flushed between rounds): Unavailable', async () => {
    // Node a is the only one with warm: asked first. It answers 429, and meanwhile Redis loses every key.
    const nodes = [snapshot('a', 1), snapshot('b', 0)];
    agents.onClaim = async () => {
      await redis.flushdb();
      return { ok: false, refusal: { kind: 'full', status: 429, message: 'full' } };
    };

    const [outcome] = await claimer(nodes).serve(job('job-1', [claim('one')]));

    expect(outcome).toMatchObject({ ok: false, claimRef: 'one', reason: 'Unavailable' });
    expect(agents.callsOf('claim')).toEqual([{ verb: 'claim', address: 'a:7071', arg: nodeRefOf('one') }]);
    expect(agents.held.get('b:7071') ?? []).toEqual([]);
    // Nothing written back over the loss.
    expect(await index.peek(HTTP, 'one')).toBeUndefined();
  });

  it('releases a sandbox served after another job took the claimRef over, and does not answer with it', async () => {
    const nodes = [snapshot('a', 5)];
    const other = { job: 'job-other', tried: [] };
    agents.onClaim = async (address, claimRef) => {
      // While the node serves it, the claimRef becomes another job's (Redis lost ours, the other one reserved it).
      await redis.set(index.refKey(HTTP, 'one'), JSON.stringify(other), 'PX', 60_000);
      return agents.serve(address, claimRef);
    };

    const [outcome] = await claimer(nodes).serve(job('job-1', [claim('one')]));

    expect(outcome).toMatchObject({ ok: false, claimRef: 'one', reason: 'Unavailable' });
    expect(JSON.stringify(outcome)).not.toContain('sb_1');
    expect(agents.callsOf('release')).toEqual([{ verb: 'release', address: 'a:7071', arg: 'sb_1' }]);
    expect(agents.held.get('a:7071')).toEqual([]);
    // The other job's reservation is left as it is, and no record names the extra sandbox.
    expect(await index.peek(HTTP, 'one')).toEqual(other);
    expect(await index.lookup(HTTP, 'sb_1')).toBeUndefined();
  });

  describe('while the index recovers from a loss', () => {
    async function recoveringIndex(): Promise<ClaimIndex> {
      // Another server than the one the index was written on (here: the server key lost).
      await redis.del('test:server');
      const again = await freshIndex();
      expect(await again.recovering()).toBeDefined();
      return again;
    }

    it('lists every node before a fresh claim, and adopts a row with its exact claim_ref instead of claiming', async () => {
      const nodes = [snapshot('a', 5), snapshot('b', 5)];
      const onB = agents.hold('b:7071', nodeRefOf('held'));
      agents.hold('b:7071', 'not-warmpool');
      const recovering = await recoveringIndex();

      const outcomes = await claimer(nodes, recovering).serve(job('job-1', [claim('held'), claim('new')]));

      // Every node listed first, then the one row fetched (for its token), then only the claim nobody held.
      expect(agents.calls.slice(0, 2).map((c) => `${c.verb} ${c.address}`)).toEqual(['list a:7071', 'list b:7071']);
      expect(agents.callsOf('get')).toEqual([{ verb: 'get', address: 'b:7071', arg: onB.id }]);
      expect(agents.callsOf('claim').map((c) => c.arg)).toEqual([nodeRefOf('new')]);
      const [held, fresh] = outcomes.map(successOf);
      expect(held).toEqual({
        ok: true,
        claimRef: 'held',
        grant: expect.objectContaining({ id: onB.id, token: onB.token, node: 'b', ownerAddr: 'b:7071-sandboxes' }),
      });
      expect(fresh).toMatchObject({ claimRef: 'new', fresh: true });
      expect(await recovering.peek(HTTP, 'held')).toEqual(held?.grant);
    });

    it('answers ClaimRefInUse for a row of the same claimRef with another owner, and claims nothing', async () => {
      const nodes = [snapshot('a', 5)];
      const bobs = agents.hold('a:7071', nodeRefOf('one', BOB));
      const recovering = await recoveringIndex();

      const [outcome] = await claimer(nodes, recovering).serve(job('job-1', [claim('one', ALICE)]));

      expect(outcome).toMatchObject({ ok: false, claimRef: 'one', reason: 'ClaimRefInUse' });
      expect(JSON.stringify(outcome)).not.toContain(bobs.token ?? '');
      expect(agents.callsOf('claim')).toEqual([]);
      expect(agents.callsOf('get')).toEqual([]);
      expect(agents.held.get('a:7071')).toEqual([bobs]);
    });
    it('scans the nodes for a claim resumed from its own reservation too, and adopts instead of claiming twice', async () => {
      const nodes = [snapshot('a', 5), snapshot('b', 5)];
      // Held on b from before the loss; this job's earlier run reserved it (and wrote a) after the loss, then stalled.
      const onB = agents.hold('b:7071', nodeRefOf('x'));
      const recovering = await recoveringIndex();
      await recovering.reserve([{ scope: HTTP, claimRef: 'x', tried: [] }], 'job-1', 60_000);

      const [outcome] = await claimer(nodes, recovering).serve(job('job-1', [claim('x')]));

      expect(successOf(outcome).grant).toMatchObject({ id: onB.id, node: 'b' });
      expect(agents.callsOf('claim')).toEqual([]);
      expect(agents.held.get('b:7071')).toEqual([onB]);
    });
  });

  it('fails Timeout keeping its reservation when a silent node cannot be asked, so a retry asks that node first', async () => {
    const nodes = [snapshot('a', 5), snapshot('b', 5)];
    // Node a is chosen (two choices with random 0 and equal counts), takes the claim, and goes silent.
    agents.onClaim = (address, claimRef) => {
      agents.serve(address, claimRef);
      agents.unreadable.add(address);
      return Promise.resolve({ ok: false, refusal: { kind: 'unreachable', message: 'headers timeout' } });
    };

    const [outcome] = await claimer(nodes).serve(job('job-1', [claim('one')]));

    expect(outcome).toMatchObject({ ok: false, claimRef: 'one', reason: 'Timeout' });
    expect(agents.calls.map((c) => `${c.verb} ${c.address}`)).toEqual(['claim a:7071', 'findByClaimRef a:7071']);
    expect(await index.peek(HTTP, 'one')).toEqual({
      job: 'job-1',
      tried: [expect.objectContaining({ node: 'a', address: 'a:7071' })],
    });

    // The caller retries (another job) once the first one is gone and node a answers again.
    dead.add('job-1');
    agents.unreadable.clear();
    agents.calls.length = 0;
    const [retry] = await claimer(nodes).serve(job('job-2', [claim('one')]));

    expect(agents.calls[0]).toEqual({ verb: 'findByClaimRef', address: 'a:7071', arg: nodeRefOf('one') });
    expect(agents.callsOf('claim')).toEqual([]);
    expect(retry).toMatchObject({ ok: true, claimRef: 'one', grant: { id: 'sb_1', node: 'a' } });
    expect(successOf(retry).fresh).toBeUndefined();
    expect(agents.held.get('a:7071')?.length).toBe(1);
  });

  describe("a rerun of a killed job (the job's progress in BullMQ's hash of it)", () => {
    it('asks every node the killed run asked, though Redis lost the reservations, and claims nowhere else', async () => {
      const queue = new Queue('claims', { connection: { url: server.url }, prefix: 'test:bull' });
      try {
        const queued = await queue.add('batch', {});
        const id = queued.id ?? '';
        const handle = (progress?: BatchProgress): BatchJobHandle => ({
          ...job(id, [claim('one'), claim('two')], progress),
          progressKey: `${queued.queueQualifiedName}:${id}`,
        });
        // Node a takes 'one' and goes silent (its write-ahead comes after the reservations); node b takes 'two' and
        // the worker is killed before it hears back.
        const asked: string[] = [];
        agents.onClaim = async (address, claimRef) => {
          asked.push(address);
          agents.hold(address, claimRef);
          if (address === 'a:7071') {
            agents.unreadable.add(address);
            return { ok: false, refusal: { kind: 'unreachable', message: 'headers timeout' } };
          }
          return new Promise<ClaimAnswer>(() => undefined);
        };
        const nodes = [snapshot('a', 5), snapshot('b', 5)];
        void claimer(nodes).serve(handle());
        // Asked after its write-ahead: by then the job's progress is what the killed run left.
        while (agents.callsOf('findByClaimRef').length === 0) await sleep(5);
        expect(asked.sort()).toEqual(['a:7071', 'b:7071']);

        // Redis loses the reservations (evicted), not the job; the nodes answer again; only node c has room now.
        await redis.del(index.refKey(HTTP, 'one'), index.refKey(HTTP, 'two'));
        agents.unreadable.clear();
        agents.onClaim = (address, claimRef) => Promise.resolve(agents.serve(address, claimRef));
        agents.calls.length = 0;
        const progress = batchProgressSchema.parse((await Job.fromId(queue, id))?.progress);
        const outcomes = await claimer([snapshot('c', 5)]).serve(handle(progress));

        expect(agents.callsOf('claim')).toEqual([]);
        expect(agents.held.get('c:7071') ?? []).toEqual([]);
        expect(outcomes).toMatchObject([
          { ok: true, claimRef: 'one', grant: { node: 'a' } },
          { ok: true, claimRef: 'two', grant: { node: 'b' } },
        ]);
      } finally {
        await queue.close();
      }
    });

    it('is served again by another claim worker once the first one stalls, asking the nodes from the progress it left', async () => {
      const prefix = 'test:bull';
      const queue = new Queue<BatchJob>('claims', { connection: { url: server.url }, prefix });
      const replies: BatchReply[] = [];
      const worker = (nodes: NodeSnapshot[]): ClaimWorker =>
        new ClaimWorker({
          queueName: 'claims',
          prefix,
          connection: { url: server.url },
          claimer: claimer(nodes),
          send: (_replyTo, reply) => {
            replies.push(reply);
            return Promise.resolve();
          },
          concurrency: 1,
          lockDurationMs: 500,
          stalledIntervalMs: 200,
          drainMs: 1_000,
          metrics: new ProvisioningMetrics(new Registry(), noReaders),
          logger: silentLogger,
        });
      // Node a takes 'one' and goes silent (written ahead); node b takes 'two' and the first worker never hears back.
      let hear: (answer: ClaimAnswer) => void = () => undefined;
      agents.onClaim = async (address, claimRef) => {
        agents.hold(address, claimRef);
        if (address === 'a:7071') {
          agents.unreadable.add(address);
          return { ok: false, refusal: { kind: 'unreachable', message: 'headers timeout' } };
        }
        return new Promise<ClaimAnswer>((resolve) => (hear = resolve));
      };
      const first = worker([snapshot('a', 5), snapshot('b', 5)]);
      let second: ClaimWorker | undefined;
      try {
        first.start();
        const queued = await queue.add('batch', job('unused', [claim('one'), claim('two')]).data);
        while (agents.callsOf('findByClaimRef').length === 0) await sleep(5);

        // The first worker stalls (its lock is gone), Redis loses the reservations, the nodes answer again, and only
        // node c has room now.
        await redis.del(`${queued.queueQualifiedName}:${queued.id ?? ''}:lock`);
        await redis.del(index.refKey(HTTP, 'one'), index.refKey(HTTP, 'two'));
        agents.unreadable.clear();
        agents.onClaim = (address, claimRef) => Promise.resolve(agents.serve(address, claimRef));
        agents.calls.length = 0;
        second = worker([snapshot('c', 5)]);
        second.start();
        while (replies.flatMap((r) => r.outcomes).length < 2) await sleep(20);

        expect(agents.callsOf('claim')).toEqual([]);
        expect(agents.held.get('c:7071') ?? []).toEqual([]);
        const outcomes = replies.flatMap((r) => r.outcomes).sort((x, y) => x.index - y.index);
        expect(outcomes).toMatchObject([
          { ok: true, claimRef: 'one', grant: { node: 'a' } },
          { ok: true, claimRef: 'two', grant: { node: 'b' } },
        ]);
      } finally {
        hear({ ok: false, refusal: { kind: 'unreachable', message: 'the worker was gone' } });
        const redisClose = new RedisClose({ timeoutMs: 1_000, answering: () => true, logger: silentLogger });
        await Promise.all([first.close(redisClose), second?.close(redisClose)]);
        await queue.close();
      }
    });
  });
});
