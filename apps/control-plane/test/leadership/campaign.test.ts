// The campaign on a real apiserver: resigning ends the term, stops
// campaigning and releases the Lease, even when the term's end callback
// throws (the throw is passed on after the release, never instead of it).
import { eventually, sleep, startCluster, type TestCluster } from '@warmpool/harness';
import { LeaseType, ResourceClient, type Lease } from '@warmpool/kube';
import { silentLogger } from '@warmpool/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Campaign } from '../../src/leadership/campaign.js';

const timing = { leaseDurationMs: 3_000, renewDeadlineMs: 2_000, retryPeriodMs: 200 };

describe('Campaign on a real apiserver', () => {
  let cluster: TestCluster;
  let namespace: string;
  let leases: ResourceClient<Lease>;
  const campaigns: Campaign[] = [];

  beforeAll(async () => {
    cluster = await startCluster({ name: 'cp-campaign', crds: false });
    namespace = await cluster.createNamespace('campaign');
    leases = new ResourceClient<Lease>(cluster.kubeConfig, LeaseType);
  });

  afterAll(async () => {
    await Promise.all(campaigns.map((c) => c.resign().catch(() => undefined)));
    await cluster?.stop();
  });

  /** A campaign on its own Lease whose term-end callback is `onStopped`; resolves once it leads. */
  async function leading(leaseName: string, onStopped: (why: 'lost' | 'resigned') => void): Promise<Campaign> {
    let terms = 0;
    const campaign = new Campaign({
      kubeConfig: cluster.kubeConfig,
      namespace,
      leaseName,
      identity: 'only',
      ...timing,
      elect: true,
      token: () => 'a-fleet-token',
      closing: () => false,
      onStartedLeading: async () => {
        terms++;
      },
      onStoppedLeading: onStopped,
      logger: silentLogger,
      kubeLogger: silentLogger,
    });
    campaigns.push(campaign);
    campaign.start();
    campaign.stopFollowingToken();
    await eventually(() => terms === 1 && campaign.leadership.holding(), { what: `${leaseName} led` });
    return campaign;
  }

  const holderOf = async (leaseName: string): Promise<string | undefined> =>
    (await leases.get({ namespace, name: leaseName })).spec?.holderIdentity || undefined;

  it('releases the Lease at resign, and no longer holds it', async () => {
    const ended: string[] = [];
    const campaign = await leading('resigns', (why) => ended.push(why));
    await campaign.resign();
    expect(ended[0]).toBe('resigned');
    expect(campaign.leadership.holding()).toBe(false);
    expect(await holderOf('resigns')).toBeUndefined();
  });

  it('still stops campaigning and releases the Lease when the term-end callback throws, then passes the throw on', async () => {
    const campaign = await leading('callback-throws', (why) => {
      if (why === 'resigned') throw new Error('the term-end callback failed');
    });
    await expect(campaign.resign()).rejects.toThrow('the term-end callback failed');
    expect(campaign.leadership.holding()).toBe(false);
    expect(await holderOf('callback-throws')).toBeUndefined();
    // Not renewed behind our back: the released Lease stays free past a few retry periods.
    await sleep(4 * timing.retryPeriodMs);
    expect(await holderOf('callback-throws')).toBeUndefined();
  });
});
