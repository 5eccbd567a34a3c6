// A busy node is not a dead one: with sandboxd answering claims
// in 8 s and 300 claims in flight through the node's agent, the control
// plane's probes and pushes still get their answers at once, so the node stays
// in placement. A real apiserver, a real agent and fake-sandboxd (processes),
// the control plane in this process with the specs' short timings (a probe
// every 500 ms, 1 s to answer, three failures take a node out).
import { eventually, sleep, template, warmPool } from '@warmpool/harness';
import { Pool } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ControlPlane } from '../../../src/options.js';
import { metricSum } from '../../support/metrics.js';
import { apply } from '../../support/objects.js';
import { testWorld, type TestWorld } from '../../support/world.js';

const TOKEN = 'fleet-token-for-the-busy-node-spec';
const IMAGE = 'registry.test/busy:1';

describe('a node whose sandboxd is slow to answer claims', () => {
  let world: TestWorld;
  let cp: ControlPlane;

  beforeAll(async () => {
    world = await testWorld({
      name: 'cp-busy',
      token: TOKEN,
      // Every claim takes 8 s, warm or cold; refill boots stay quick.
      fleet: { count: 1, sandboxdArgs: ['--warm-claim-ms', '8s', '--cold-boot-ms', '8s', '--boot-ms', '20ms'] },
    });
    cp = await world.leader(await world.namespace('warmpool-system'));
  }, 120_000);

  afterAll(() => world?.close());

  /** Nodes in placement, as the leader last reported them. */
  const readyNodes = (): Promise<number> => metricSum(cp, 'warmpool_controlplane_nodes', { state: 'ready' });

  it('stays in placement with 300 slow claims in flight through its agent', { timeout: 60_000 }, async () => {
    const node = world.fleet.nodes[0];
    if (node === undefined) throw new Error('no node');
    const ns = await world.namespace('busy');
    await apply(world.cluster, template(ns, 'tpl', IMAGE), warmPool(ns, 'pool', 'tpl', 50));
    await eventually(async () => (await node.targets()).get(`${IMAGE}|none|small`) === 50, {
      what: 'the warm target on the node',
    });
    expect(await readyNodes()).toBe(1);

    const client = new Pool(node.agentUrl, { connections: 400 });
    try {
      const claims = Array.from({ length: 300 }, (_, i) =>
        client
          .request({
            method: 'POST',
            path: '/v1/claim',
            headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
            body: JSON.stringify({ template: IMAGE, claim_ref: `busy/c-${i}` }),
            headersTimeout: 60_000,
          })
          .then(async (res) => {
            await res.body.dump();
            return res.statusCode;
          }),
      );
      // Ten probe intervals while every claim is held at sandboxd: three failed probes in a row would take the node
      // out.
      for (let i = 0; i < 10; i++) {
        await sleep(500);
        expect(await readyNodes(), `after ${(i + 1) * 500} ms`).toBe(1);
      }
      const statuses = await Promise.all(claims);
      // The agent's bound (256 by default) refused the rest at once.
      expect(statuses.filter((s) => s === 200)).toHaveLength(256);
      expect(statuses.filter((s) => s === 429)).toHaveLength(44);
    } finally {
      await client.close();
    }
    expect(await readyNodes()).toBe(1);
  });
});
