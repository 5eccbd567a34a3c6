// The local stack's sample: a SandboxTemplate and a SandboxWarmPool (and, when
// asked, a SandboxEnv over the pool), written to `<dir>/sample.json` and
// applied server-side.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TestCluster } from './cluster.js';
import { SAMPLE_IMAGE, SAMPLE_NAME, SAMPLE_REPLICAS, sampleManifest } from './stack-manifests.js';
import type { StackContext } from './stack-parts.js';

export interface StackSampleOptions {
  name?: string;
  image?: string;
  replicas?: number;
}

export interface StackSample {
  namespace: string;
  name: string;
  image: string;
  replicas: number;
  manifestPath: string;
}

/** Applies the sample in the stack's namespace (default: python:3.13-slim, 30 replicas); `env` adds a SandboxEnv. */
export async function applySample(
  cluster: TestCluster,
  { dir, namespace, log }: StackContext,
  options: StackSampleOptions,
  env: boolean,
): Promise<StackSample> {
  const wanted = {
    namespace,
    name: options.name ?? SAMPLE_NAME,
    image: options.image ?? SAMPLE_IMAGE,
    replicas: options.replicas ?? SAMPLE_REPLICAS,
  };
  const manifestPath = join(dir, 'sample.json');
  writeFileSync(manifestPath, sampleManifest(wanted, { env }));
  log(
    `applying the sample SandboxTemplate and SandboxWarmPool ${namespace}/${wanted.name} (${wanted.replicas} replicas of ${wanted.image})`,
  );
  const applied = await cluster.kubectl([
    'apply',
    '--server-side',
    '--field-manager=warmpool-local',
    '-f',
    manifestPath,
  ]);
  if (applied.code !== 0) throw new Error(`applying ${manifestPath} failed:\n${applied.stderr}${applied.stdout}`);
  return { ...wanted, manifestPath };
}
