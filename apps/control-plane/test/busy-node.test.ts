// A busy node is not a dead one (issue 8 §4): with sandboxd answering claims
// in 8 s and 300 claims in flight through the node's agent, the control
// plane's probes and pushes still get their answers at once, so the node stays
// in placement. A real apiserver, a real agent and fake-sandboxd (processes),
// the control plane in this process with the specs' short timings (a probe
// every 500 ms, 1 s to answer, three failures take a node out).
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  eventually,
  sleep,
  startCluster,
  stopScripts,
  tearDown,
  template,
  warmPool,
  type TestCluster,
} from '@warmpool/harness';
import { Pool } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ControlPlane } from './support/internals.js';
import { startControlPlane } from './support/control-plane.js';
import { startFleet, type Fleet } from './support/fleet.js';
import { apply } from './support/objects.js';

const TOKEN = 'fleet-token-for-the-busy-node-spec';
const IMAGE = 'registry.test/busy:1';

describe('a node whose sandboxd is slow to answer claims', () => {
  let cluster: TestCluster;
  let fleet: Fleet;
  let dir: string;
  let controlPlane: ControlPlane | undefined;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'warmpool-cp-busy-'));
    cluster = await startCluster({ name: 'cp-busy' });
    const system = await cluster.createNamespace('warmpool-system');
    const tokenFile = join(dir, 'token');
    writeFileSync(tokenFile, TOKEN + '\n');
    // Every claim takes 8 s, warm or cold; refill boots stay quick.
    fleet = await startFleet({
      dir,
      kubeconfigPath: cluster.kubeconfigPath,
      tokenFile,
      token: TOKEN,
      count: 1,
      sandboxdArgs: ['--warm-claim-ms', '8s', '--cold-boot-ms', '8s', '--boot-ms', '20ms'],
    });
    controlPlane = await startControlPlane(cluster, dir, system, { token: TOKEN });
    const started = controlPlane;
    await eventually(() => started.isLeader(), { what: 'the control plane to lead' });
  }, 120_000);

  afterAll(() =>
    tearDown(
      { dir, what: 'busy-node' },
      () => controlPlane?.close(),
      () => fleet?.stop(),
      stopScripts,
      () => cluster?.stop(),
    ),
  );

  it('stays in placement with 300 slow claims in flight through its agent', { timeout: 60_000 }, async () => {
    const node = fleet.nodes[0];
    if (node === undefined || controlPlane === undefined) throw new Error('no node');
    const cp = controlPlane;
    const ns = await cluster.createNamespace('busy');
    await apply(cluster, template(ns, 'tpl', IMAGE), warmPool(ns, 'pool', 'tpl', 50));
    await eventually(async () => (await node.targets()).get(`${IMAGE}|none|small`) === 50, {
      what: 'the warm target on the node',
    });
    expect(cp.reconciler.inPlacement(node.name)).toBe(true);

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
      // Ten probe intervals while every claim is held at sandboxd: three failed probes in a row would take the node out.
      for (let i = 0; i < 10; i++) {
        await sleep(500);
        expect(cp.reconciler.inPlacement(node.name), `after ${(i + 1) * 500} ms`).toBe(true);
      }
      const statuses = await Promise.all(claims);
      // The agent's bound (256 by default) refused the rest at once.
      expect(statuses.filter((s) => s === 200)).toHaveLength(256);
      expect(statuses.filter((s) => s === 429)).toHaveLength(44);
    } finally {
      await client.close();
    }
    expect(cp.reconciler.inPlacement(node.name)).toBe(true);
    expect(await cp.metrics.render()).toMatch(/warmpool_controlplane_nodes\{state="ready"\} 1/);
  });
});
