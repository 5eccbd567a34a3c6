// `make up CLUSTERS=n`: n local stacks (each its own apiserver + etcd,
// control plane, node agents and fake-sandboxds) federated through one
// redis-server — its database 0 is the hub, database i holds cluster i's
// claims — with a same-named sample SandboxEnv in every cluster. The first
// cluster keeps the single-cluster files (`<dir>/kubeconfig`,
// `<dir>/claims-url`); cluster i's are under `<dir>/cluster-<i>/`.
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { startRedis } from './redis.js';
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
  readonly federationTokenFile: string;
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
  const federationTokenFile = join(dir, 'federation-token');
  writeFileSync(federationTokenFile, `${randomBytes(24).toString('hex')}\n`, { mode: 0o600 });
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
          claimsPort: (options.claimsPort ?? 8081) + shift,
          redis,
          redisDb: i,
          federation: { clusterId: `cluster-${i}`, hubUrl: redis.url, tokenFile: federationTokenFile },
          sampleEnv: true,
          log: clusterLog,
        }),
      );
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    stacks,
    hubUrl: redis.url,
    federationTokenFile,
    unexpectedExit: Promise.race(stacks.map((stack) => stack.unexpectedExit)),
    stop,
  };
}
