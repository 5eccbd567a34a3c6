// Warm startup of the harness's cluster with real nodes (issue "Real pods":
// ≤ 30 s for 3 nodes once the binaries and the image seed exist), side by side
// with its floor in the same run: the apiserver-only cluster every other spec
// starts (etcd + kube-apiserver + CRDs), which the node cluster contains.
// Needs root, the node binaries and the images:
//   make build node-binaries && images/build.sh control-plane node-agent fake-sandboxd pause redis
//   node bench/node-cluster.bench.ts
import { fileURLToPath } from 'node:url';
import { startCluster, startNodeCluster } from '@warmpool/harness';

const ROUNDS = 3;
const GOAL_MS = 30_000;
const IMAGES = fileURLToPath(new URL('../.local/images/', import.meta.url));
const archives = ['control-plane', 'node-agent', 'fake-sandboxd', 'redis'].map((app) => `${IMAGES}${app}.oci.tar`);

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

// One round first that may build the image seed (once per set of images); not counted.
await (await startNodeCluster({ nodes: 3, images: archives, pauseImage: `${IMAGES}pause.oci.tar` })).close();

const floor: number[] = [];
const nodes: number[] = [];
const controlPlane: number[] = [];
for (let round = 0; round < ROUNDS; round++) {
  const t0 = performance.now();
  const plain = await startCluster({ name: 'bench-floor' });
  floor.push(performance.now() - t0);
  await plain.close();
  const cluster = await startNodeCluster({ nodes: 3, images: archives, pauseImage: `${IMAGES}pause.oci.tar` });
  nodes.push(cluster.timings.totalMs);
  controlPlane.push(cluster.timings.controlPlaneMs);
  await cluster.close();
}

const s = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
console.log(
  `node cluster, 3 nodes Ready + default ServiceAccount, ${ROUNDS} rounds (warm: binaries and image seed cached)`,
);
console.log(
  `  floor: apiserver-only cluster (etcd + kube-apiserver + CRDs)  median ${s(median(floor))}  [${floor.map(s).join(', ')}]`,
);
console.log(
  `  node cluster: control plane (in its namespace) ready         median ${s(median(controlPlane))}  [${controlPlane.map(s).join(', ')}]`,
);
console.log(
  `  node cluster: every node Ready                               median ${s(median(nodes))}  [${nodes.map(s).join(', ')}]`,
);
console.log(`  goal ≤ ${s(GOAL_MS)}: ${median(nodes) <= GOAL_MS ? 'met' : 'NOT met'}`);
