// The composition root: builds each subsystem and lists it as a runnable for the manager (manager/manager.ts). The
// list's order is the every-replica runnables' start order (close runs it backwards); leader-only ones start at each
// term. Leadership, readiness, liveness and the ordered close are the manager's.
import type { KubeObject } from '@warmpool/api';
import type { Informer } from '@warmpool/kube';
import { Registry } from 'prom-client';
import { silentLogger, systemClock } from '@warmpool/runtime';
import { DEFAULT_LEASE_NAME, defaultIdentity } from './config/settings.js';
import { createPoolAutoscalerOf, poolAutoscalerRunnables } from './controllers/pool-autoscaler/pool-autoscaler.js';
import { sandboxClaimsRunnable } from './controllers/sandboxclaims/sandboxclaims.js';
import { sandboxEnvRunnables } from './controllers/sandboxenvs/sandboxenvs.js';
import { warmPoolRunnable } from './controllers/warmpool/runnable.js';
import { createFederation, federationRunnables } from './federation/setup.js';
import { HealthServers, registerBuildInfo } from './http/health.js';
import { cachesRunnable } from './manager/caches.js';
import { leaseTimingsOf, Manager } from './manager/manager.js';
import { WarmPoolMetrics } from './controllers/warmpool/metrics.js';
import type { ControlPlane, ControlPlaneOptions } from './options.js';
import type { SandboxApi } from './sandbox-api/sandbox-api.js';
import {
  createClaimSide,
  createDriverSide,
  createEnvSide,
  createSandboxApiOf,
  type ClaimSide,
  type DriverSide,
  type Shared,
} from './subsystems.js';
import { staticToken } from './agents/token.js';

export const COMPONENT = 'warmpool-control-plane';

export function createControlPlane(options: ControlPlaneOptions): ControlPlane {
  const { kubeConfig } = options;
  const logger = options.logger ?? silentLogger;
  const clock = options.clock ?? systemClock;
  const token = typeof options.token === 'function' ? options.token : staticToken(options.token);
  const namespace = options.namespace ?? 'default';
  const identity = options.identity ?? defaultIdentity();
  const leaseName = options.leaseName ?? DEFAULT_LEASE_NAME;
  const registry = options.registry ?? new Registry();
  registerBuildInfo(registry, options.version);
  const metrics = new WarmPoolMetrics(registry);
  const kubeLogger = logger.child({ subsystem: 'kube' });
  const shared: Shared = { kubeConfig, token, metrics, logger, kubeLogger, clock, component: COMPONENT };
  const elect = options.leaderElection !== false;
  const manager = new Manager({
    election: { kubeConfig, namespace, leaseName, identity, elect, token, ...leaseTimingsOf(options) },
    logger,
    onLeading: (leading) => metrics.leading(leading),
  });
  const driver = createDriverSide(shared, options, { identity, namespace, leaseName, elect, manager });
  const { reconciler, pools, templates, inventories } = driver;
  const federation = createFederation(options.federation ?? {}, {
    promRegistry: registry,
    logger: logger.child({ subsystem: 'federation' }),
  });
  const envs = createEnvSide(shared, options, driver, federation);
  const poolAutoscaler = createPoolAutoscalerOf(shared, options, driver);
  const onServed = poolAutoscaler?.served;
  const claims = createClaimSide(shared, options, { identity, driver, envs, federation, onServed });
  const sandboxApi = createSandboxApiOf(shared, options.sandboxApi, driver, claims);

  const reads = [pools, templates, inventories] as Array<Informer<KubeObject>>;
  const optional = [claims?.sandboxClaims.informer, poolAutoscaler?.informer].filter((i) => i !== undefined);
  const caches = [...reads, envs.informer, ...driver.driverOnly, ...optional] as Array<Informer<KubeObject>>;
  const [claimCounts, poolAutoscaling] = poolAutoscaler ? poolAutoscalerRunnables(poolAutoscaler, reads) : [];
  const servers = new HealthServers({
    listen: options.listen,
    probeListen: options.probeListen,
    metrics: registry,
    notReadyReasons: () => manager.notReadyReasons(),
    notLiveReasons: () => manager.notLiveReasons(),
    describe: () => ({ identity, leader: manager.leading && reconciler.driving, leaseHolder: manager.leaseHolder }),
    ...(claims ? { claimsNotReadyReasons: () => claims.pipeline.notReadyReasons() } : {}),
  });
  const [envCapacity, envStatus] = sandboxEnvRunnables(envs, reads);
  const [federationWatcher, federationReporter] = federationRunnables(federation, [...reads, envs.informer], logger);
  manager.add(servers, cachesRunnable(caches), envCapacity, federationWatcher);
  manager.add(claimCounts, claims?.pipeline, claims?.api, sandboxApi);
  manager.add(
    warmPoolRunnable({ driver, clock, stallTimeoutMs: options.stallTimeoutMs ?? 120_000, logger }),
    claims && sandboxClaimsRunnable(claims.sandboxClaims),
    envStatus,
    poolAutoscaling,
    federationReporter,
  );

  return controlPlaneOf({ shared, identity, namespace, leaseName, manager, servers, driver, claims, sandboxApi });
}

interface Composed {
  identity: string;
  namespace: string;
  leaseName: string;
  shared: Shared;
  manager: Manager;
  servers: HealthServers;
  driver: DriverSide;
  claims: ClaimSide | undefined;
  sandboxApi: SandboxApi | undefined;
}

/** The control plane as its callers see it: what the manager and the servers say, start and close. */
function controlPlaneOf(composed: Composed): ControlPlane {
  const { identity, namespace, leaseName, manager, servers, claims, sandboxApi } = composed;
  const { logger, metrics } = composed.shared;
  const { reconciler } = composed.driver;
  const start = async (): Promise<void> => {
    await manager.start();
    logger.info('control plane started', {
      identity,
      namespace,
      lease: leaseName,
      url: servers.url ?? null,
      claimsUrl: claims?.api.url ?? null,
      sandboxApiUrl: sandboxApi?.url ?? null,
      ...reconciler.settings,
    });
  };
  let started: Promise<void> | undefined;
  return {
    identity,
    registry: metrics.registry,
    get url() {
      return servers.url;
    },
    get probeUrl() {
      return servers.probeUrl;
    },
    notLiveReasons: () => manager.notLiveReasons(),
    get claimsUrl() {
      return claims?.api.url;
    },
    get sandboxApiUrl() {
      return sandboxApi?.url;
    },
    notReadyReasons: () => manager.notReadyReasons(),
    ready: () => manager.notReadyReasons().length === 0,
    isLeader: () => manager.leading && reconciler.driving,
    start: () => (started ??= start()),
    close: () => manager.close(),
  };
}
