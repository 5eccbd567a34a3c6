// Claims survive a replica's death: two control-plane processes share one
// Redis; one is SIGKILLed while its worker holds batch jobs (cold boots slow
// enough that it dies mid-job). The other takes those jobs over, asks the
// nodes the dead worker had asked, and answers every claim exactly once: the
// distinct claim_refs on the nodes equal the claims made, and after releasing
// everything no node holds a claim. A replica stopped with SIGTERM (a rolling
// update) serves the jobs it holds to the end before it exits: none is left
// for another replica to take over.
import { claimBodySchema, type ClaimBody } from '@warmpool/api';
import { eventually, sleep, template, warmPool, type TestCluster } from '@warmpool/harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callClaims, claimOfNodeRef, claimsOnNodes, serviceAccountToken, type Answer } from '../support/claims.js';
import type { Fleet } from '../support/fleet.js';
import { apply } from '../support/objects.js';
import { startReplica, type Replica } from '../support/replicas.js';
import { testWorld, type TestWorld } from '../support/world.js';

const TOKEN = 'fleet-token-for-failover-tests';
const COLD_BOOT_MS = 1_500;

describe('claims when a replica dies mid-job (two control-plane processes, one Redis)', () => {
  let world: TestWorld;
  let cluster: TestCluster;
  let fleet: Fleet;
  let ns: string;
  let user: string;
  const started: Replica[] = [];

  /** A replica process ready to claim, its claim worker serving this many jobs at once. */
  async function replica(identity: string, workerConcurrency: number, extraArgs: string[] = []): Promise<Replica> {
    const r = await startReplica(world.replicaOptions('default'), identity, {
      claims: { redisUrl: world.redis.url },
      args: [
        '--claim-worker-concurrency',
        String(workerConcurrency),
        '--claim-lock-duration',
        '1s',
        '--claim-stalled-interval',
        '500ms',
        '--claim-timeout',
        '30s',
        // The daemon here boots cold in COLD_BOOT_MS: a node asked for a cold claim may serve it up to then (a worker
        // that died after writing its choice ahead leaves the survivor waiting that long before trying elsewhere).
        '--claim-cold-node-timeout',
        `${COLD_BOOT_MS * 2}ms`,
        ...extraArgs,
      ],
      timeoutMs: 30_000,
    });
    started.push(r);
    return r;
  }

  /** Batch jobs every replica still running has found stalled and taken over, so far. */
  async function stalledJobs(): Promise<number> {
    let total = 0;
    for (const r of started.filter((s) => s.proc.running)) {
      const text = await (await fetch(`http://127.0.0.1:${r.port}/metrics`)).text();
      total += Number(/warmpool_controlplane_claim_jobs_stalled_total (\d+)/.exec(text)?.[1] ?? 0);
    }
    return total;
  }

  /** 24 claims under `prefix-<i>`, in several batches (staggered); their answers once all are in. */
  function claimStaggered(base: string, prefix: string): { refs: string[]; answers: Promise<Answer[]> } {
    const refs = Array.from({ length: 24 }, (_, i) => `${prefix}-${i}`);
    const answers = Promise.all(
      refs.map(async (claimRef, i) => {
        await sleep((i % 6) * 40);
        return callClaims(base, 'POST', `/v1/namespaces/${ns}/claims`, user, {
          warmPool: 'cold',
          claimRef,
          ttlSeconds: 600,
        });
      }),
    );
    return { refs, answers };
  }

  /** Every answer a 200, each with a sandbox of its own: the claims, in the order of `refs`. */
  function servedOnceEach(answered: Answer[], refs: string[]): ClaimBody[] {
    expect(
      answered.map((x) => x.status),
      JSON.stringify(answered.filter((x) => x.status !== 200).map((x) => x.body)),
    ).toEqual(refs.map(() => 200));
    const claims = answered.map((x) => claimBodySchema.parse(x.body));
    expect(claims.map((c) => c.claimRef)).toEqual(refs);
    expect(new Set(claims.map((c) => c.id)).size).toBe(refs.length);
    return claims;
  }

  /** Batch jobs being served right now, as the replica reads the shared queue. */
  async function activeJobs(r: Replica): Promise<number> {
    const text = await (await fetch(`http://127.0.0.1:${r.port}/metrics`)).text();
    return Number(/warmpool_controlplane_claim_jobs\{state="active"\} (\d+)/.exec(text)?.[1] ?? 0);
  }

  beforeAll(async () => {
    world = await testWorld({
      name: 'cp-failover',
      token: TOKEN,
      redis: true,
      fleet: { count: 3, capacity: 100, sandboxdArgs: ['--cold-boot-ms', String(COLD_BOOT_MS)] },
    });
    ({ cluster, fleet } = world);
    ns = await world.namespace('failover');
    user = await serviceAccountToken(cluster, ns, 'claimer', ['create', 'get', 'update', 'delete']);
    // No warm sandboxes: every claim is a slow cold boot, so jobs are held long enough to die holding them.
    await apply(cluster, template(ns, 'tpl', 'registry.test/failover:1'), warmPool(ns, 'cold', 'tpl', 0));
  });

  afterAll(() => world?.close());

  it('answers every claim exactly once after SIGKILL of the replica whose worker held the jobs, and releases leave nothing', async () => {
    // The survivor serves one job at a time, so the other's worker takes most of them.
    const survivor = await replica('survivor', 1);
    const victim = await replica('victim', 64);
    const base = survivor.claimsUrl ?? '';
    const path = `/v1/namespaces/${ns}/claims`;

    const { refs, answers } = claimStaggered(base, 'fo');
    // Kill it once it holds jobs: more are active than the survivor's one slot.
    await eventually(async () => (await activeJobs(survivor)) >= 2, {
      what: "the victim's worker to hold a job",
      intervalMs: 20,
    });
    await victim.proc.stop('SIGKILL');
    const claims = servedOnceEach(await answers, refs);

    // The survivor took over the victim's jobs.
    const metrics = await (await fetch(`http://127.0.0.1:${survivor.port}/metrics`)).text();
    expect(Number(/warmpool_controlplane_claim_jobs_stalled_total (\d+)/.exec(metrics)?.[1] ?? 0)).toBeGreaterThan(0);

    // Exactly once on the nodes: each claim_ref held once, by the sandbox its caller got.
    const held = (await claimsOnNodes(fleet, TOKEN))
      .map((c) => ({ ...c, claimRef: claimOfNodeRef(c.claimRef) }))
      .filter((c) => c.claimRef?.startsWith(`${ns}/fo-`) === true);
    expect(held.map((c) => c.claimRef).sort()).toEqual(refs.map((r) => `${ns}/${r}`).sort());
    for (const claim of claims)
      expect(held).toContainEqual({ node: claim.node, claimRef: `${ns}/${claim.claimRef}`, id: claim.id });

    for (const claim of claims)
      expect((await callClaims(base, 'DELETE', `${path}/${claim.claimRef}`, user)).status).toBe(204);
    expect(await claimsOnNodes(fleet, TOKEN)).toEqual([]);
  });

  it('serves the jobs a replica holds to the end when it is stopped with SIGTERM: none stalls, every claim once', async () => {
    const stays = await replica('stays', 1);
    const leaves = await replica('leaves', 64);
    const base = stays.claimsUrl ?? '';
    const path = `/v1/namespaces/${ns}/claims`;
    const stalledBefore = await stalledJobs();

    const { refs, answers } = claimStaggered(base, 'term');
    await eventually(async () => (await activeJobs(stays)) >= 2, {
      what: "the leaving replica's worker to hold a job",
      intervalMs: 20,
    });
    // The default --shutdown-timeout (20 s) bounds its close; the jobs' cold boots take COLD_BOOT_MS.
    expect(await leaves.proc.stop('SIGTERM', 30_000)).toEqual({ code: 0, signal: null });
    const claims = servedOnceEach(await answers, refs);
    // It finished what it held: no replica had to take a job over.
    expect(await stalledJobs()).toBe(stalledBefore);
    const held = (await claimsOnNodes(fleet, TOKEN))
      .map((c) => claimOfNodeRef(c.claimRef))
      .filter((ref) => ref?.startsWith(`${ns}/term-`) === true);
    expect(held.sort()).toEqual(refs.map((r) => `${ns}/${r}`).sort());

    for (const claim of claims)
      expect((await callClaims(base, 'DELETE', `${path}/${claim.claimRef}`, user)).status).toBe(204);
    await stays.proc.stop();
  });

  it('answers 504 Timeout when no node answers in time, and releases what lands later for a caller without a claimRef', async () => {
    const hasty = await replica('hasty', 8, ['--claim-timeout', `${COLD_BOOT_MS / 3}ms`]);
    const base = hasty.claimsUrl ?? '';
    const path = `/v1/namespaces/${ns}/claims`;
    const before = (await claimsOnNodes(fleet, TOKEN)).length;
    const answer = await callClaims(base, 'POST', path, user, { warmPool: 'cold' });
    expect(answer.status).toBe(504);
    expect(answer.body).toMatchObject({ reason: 'Timeout' });
    // The cold boot lands after the caller's answer: nobody can come back for it, so it is released.
    await sleep(COLD_BOOT_MS + 500);
    await eventually(async () => (await claimsOnNodes(fleet, TOKEN)).length === before, {
      what: 'the late sandbox to be released',
      timeoutMs: 15_000,
    });
    await hasty.proc.stop();
  });

  it('releases the sandbox of a caller that gave up without a claimRef, and keeps it for one that sent a claimRef', async () => {
    const patient = await replica('patient', 8);
    const base = patient.claimsUrl ?? '';
    const path = `/v1/namespaces/${ns}/claims`;
    const giveUp = async (body: Record<string, unknown>): Promise<void> => {
      const controller = new AbortController();
      const sent = fetch(`${base}${path}`, {
        method: 'POST',
        signal: controller.signal,
        headers: { authorization: `Bearer ${user}`, 'content-type': 'application/json' },
        body: JSON.stringify({ warmPool: 'cold', ...body }),
      });
      // Give up once the claim's job is being served (its cold boot under way on a node).
      await eventually(async () => (await activeJobs(patient)) >= 1, {
        what: "the claim's job to be served",
        intervalMs: 20,
      });
      controller.abort();
      await expect(sent).rejects.toThrow();
    };
    const ours = async (): Promise<Array<{ node: string; claimRef: string | undefined; id: string }>> =>
      (await claimsOnNodes(fleet, TOKEN))
        .map((c) => ({ ...c, claimRef: claimOfNodeRef(c.claimRef) }))
        .filter((c) => c.claimRef?.startsWith(`${ns}/`) === true);

    await giveUp({});
    await eventually(async () => (await activeJobs(patient)) === 0, { what: 'the first job to be done' });
    await giveUp({ claimRef: 'comes-back' });
    // Both boots land; the anonymous one is released, the named one waits for its caller.
    await eventually(async () => (await activeJobs(patient)) === 0, { what: 'the second job to be done' });
    const held = await eventually(
      async () => {
        const now = await ours();
        return now.length === 1 ? now : undefined;
      },
      { what: 'only the claim with a claimRef to be left on the nodes', timeoutMs: 15_000 },
    );
    expect(held[0]?.claimRef).toBe(`${ns}/comes-back`);
    const metrics = await (await fetch(`http://127.0.0.1:${patient.port}/metrics`)).text();
    expect(Number(/warmpool_controlplane_claims_released_unanswered_total (\d+)/.exec(metrics)?.[1] ?? 0)).toBe(1);

    // The caller comes back with its claimRef: the same sandbox, at once, and no second one.
    const again = await callClaims(base, 'POST', path, user, { warmPool: 'cold', claimRef: 'comes-back' });
    expect(again.status).toBe(200);
    expect(claimBodySchema.parse(again.body).id).toBe(held[0]?.id);
    expect(await ours()).toHaveLength(1);
    expect((await callClaims(base, 'DELETE', `${path}/comes-back`, user)).status).toBe(204);
    expect(await ours()).toEqual([]);
  });
});
