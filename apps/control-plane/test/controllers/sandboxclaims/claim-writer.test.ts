// The SandboxClaim controller's Ready write against a real apiserver: it lands
// only on the very claim it was computed from, read again when that claim
// changed meanwhile, and never on a namesake created after a delete.
import { SandboxClaimType, type Condition, type SandboxClaim } from '@warmpool/api';
import { startCluster, type TestCluster } from '@warmpool/harness';
import { ResourceClient } from '@warmpool/kube';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SandboxClaimMetrics } from '../../../src/controllers/sandboxclaims/metrics.js';
import { claimedStatus, failedStatus, readyOf } from '../../../src/controllers/sandboxclaims/status.js';
import { ClaimWriter } from '../../../src/controllers/sandboxclaims/writer.js';
import type { ClaimGrant } from '../../../src/provisioning/claim-service.js';
import { aGrant } from '../../support/grants.js';

const NAMESPACE = 'default';
const NOW = Date.parse('2030-01-01T00:00:00Z');
/** Another writer's condition, which the Ready write keeps. */
const OTHER: Condition = {
  type: 'Other',
  status: 'True',
  reason: 'Theirs',
  message: '',
  lastTransitionTime: '2030-01-01T00:00:00Z',
};

function grantFor(claim: SandboxClaim): ClaimGrant {
  return aGrant({
    namespace: NAMESPACE,
    claimRef: claim.metadata.name ?? '',
    door: 'crd',
    owner: claim.metadata.uid ?? '',
  });
}

describe("the SandboxClaim controller's Ready write", () => {
  let cluster: TestCluster;
  let claims: ResourceClient<SandboxClaim>;
  let writer: ClaimWriter;

  beforeAll(async () => {
    cluster = await startCluster({ name: 'claim-writer' });
    claims = new ResourceClient<SandboxClaim>(cluster.kubeConfig, SandboxClaimType);
    writer = new ClaimWriter(cluster.kubeConfig, new SandboxClaimMetrics(new Registry()));
  });
  afterAll(() => cluster?.stop());

  const create = (name: string, annotations: Record<string, string> = {}): Promise<SandboxClaim> =>
    claims.create({
      metadata: { name, namespace: NAMESPACE, annotations },
      spec: { warmPoolRef: { name: 'pool' } },
    });

  it('writes Ready=True onto the claim, keeping what else its status shows', async () => {
    const claim = await create('plain');
    const withOther = await claims.patchStatus({ namespace: NAMESPACE, name: 'plain' }, { conditions: [OTHER] });
    expect(await writer.writeStatusOf(withOther, (c) => claimedStatus(c, grantFor(claim), NOW))).toBe('written');
    const stored = await claims.get({ namespace: NAMESPACE, name: 'plain' });
    expect(readyOf(stored)).toMatchObject({ status: 'True', reason: 'Claimed' });
    expect(stored.status?.conditions?.map((c) => c.type)).toEqual(['Other', 'Ready']);
    expect(stored.status?.sandbox).toEqual({ name: 'plain', podIPs: ['10.0.0.7'] });
    expect(stored.metadata.uid).toBe(claim.metadata.uid);
  });

  it('reads the claim again when it changed since the version the write was computed from', async () => {
    const stale = await create('changed');
    await claims.patch({ namespace: NAMESPACE, name: 'changed' }, { metadata: { annotations: { touched: 'yes' } } });
    expect(await writer.writeStatusOf(stale, (c) => claimedStatus(c, grantFor(stale), NOW))).toBe('written');
    const stored = await claims.get({ namespace: NAMESPACE, name: 'changed' });
    expect(readyOf(stored)?.status).toBe('True');
    expect(stored.metadata.annotations).toEqual({ touched: 'yes' });
  });

  it('writes nothing onto a namesake created after the claim was deleted', async () => {
    const old = await create('reborn');
    await claims.delete({ namespace: NAMESPACE, name: 'reborn' });
    const namesake = await create('reborn', { generation: 'second' });
    expect(await writer.writeStatusOf(old, (c) => claimedStatus(c, grantFor(old), NOW))).toBe('gone');
    const stored = await claims.get({ namespace: NAMESPACE, name: 'reborn' });
    expect(stored.metadata.uid).toBe(namesake.metadata.uid);
    expect(stored.status).toBeUndefined();
  });

  // Every other status write too (Ready=False, Expired, the repair after a lost write): an Expired on a namesake would
  // leave the user's new claim terminal, a Ready=True would show it a sandbox that is not its own.
  it('writes neither Ready=False nor a repaired Ready onto a namesake created after the claim was deleted', async () => {
    const old = await create('namesake');
    await claims.delete({ namespace: NAMESPACE, name: 'namesake' });
    const namesake = await create('namesake', { generation: 'second' });
    expect(await writer.writeStatusOf(old, (c) => failedStatus(c, 'Expired', 'the sandbox is gone', NOW))).toBe('gone');
    expect(await writer.writeStatusOf(old, (c) => claimedStatus(c, grantFor(old), NOW))).toBe('gone');
    const stored = await claims.get({ namespace: NAMESPACE, name: 'namesake' });
    expect(stored.metadata.uid).toBe(namesake.metadata.uid);
    expect(stored.status).toBeUndefined();
  });

  it('writes Ready=False from the claim as it is now, keeping what another writer added meanwhile', async () => {
    const stale = await create('failing');
    await claims.patchStatus({ namespace: NAMESPACE, name: 'failing' }, { conditions: [OTHER] });
    expect(await writer.writeStatusOf(stale, (c) => failedStatus(c, 'NoCapacity', 'no warm sandbox', NOW))).toBe(
      'written',
    );
    const stored = await claims.get({ namespace: NAMESPACE, name: 'failing' });
    expect(stored.status?.conditions?.map((c) => [c.type, c.reason])).toEqual([
      ['Other', 'Theirs'],
      ['Ready', 'NoCapacity'],
    ]);
  });

  it('writes nothing once the claim is gone', async () => {
    const gone = await create('gone');
    await claims.delete({ namespace: NAMESPACE, name: 'gone' });
    expect(await writer.writeStatusOf(gone, (c) => claimedStatus(c, grantFor(gone), NOW))).toBe('gone');
  });
});
