// The Sandbox API composed: the view (fed by the NodeInventory informer and
// the claim index's event stream), the reader for get, the front proxy's
// settings, SubjectAccessReviews, and the TLS server. Every replica serves it.
import {
  AGENTS_GROUP,
  SandboxType,
  type NodeInventory,
  type SandboxClaim,
  type SandboxTemplate,
  type SandboxWarmPool,
} from '@warmpool/api';
import type { Informer, KubeTransport } from '@warmpool/kube';
import { closeInOrder, type HostPort, type Logger } from '@warmpool/runtime';
import type { Registry } from 'prom-client';
import type { Runnable } from '../manager/runnable.js';
import type { AddressCheck } from '../nodes/addresses.js';
import { AgentClient } from '../agents/client.js';
import type { ProvisioningPipeline } from '../provisioning/pipeline.js';
import type { ClaimGrant } from '../provisioning/claim-service.js';
import type { RedisSettings } from '../redis/connection.js';
import type { TokenSource } from '../token.js';
import { KubeAccessReviewer } from '@warmpool/kube';
import { ClaimFeed } from './claim-feed.js';
import { RequestHeaderSource } from '../http/access/front-proxy.js';
import { enrichFromIndex } from './index-enricher.js';
import { followInventories } from './inventory-feed.js';
import { SandboxApiMetrics } from './metrics.js';
import { SandboxReader } from './reader.js';
import type { SandboxAuthorizer } from './access.js';
import { SandboxApiServer } from './server.js';
import { servingCert } from './serving-cert.js';
import { SandboxView } from './view.js';

export interface SandboxApiOptions {
  listen: HostPort;
  /** PEM files; absent: a self-signed certificate made at start. */
  tls?: { certFile: string; keyFile: string };
  /** Extra DNS names for a self-signed certificate (e.g. the Service's). */
  selfSignedNames?: readonly string[];
  transport: KubeTransport;
  inventories: Informer<NodeInventory>;
  pools: Informer<SandboxWarmPool>;
  templates: Informer<SandboxTemplate>;
  /**
   * With provisioning: create / delete, get through the claim index, and the claim events; the SandboxClaim cache
   * tells delete which sandboxes are SandboxClaims'.
   */
  claims?: {
    pipeline: ProvisioningPipeline;
    /** The claim pipeline's Redis, for the claim feed. */
    redis: RedisSettings;
    eventsKey: string;
    sandboxClaims: Informer<SandboxClaim>;
  };
  /** The fleet token, to ask a node about a claim. */
  token: TokenSource;
  /** The driver's address check: a node is asked (with the fleet token) only at an address its Node vouches for. */
  addresses: () => AddressCheck;
  /** Timeout of asking a node during get (default 1 s). */
  nodeTimeoutMs?: number;
  /** Default: SubjectAccessReviews on sandboxes.agents.x-k8s.io, cached 10 s. */
  authorizer?: SandboxAuthorizer;
  registry: Registry;
  logger: Logger;
}

/** A runnable in every replica; its own readiness is its /readyz, not the replica's. */
export interface SandboxApi extends Runnable {
  readonly view: SandboxView;
  readonly url: string | undefined;
  /** Whether it serves a self-signed certificate (the APIService must then skip verification). */
  readonly selfSigned: boolean;
  notReadyReasons(): string[];
  start(): Promise<void>;
  close(): Promise<void>;
}

export function createSandboxApi(options: SandboxApiOptions): SandboxApi {
  const { logger } = options;
  const view = new SandboxView();
  const stopInventories = followInventories({
    view,
    inventories: options.inventories,
    pools: options.pools,
    templates: options.templates,
  });
  const feed =
    options.claims === undefined
      ? undefined
      : new ClaimFeed({
          redis: options.claims.redis,
          key: options.claims.eventsKey,
          view,
          logger: logger.child({ component: 'claim-feed' }),
        });
  const agents = new AgentClient({
    token: options.token,
    timeoutMs: options.nodeTimeoutMs ?? 1_000,
    connections: 2,
    logger,
  });
  const addressOf = (node: string): string | undefined =>
    options.inventories.lister.get(node)?.spec?.address || undefined;
  const pipeline = options.claims?.pipeline;
  const sandboxClaims = options.claims?.sandboxClaims;
  const reader = new SandboxReader({
    view,
    ...(pipeline !== undefined
      ? { lookup: (namespace: string, name: string) => lookupSandbox(pipeline, namespace, name) }
      : {}),
    askNode: async (node) => {
      const address = addressOf(node);
      if (address === undefined) throw new Error(`node ${node} has no NodeInventory`);
      const problem = options.addresses()(node, address);
      if (problem !== undefined) throw new Error(`node ${node} is not asked: ${problem}`);
      // Filtered by id by the reader: the node's claim_ref names the owner, which the Sandbox's name alone does not.
      return agents.list(address);
    },
  });
  const stopEnriching =
    pipeline === undefined
      ? undefined
      : enrichFromIndex({
          view,
          lookup: (namespace, name) => lookupSandbox(pipeline, namespace, name),
          logger: logger.child({ component: 'index-enricher' }),
        });
  const cert = servingCert({
    ...(options.tls !== undefined ? { certFile: options.tls.certFile, keyFile: options.tls.keyFile } : {}),
    ...(options.selfSignedNames !== undefined ? { extraNames: options.selfSignedNames } : {}),
  });
  const requestHeaders = new RequestHeaderSource({
    transport: options.transport,
    logger: logger.child({ component: 'front-proxy' }),
    // Called only once started, when the server exists.
    onChange: () => server.refreshTls(),
  });
  const reviewer = new KubeAccessReviewer({
    transport: options.transport,
    resource: { group: AGENTS_GROUP, resource: SandboxType.plural },
  });
  const notReadyReasons = (): string[] => {
    const reasons: string[] = [];
    for (const informer of [options.inventories, options.pools, options.templates] as const) {
      if (!informer.hasSynced()) reasons.push(`${informer.type.kind} cache not synced yet`);
    }
    if (feed !== undefined && !feed.replayed)
      reasons.push(`claim events not read yet${feed.failing !== undefined ? `: ${feed.failing}` : ''}`);
    return reasons;
  };
  const server = new SandboxApiServer({
    listen: options.listen,
    cert,
    view,
    reader,
    notReadyReasons,
    requestHeaders: () => requestHeaders.current,
    authorizer: options.authorizer ?? {
      authorize: (user, namespace, verb, name) => reviewer.authorize(user, namespace, verb, name),
    },
    ...(pipeline !== undefined ? { claims: pipeline } : {}),
    ...(sandboxClaims !== undefined
      ? {
          sandboxClaims: {
            hasSynced: () => sandboxClaims.hasSynced(),
            get: (namespace: string, name: string) => sandboxClaims.lister.get(namespace, name),
          },
        }
      : {}),
    metrics: new SandboxApiMetrics(options.registry, () => view.size),
    logger: logger.child({ component: 'server' }),
  });
  let sweeper: NodeJS.Timeout | undefined;

  return {
    name: 'Sandbox API',
    needsLeader: false,
    view,
    get url() {
      return server.url;
    },
    selfSigned: cert.selfSigned,
    notReadyReasons,
    async start() {
      await requestHeaders.start();
      feed?.start();
      sweeper = setInterval(() => view.sweep(), 1_000);
      sweeper.unref();
      await server.start();
      logger.info('Sandbox API serving', {
        url: server.url,
        selfSignedCertificate: cert.selfSigned,
        frontProxyReady: requestHeaders.current !== undefined,
      });
    },
    async close() {
      clearInterval(sweeper);
      await closeInOrder(
        'the Sandbox API',
        [
          ['server', () => server.close()],
          ['front proxy settings', () => requestHeaders.close()],
          ['claim feed', () => feed?.close()],
          ['inventory feed', () => stopInventories()],
          ['index enricher', () => stopEnriching?.()],
          ['agents', () => agents.close()],
        ],
        logger,
      );
    },
  };
}

/** A Sandbox is an HTTP claim or a SandboxClaim's sandbox of that name (the HTTP key space first). */
async function lookupSandbox(
  pipeline: ProvisioningPipeline,
  namespace: string,
  name: string,
): Promise<ClaimGrant | undefined> {
  return (
    (await pipeline.lookup({ namespace, door: 'http' }, name)) ?? pipeline.lookup({ namespace, door: 'crd' }, name)
  );
}
