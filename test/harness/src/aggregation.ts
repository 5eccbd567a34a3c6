// Registers an extension apiserver running on loopback with the test
// cluster's aggregation layer: an ExternalName Service naming 127.0.0.1 (the
// aggregator resolves ExternalName Services without kube-proxy or endpoints)
// and an APIService pointing at it. kube-apiserver then proxies the group
// version there with its front-proxy client certificate.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { TestCluster } from './cluster.js';
import type { KubectlOptions } from './kubectl.js';
import { eventually } from './wait.js';

export interface AggregatedApiOptions {
  group: string;
  version: string;
  /** The extension apiserver's port on 127.0.0.1. */
  port: number;
  /** PEM of the CA of its serving certificate (issued for <service>.<namespace>.svc); absent: insecureSkipTLSVerify. */
  caPem?: string;
  /** Where the Service goes (default kube-system) and its name (default `<version>-<group with dashes>`). */
  serviceNamespace?: string;
  serviceName?: string;
  /** A CRD serving the same group version is deleted first (the APIService replaces it). */
  replacesCrd?: string;
  availableTimeoutMs?: number;
}

/** Registers and waits until the aggregator calls the APIService Available; kubectl's discovery cache is dropped. */
export async function registerAggregatedApi(cluster: TestCluster, options: AggregatedApiOptions): Promise<void> {
  if (options.replacesCrd !== undefined) await deleteCrd(cluster, options.replacesCrd);
  const namespace = options.serviceNamespace ?? 'kube-system';
  const name = options.serviceName ?? `${options.version}-${options.group.replaceAll('.', '-')}`.slice(0, 63);
  const apiServiceName = `${options.version}.${options.group}`;
  const service = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace },
    spec: {
      type: 'ExternalName',
      externalName: '127.0.0.1',
      ports: [{ name: 'https', port: options.port, protocol: 'TCP' }],
    },
  };
  const apiService = {
    apiVersion: 'apiregistration.k8s.io/v1',
    kind: 'APIService',
    metadata: { name: apiServiceName },
    spec: {
      group: options.group,
      version: options.version,
      groupPriorityMinimum: 1000,
      versionPriority: 15,
      service: { namespace, name, port: options.port },
      ...(options.caPem !== undefined
        ? { caBundle: Buffer.from(options.caPem).toString('base64') }
        : { insecureSkipTLSVerify: true }),
    },
  };
  await kubectlOrThrow(cluster, ['apply', '-f', '-'], {
    input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [service, apiService] }),
  });
  let last = '';
  await eventually(
    async () => {
      const result = await cluster.kubectl([
        'get',
        'apiservice',
        apiServiceName,
        '-o',
        'jsonpath={.status.conditions[?(@.type=="Available")]}',
      ]);
      last = result.stdout;
      return result.stdout.includes('"status":"True"');
    },
    {
      timeoutMs: options.availableTimeoutMs ?? 60_000,
      intervalMs: 500,
      what: () => `APIService ${apiServiceName} to be Available (last: ${last})`,
    },
  );
  rmSync(join(cluster.dataDir, 'kubectl-cache'), { recursive: true, force: true });
}

/** How long a deleted CRD may stay Terminating before an empty one has its cleanup finalizer removed. */
const CRD_CLEANUP_GRACE_MS = 30_000;

/**
 * Deletes CRD `name` and waits until it is gone, by polling (no watch to miss an event). The apiextensions cleanup
 * finalizer deletes a CRD's objects first, and its controller retries a failed pass with exponential backoff, so on
 * a loaded machine a CRD installed moments before may stay Terminating for minutes; `kubectl delete --wait` did not
 * return for over 150 s here twice (which of the two stalled is not known). So the CRD must be Established before it
 * is deleted, and once it has been Terminating for `graceMs` with no object left, its finalizer is removed (nothing
 * is left for it to clean up). A CRD that still holds objects is waited on, never forced.
 */
export async function deleteCrd(cluster: TestCluster, name: string, graceMs = CRD_CLEANUP_GRACE_MS): Promise<void> {
  const exists = async (): Promise<boolean> =>
    (await kubectlOrThrow(cluster, ['get', 'crd', name, '--ignore-not-found', '-o', 'name'])).trim() !== '';
  if (!(await exists())) return;
  await cluster.waitForCrds([`crd/${name}`]);
  await kubectlOrThrow(cluster, ['delete', 'crd', name, '--ignore-not-found', '--wait=false']);
  const deleted = Date.now();
  let forced = false;
  await eventually(
    async () => {
      if (!(await exists())) return true;
      if (!forced && Date.now() - deleted > graceMs) {
        const objects = await cluster.kubectl(['get', name, '--all-namespaces', '-o', 'name']);
        if (objects.code === 0 && objects.stdout.trim() === '') {
          await kubectlOrThrow(cluster, [
            'patch',
            'crd',
            name,
            '--type=merge',
            '-p',
            '{"metadata":{"finalizers":null}}',
          ]);
          forced = true;
        }
      }
      return false;
    },
    { timeoutMs: 120_000, intervalMs: 500, what: () => `CRD ${name} to be deleted (finalizer removed: ${forced})` },
  );
}

/** kubectl's stdout; a non-zero exit throws with what kubectl printed. */
async function kubectlOrThrow(cluster: TestCluster, args: string[], options: KubectlOptions = {}): Promise<string> {
  const result = await cluster.kubectl(args, options);
  if (result.code !== 0) throw new Error(`kubectl ${args.join(' ')} failed:\n${result.stderr}${result.stdout}`);
  return result.stdout;
}
