// One setup surface for the control plane's integration specs: a log
// directory, a real apiserver (and a real Redis when asked) started side by
// side, the fleet token on file, a fleet of real nodes, and what the spec starts
// on top (in-process control planes, namespaces, cleanup of its own).
// close() ends all of it, the spec's own steps and control planes first, each
// step on its own (one throwing does not skip the rest), then the log directory.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  eventually,
  forgetRemoveAtExit,
  removeAtExit,
  startCluster,
  startRedis,
  stopScripts,
  tearDown,
  type TeardownStep,
  type TestCluster,
  type TestRedis,
} from '@warmpool/harness';
import { startControlPlane } from './control-plane.js';
import { startFleet, type Fleet, type FleetOptions } from './fleet.js';
import type { ControlPlane, ControlPlaneOptions } from '../../src/options.js';
import { kubectl } from './objects.js';
import { PROCESS_LEASE, type LeaseTiming, type ReplicaOptions } from './replicas.js';

export interface WorldOptions {
  /** The cluster's name; the log directory is named after it too (warmpool-<name>-…). */
  name: string;
  /** The fleet token: on file for agents and replica processes, given to in-process control planes. */
  token: string;
  /** A real redis-server beside the apiserver. */
  redis?: boolean;
  /** Real nodes (an agent in front of a fake-sandboxd each), started once the apiserver is up. */
  fleet?: Omit<FleetOptions, 'dir' | 'kubeconfigPath' | 'tokenFile' | 'token'>;
}

type ClaimsOptions = NonNullable<ControlPlaneOptions['claims']>;

/** Where an in-process claim API listens: loopback, any free port. */
const LOOPBACK_ANY_PORT = { host: '127.0.0.1', port: 0 } as const;

export class TestWorld {
  readonly name: string;
  readonly token: string;
  /** Logs of everything started here; removed by close() unless WARMPOOL_KEEP_LOGS=1. */
  readonly dir: string;
  /** The fleet token, as agents and replica processes read it. */
  readonly tokenFile: string;
  #cluster: TestCluster | undefined;
  #redis: TestRedis | undefined;
  #fleet: Fleet | undefined;
  /** The spec's own steps and control planes, run last-started first. */
  readonly #deferred: TeardownStep[] = [];
  readonly #namespaces: string[] = [];

  private constructor(name: string, token: string) {
    this.name = name;
    this.token = token;
    this.dir = mkdtempSync(join(tmpdir(), `warmpool-${name}-`));
    // A run that ends before close() (a failed start, a crash) still leaves no log directory behind.
    removeAtExit(this.dir);
    this.tokenFile = join(this.dir, 'token');
    writeFileSync(this.tokenFile, token + '\n');
  }

  get cluster(): TestCluster {
    return this.#present(this.#cluster, 'apiserver');
  }

  get redis(): TestRedis {
    return this.#present(this.#redis, 'Redis (testWorld({ redis: true }))');
  }

  get fleet(): Fleet {
    return this.#present(this.#fleet, 'fleet (testWorld({ fleet: { count } }))');
  }

  /** Redis again on the port it had, after the spec stopped it (clients reconnect); close() stops this one. */
  async startRedisAgain(): Promise<TestRedis> {
    this.#redis = await startRedis({ port: this.redis.port });
    return this.#redis;
  }

  /** A fresh namespace named after `prefix`; emptyNamespaces() empties it later. */
  async namespace(prefix: string): Promise<string> {
    const name = await this.cluster.createNamespace(prefix);
    this.#namespaces.push(name);
    return name;
  }

  /**
   * Deletes every object of `kinds` (kubectl's comma list) in the namespaces
   * namespace() made since the last call: namespaces never finish terminating
   * without a controller manager, so a spec removes what would keep driving.
   */
  async emptyNamespaces(kinds: string): Promise<void> {
    const namespaces = this.#namespaces.splice(0);
    // Each namespace on its own: one failing delete does not leave the others full.
    const results = await Promise.allSettled(
      namespaces.map((ns) => kubectl(this.cluster, ['delete', kinds, '--all', '-n', ns, '--wait=false'])),
    );
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
  }

  /** The claim pipeline on this world's Redis, its HTTP API on loopback. */
  claimsOptions(more: Partial<ClaimsOptions> = {}): ClaimsOptions {
    return { redis: { url: this.redis.url }, listen: LOOPBACK_ANY_PORT, ...more };
  }

  /**
   * An in-process control plane with the specs' short timings, watching
   * `namespace`, with the world's token unless overridden. close() closes it;
   * closing it earlier is fine (it closes once).
   */
  async controlPlane(namespace: string, overrides: Partial<ControlPlaneOptions> = {}): Promise<ControlPlane> {
    const controlPlane = await startControlPlane(this.cluster, this.dir, namespace, {
      token: this.token,
      ...overrides,
    });
    const close = controlPlane.close.bind(controlPlane);
    let closing: Promise<void> | undefined;
    controlPlane.close = () => (closing ??= close());
    this.defer(() => controlPlane.close());
    return controlPlane;
  }

  /** controlPlane(), once it holds the lease. */
  async leader(namespace: string, overrides: Partial<ControlPlaneOptions> = {}): Promise<ControlPlane> {
    const controlPlane = await this.controlPlane(namespace, overrides);
    await eventually(() => controlPlane.isLeader(), { what: 'the control plane to lead' });
    return controlPlane;
  }

  /** What startReplica needs to run control-plane processes on this world's apiserver and token. */
  replicaOptions(namespace: string, more: { lease?: LeaseTiming; setPoolsTimeout?: string } = {}): ReplicaOptions {
    return {
      cluster: this.cluster,
      dir: this.dir,
      namespace,
      tokenFile: this.tokenFile,
      lease: more.lease ?? PROCESS_LEASE,
      ...(more.setPoolsTimeout !== undefined ? { setPoolsTimeout: more.setPoolsTimeout } : {}),
    };
  }

  /** A cleanup step of the spec's own, run by close() before the world's (the last deferred first). */
  defer(step: TeardownStep): void {
    this.#deferred.push(step);
  }

  /** Ends everything: the spec's steps and control planes, the fleet, every process left, Redis, the apiserver. */
  async close(): Promise<void> {
    // From here tearDown decides: removed, or kept with WARMPOOL_KEEP_LOGS=1.
    forgetRemoveAtExit(this.dir);
    await tearDown(
      { dir: this.dir, what: this.name },
      ...this.#deferred.splice(0).reverse(),
      () => this.#fleet?.stop(),
      () => stopScripts(),
      () => this.#redis?.stop(),
      () => this.#cluster?.stop(),
    );
  }

  /** A world with what `options` asks for, started; when a part fails to start, what did start is closed. */
  static async start(options: WorldOptions): Promise<TestWorld> {
    const world = new TestWorld(options.name, options.token);
    try {
      await world.#start(options);
    } catch (err) {
      await world.close().catch(() => undefined);
      throw err;
    }
    return world;
  }

  /** The apiserver and Redis side by side, then the fleet. */
  async #start(options: WorldOptions): Promise<void> {
    const [cluster, redis] = await Promise.allSettled([
      startCluster({ name: options.name }),
      options.redis === true ? startRedis() : Promise.resolve(undefined),
    ]);
    if (cluster.status === 'fulfilled') this.#cluster = cluster.value;
    if (redis.status === 'fulfilled') this.#redis = redis.value;
    if (cluster.status === 'rejected') throw cluster.reason;
    if (redis.status === 'rejected') throw redis.reason;
    if (options.fleet !== undefined)
      this.#fleet = await startFleet({
        ...options.fleet,
        dir: this.dir,
        kubeconfigPath: this.cluster.kubeconfigPath,
        tokenFile: this.tokenFile,
        token: this.token,
      });
  }

  #present<T>(part: T | undefined, what: string): T {
    if (part === undefined) throw new Error(`this world has no ${what}`);
    return part;
  }
}

/** A world with what `options` asks for, started; when a part fails to start, what did start is closed. */
export function testWorld(options: WorldOptions): Promise<TestWorld> {
  return TestWorld.start(options);
}

/** Several worlds side by side (e.g. two clusters); when one fails to start, the others are closed too. */
export async function testWorlds(...options: WorldOptions[]): Promise<TestWorld[]> {
  const started = await Promise.allSettled(options.map((o) => testWorld(o)));
  const failed = started.find((s) => s.status === 'rejected');
  if (failed === undefined) return started.map((s) => (s as PromiseFulfilledResult<TestWorld>).value);
  await Promise.allSettled(started.map((s) => (s.status === 'fulfilled' ? s.value.close() : undefined)));
  throw failed.reason;
}
