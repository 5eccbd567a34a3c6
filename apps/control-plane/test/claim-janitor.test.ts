// The claim janitor's rules, in process: which node claims it releases and
// which it never touches. Nodes and the claim index are scripted here; the
// end-to-end sweep over real agents and Redis is in sandboxclaims.test.ts.
import type { SandboxClaim, SandboxRow } from '@warmpool/api';
import { ManualClock } from '@warmpool/harness';
import { Lister, ObjectStore } from '@warmpool/kube';
import { silentLogger } from '@warmpool/runtime';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { ClaimJanitor, SandboxClaimMetrics, type AgentAddress, type NodeClaims } from './support/internals.js';
import { ClaimFailure, type ClaimGrant, type ClaimService } from '../src/provisioning/claim-service.js';

const clock = new ManualClock();
const OLD = clock.iso(-120_000);
const YOUNG = clock.iso(-5_000);

function row(id: string, claimRef: string | undefined, claimedAt = OLD): SandboxRow {
  return {
    id,
    key: { template: 'img', net: 'none', size: 'small' },
    deadline: clock.iso(600_000),
    claimed_at: claimedAt,
    ...(claimRef === undefined ? {} : { claim_ref: claimRef }),
  };
}

function grant(claimRef: string, path: ClaimGrant['path'], id: string): ClaimGrant {
  return {
    id,
    token: 't',
    deadline: clock.iso(600_000),
    ownerAddr: '10.0.0.1:1',
    node: 'a',
    namespace: 'ns',
    warmPool: 'p',
    claimRef,
    tier: 'warm',
    ...(path === undefined ? {} : { path }),
  };
}

interface Setup {
  rows: Record<string, SandboxRow[]>;
  index?: Record<string, ClaimGrant>;
  claims?: string[];
  lookupFails?: boolean;
  unreachable?: string[];
  synced?: boolean;
}

function janitorFor(setup: Setup): { janitor: ClaimJanitor; releasedOnNode: string[]; releasedThroughIndex: string[] } {
  const releasedOnNode: string[] = [];
  const releasedThroughIndex: string[] = [];
  const store = new ObjectStore<SandboxClaim>();
  for (const name of setup.claims ?? [])
    store.upsert({ metadata: { namespace: 'ns', name, uid: name }, spec: { warmPoolRef: { name: 'p' } } });
  const nodeClaims: NodeClaims = {
    list: (agent: AgentAddress) =>
      setup.unreachable?.includes(agent.node)
        ? Promise.reject(new Error('down'))
        : Promise.resolve(setup.rows[agent.node] ?? []),
    release: (agent: AgentAddress, id: string) => {
      releasedOnNode.push(`${agent.node}/${id}`);
      return Promise.resolve();
    },
  };
  const service: Pick<ClaimService, 'lookup' | 'release'> = {
    lookup: (namespace, ref) =>
      setup.lookupFails
        ? Promise.reject(new ClaimFailure('Unavailable', 'redis down'))
        : Promise.resolve(setup.index?.[`${namespace}/${ref}`]),
    release: (namespace, ref) => {
      releasedThroughIndex.push(`${namespace}/${ref}`);
      return Promise.resolve(true);
    },
  };
  const janitor = new ClaimJanitor({
    claims: service as ClaimService,
    cache: new Lister(store),
    cacheSynced: () => setup.synced ?? true,
    agents: () => Object.keys(setup.rows).map((node) => ({ node, address: `${node}:1` })),
    nodeClaims,
    metrics: new SandboxClaimMetrics(new Registry()),
    logger: silentLogger,
    clock,
    graceMs: 60_000,
  });
  return { janitor, releasedOnNode, releasedThroughIndex };
}

describe('the claim janitor', () => {
  it('releases, on its node, an old node claim of a SandboxClaim that does not exist and that the index does not know', async () => {
    const { janitor, releasedOnNode } = janitorFor({ rows: { a: [row('sb_1', 'ns/gone')] } });
    expect(await janitor.sweep()).toEqual({ nodes: 1, failedNodes: 0, released: 1 });
    expect(releasedOnNode).toEqual(['a/sb_1']);
  });

  it('releases through the index a claim the index records as of the CRD path', async () => {
    const { janitor, releasedThroughIndex, releasedOnNode } = janitorFor({
      rows: { a: [row('sb_1', 'ns/gone')] },
      index: { 'ns/gone': grant('gone', 'crd', 'sb_1') },
    });
    await janitor.sweep();
    expect(releasedThroughIndex).toEqual(['ns/gone']);
    expect(releasedOnNode).toEqual([]);
  });

  it('never releases a claim of the HTTP path, or one whose index entry names no path', async () => {
    const { janitor, releasedOnNode, releasedThroughIndex } = janitorFor({
      rows: { a: [row('sb_1', 'ns/http-one'), row('sb_2', 'ns/old-record')] },
      index: {
        'ns/http-one': grant('http-one', 'http', 'sb_1'),
        'ns/old-record': grant('old-record', undefined, 'sb_2'),
      },
    });
    expect((await janitor.sweep()).released).toBe(0);
    expect([...releasedOnNode, ...releasedThroughIndex]).toEqual([]);
  });

  it('never releases a claim whose SandboxClaim exists, one younger than the grace, or one without a <namespace>/<name> claim_ref', async () => {
    const { janitor, releasedOnNode } = janitorFor({
      rows: {
        a: [row('sb_1', 'ns/alive'), row('sb_2', 'ns/young', YOUNG), row('sb_3', undefined), row('sb_4', 'not a ref')],
      },
      claims: ['alive'],
    });
    expect((await janitor.sweep()).released).toBe(0);
    expect(releasedOnNode).toEqual([]);
  });

  it('releases nothing while the index cannot be asked, or before the SandboxClaim cache has synced', async () => {
    const down = janitorFor({ rows: { a: [row('sb_1', 'ns/gone')] }, lookupFails: true });
    expect((await down.janitor.sweep()).released).toBe(0);
    const unsynced = janitorFor({ rows: { a: [row('sb_1', 'ns/gone')] }, synced: false });
    expect(await unsynced.janitor.sweep()).toEqual({ nodes: 0, failedNodes: 0, released: 0 });
    expect([...down.releasedOnNode, ...unsynced.releasedOnNode]).toEqual([]);
  });

  it('sweeps the nodes that answer and counts the ones that do not, every release counted once', async () => {
    const rows: Record<string, SandboxRow[]> = {};
    for (let n = 0; n < 40; n++) rows[`n${n}`] = [row(`sb_${n}`, `ns/gone-${n}`)];
    const { janitor } = janitorFor({ rows, unreachable: ['n3', 'n7'] });
    expect(await janitor.sweep()).toEqual({ nodes: 40, failedNodes: 2, released: 38 });
  });
});
