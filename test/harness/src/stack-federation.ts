// `make up CLUSTERS=n`: n local stacks (each its own apiserver + etcd,
// control plane, node agents and fake-sandboxds) federated through one
// redis-server — its database 0 is the hub, database i holds cluster i's
// claims — with a same-named sample SandboxEnv in every cluster. The first
// cluster keeps the single-cluster files (`<dir>/kubeconfig`,
// `<dir>/claims-url`); cluster i's are under `<dir>/cluster-<i>/`. Each
// cluster's peers file and the per-direction tokens are in `<dir>/federation/`.
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { writeFederationPeers } from './federation-peers.js';
import { startRedis } from './redis.js';
import { preferredOrFreePort } from './stack-ports.js';
import {
  DEFAULT_STACK_DIR,
  startStack,
  type LocalStack,
  type StartStackOptions,
  type UnexpectedExit,
} from './stack.js';

export interface FederatedStacks {
  readonly stacks: readonly LocalStack[];
  readonly hubUrl: string;
  /** Each cluster's peers file (--federation-peers-file) and the tokens it names. */
  readonly federationDir: string;
  /** The first of any stack's unexpected exits. */
  readonly unexpectedExit: Promise<UnexpectedExit>;
  stop(): Promise<void>;
}

/** Per-cluster settings derived from the index (from 1): loopback 127.0.<i>, ports shifted by 10 × (i − 1). */
export async function startFederatedStacks(
  clusters: number,
  options: Omit<StartStackOptions, 'federation' | 'redis' | 'redisDb' | 'dir' | 'loopbackPrefix'> & { dir?: string },
): Promise<FederatedStacks> {
  if (!Number.isInteger(clusters) || clusters < 2 || clusters > 9)
    throw new Error(`clusters must be 2..9, got ${clusters}`);
  const log = options.log ?? ((): void => undefined);
  const dir = resolve(options.dir ?? DEFAULT_STACK_DIR);
  mkdirSync(dir, { recursive: true });
  log("starting redis-server (the federation hub, and every cluster's claims)");
  const redis = await startRedis();
  // Every cluster's peers file names the others' claim APIs, so their ports are chosen before any cluster starts.
  const claimsPorts: number[] = [];
  for (let i = 1; i <= clusters; i++)
    claimsPorts.push((await preferredOrFreePort('127.0.0.1', (options.claimsPort ?? 8081) + 10 * (i - 1))).port);
  const federationDir = join(dir, 'federation');
  const peersFiles = writeFederationPeers(
    federationDir,
    claimsPorts.map((port, i) => ({ id: `cluster-${i + 1}`, claimsUrl: `http://127.0.0.1:${port}` })),
  );
  const stacks: LocalStack[] = [];
  const stop = async (): Promise<void> => {
    for (const stack of [...stacks].reverse()) await stack.stop();
    log('stopping redis-server');
    await redis.stop();
  };
  try {
    for (let i = 1; i <= clusters; i++) {
      const shift = 10 * (i - 1);
      const clusterLog = (line: string): void => log(`[cluster-${i}] ${line}`);
      stacks.push(
        await startStack({
          ...options,
          dir: i === 1 ? dir : join(dir, `cluster-${i}`),
          clusterName: `warmpool-cluster-${i}`,
          loopbackPrefix: `127.0.${i}`,
          controlPlanePort: (options.controlPlanePort ?? 8080) + shift,
          claimsPort: claimsPorts[i - 1] ?? 0,
          routerPort: (options.routerPort ?? 8090) + shift,
          redis,
          redisDb: i,
          federation: { clusterId: `cluster-${i}`, hubUrl: redis.url, peersFile: peersFiles.get(`cluster-${i}`) },
          sampleEnv: true,
          log: clusterLog,
        }),
      );
      const expected = `http://127.0.0.1:${claimsPorts[i - 1]}`;
      if (stacks.at(-1)?.description.claimsUrl !== expected)
        throw new Error(
          `cluster-${i}'s claim API port was taken meanwhile (the peers files name ${expected}): start again`,
        );
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    stacks,
    hubUrl: redis.url,
    federationDir,
    unexpectedExit: Promise.race(stacks.map((stack) => stack.unexpectedExit)),
    stop,
  };
}
