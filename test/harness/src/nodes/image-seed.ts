// Imported images, once per machine: the first cluster imports the archives
// into a containerd of its own and keeps that containerd's root as a seed
// under the cache; every node of every later cluster starts from a hard-linked
// copy of it (blobs and unpacked layers are never written in place: a
// container's writes go to a new upper layer). Importing ~200 MB into three
// nodes on every start would cost most of the startup.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { binDir } from '../binaries.js';
import type { ClusterNamespace } from './namespace.js';
import { containerdRoot, importImages, nodePaths, startContainerd } from './node.js';
import { nodeAddresses } from './topology.js';

/** Seeds of other image sets kept besides the current one. */
const KEPT_SEEDS = 2;

function seedsDir(): string {
  return join(binDir(), '..', 'containerd-seeds');
}

/** Changes whenever an archive or containerd does. */
function seedKey(archives: string[]): string {
  const hash = createHash('sha256');
  for (const file of [...archives, join(binDir(), 'containerd')]) {
    const stat = statSync(file);
    hash.update(`${file} ${stat.size} ${stat.mtimeMs}\n`);
  }
  return hash.digest('hex').slice(0, 16);
}

/** The seed's containerd root for these archives, made now if missing (older seeds are removed then). */
export async function imageSeed(
  ns: ClusterNamespace,
  clusterDir: string,
  archives: string[],
  logDir: string,
): Promise<string> {
  const key = seedKey(archives);
  const seed = join(seedsDir(), key);
  if (existsSync(join(seed, 'complete'))) return join(seed, 'root');
  const builder = nodeAddresses(9);
  const paths = nodePaths(clusterDir, { ...builder, name: 'image-seed' }, '');
  const containerd = await startContainerd(ns, builder, paths, 'image-seed', logDir, undefined);
  try {
    await importImages(paths, archives);
  } finally {
    await containerd.stop('SIGTERM', 10_000);
  }
  // Older seeds go, but the newest others stay: another checkout or spec may be planting one right now.
  const others = (existsSync(seedsDir()) ? readdirSync(seedsDir()) : [])
    .filter((name) => name !== key && !name.includes('.building'))
    .map((name) => ({ name, mtime: statSync(join(seedsDir(), name)).mtimeMs }))
    .sort((a, b) => b.mtime - a.mtime);
  for (const old of others.slice(KEPT_SEEDS)) rmSync(join(seedsDir(), old.name), { recursive: true, force: true });
  // A seed left half-made by a killed run.
  for (const name of existsSync(seedsDir()) ? readdirSync(seedsDir()) : [])
    if (name.includes('.building') && Date.now() - statSync(join(seedsDir(), name)).mtimeMs > 3_600_000)
      rmSync(join(seedsDir(), name), { recursive: true, force: true });
  // Made aside and renamed into place: a cluster starting meanwhile sees no seed or a whole one. When two made the
  // same seed at once, the first rename wins and the other's copy goes.
  const building = `${seed}.building-${process.pid}-${Date.now()}`;
  mkdirSync(building, { recursive: true });
  renameSync(containerdRoot(paths), join(building, 'root'));
  writeFileSync(join(building, 'complete'), `${archives.join('\n')}\n`);
  try {
    renameSync(building, seed);
  } catch {
    rmSync(building, { recursive: true, force: true });
    if (!existsSync(join(seed, 'complete'))) throw new Error(`image seed ${seed} is incomplete: remove it`);
  }
  return join(seed, 'root');
}
