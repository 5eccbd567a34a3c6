// The local stack's control plane on 127.0.0.1: its metrics/readiness port,
// its claim API, and the Sandbox API it serves behind the apiserver's
// aggregation layer (registered here, in place of the Sandbox CRD).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SandboxType } from '@warmpool/api';
import { registerAggregatedApi } from './aggregation.js';
import type { TestCluster } from './cluster.js';
import { quietPort } from './ports.js';
import { APP_ENTRYPOINTS, waitForHttp } from './stack-apps.js';
import type { StackContext } from './stack-parts.js';
import { preferredOrFreePort, takenNote } from './stack-ports.js';

export interface StackFederation {
  clusterId: string;
  /** The hub (--federation-redis-url). */
  hubUrl: string;
  /** The peer clusters and their credentials (--federation-peers-file; see writeFederationPeers). */
  peersFile?: string;
}

export interface ControlPlaneSettings {
  /** Preferred ports (0 = any free one); a taken one is replaced by a free one. */
  port: number;
  claimsPort: number;
  /** The reconcile interval, a Go-style duration. */
  interval: string;
  /** Where the claims live (--redis-url). */
  redisUrl: string;
  federation: StackFederation | undefined;
}

export interface ControlPlaneUrls {
  controlPlaneUrl: string;
  claimsUrl: string;
  /** The Sandbox API behind the APIService v1beta1.agents.x-k8s.io (self-signed). */
  sandboxApiUrl: string;
}

/** Starts the control plane, waits until its claim API answers, and registers its Sandbox API. */
export async function startControlPlane(
  cluster: TestCluster,
  { dir, kubeconfig, tokenFile, namespace, parts, log }: StackContext,
  settings: ControlPlaneSettings,
): Promise<ControlPlaneUrls> {
  const cpPort = await preferredOrFreePort('127.0.0.1', settings.port);
  const controlPlaneUrl = `http://127.0.0.1:${cpPort.port}`;
  const claimsPort = await preferredOrFreePort('127.0.0.1', settings.claimsPort);
  const claimsUrl = `http://127.0.0.1:${claimsPort.port}`;
  const sandboxApiPort = await quietPort();
  const sandboxApiUrl = `https://127.0.0.1:${sandboxApiPort}`;
  log(
    `starting the control plane on ${controlPlaneUrl}${takenNote(settings.port, cpPort)}, its claim API on ${claimsUrl}${takenNote(settings.claimsPort, claimsPort)}`,
  );
  const controlPlane = parts.startApp('control-plane', APP_ENTRYPOINTS.controlPlane, [
    `--kubeconfig=${kubeconfig}`,
    `--token-file=${tokenFile}`,
    `--listen=127.0.0.1:${cpPort.port}`,
    `--interval=${settings.interval}`,
    `--namespace=${namespace}`,
    `--identity=local-${process.pid}`,
    `--redis-url=${settings.redisUrl}`,
    `--claims-listen=127.0.0.1:${claimsPort.port}`,
    ...federationFlags(settings.federation),
    `--aggregated-listen=127.0.0.1:${sandboxApiPort}`,
  ]);
  await waitForHttp(controlPlane, `${controlPlaneUrl}/readyz`);
  // /readyz can answer before the claim API's listener is bound (it starts after the caches and Redis).
  await waitForHttp(controlPlane, `${claimsUrl}/openapi.json`);
  // For scripts: `curl -X POST … $(cat .local/claims-url)`.
  writeFileSync(join(dir, 'claims-url'), `${claimsUrl}/v1/namespaces/${namespace}/claims\n`);
  // `kubectl get sandboxes` through the aggregation layer, instead of the Sandbox CRD.
  log(`registering the Sandbox API (APIService v1beta1.agents.x-k8s.io) at ${sandboxApiUrl}`);
  await registerAggregatedApi(cluster, {
    group: SandboxType.group,
    version: SandboxType.version,
    port: sandboxApiPort,
    replacesCrd: `${SandboxType.plural}.${SandboxType.group}`,
    serviceName: 'warmpool-sandbox-api',
  });
  return { controlPlaneUrl, claimsUrl, sandboxApiUrl };
}

function federationFlags(federation: StackFederation | undefined): string[] {
  if (federation === undefined) return [];
  return [
    `--cluster-id=${federation.clusterId}`,
    `--federation-redis-url=${federation.hubUrl}`,
    ...(federation.peersFile !== undefined ? [`--federation-peers-file=${federation.peersFile}`] : []),
  ];
}
