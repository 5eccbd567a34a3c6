// The Sandbox API behind the real apiserver's aggregation layer, for specs:
// a serving certificate from a CA of the spec's own, the APIService and an
// ExternalName Service pointing at the control plane on loopback, calls
// straight to the control plane as the front proxy (or as anyone else), and
// what etcd holds.
import { request } from 'node:https';
import { issueCertificate, type IssuedCertificate, type TestCluster } from '@warmpool/harness';
import { kubectl } from './objects.js';
import { eventually } from './wait.js';

export const API_SERVICE_NAMESPACE = 'kube-system';
export const API_SERVICE_NAME = 'warmpool-sandbox-api';

export interface ServingPki {
  ca: IssuedCertificate;
  serving: IssuedCertificate;
}

/** A CA and a serving certificate for <service>.<namespace>.svc, the name the aggregator verifies. */
export function servingPki(): ServingPki {
  const ca = issueCertificate({ subject: { commonName: 'sandbox-api-test-ca' }, isCa: true });
  const serving = issueCertificate({
    subject: { commonName: API_SERVICE_NAME }, issuer: ca, usages: ['server'],
    dnsNames: [`${API_SERVICE_NAME}.${API_SERVICE_NAMESPACE}.svc`, 'localhost'], ipAddresses: ['127.0.0.1'],
  });
  return { ca, serving };
}

/**
 * Serves agents.x-k8s.io/v1beta1 from `port` on loopback instead of the Sandbox
 * CRD: the CRD goes, an ExternalName Service names 127.0.0.1, the APIService
 * points at it; waits until the aggregator calls it Available.
 */
export async function registerSandboxApi(cluster: TestCluster, port: number, caPem: string | undefined): Promise<void> {
  await kubectl(cluster, ['delete', 'crd', 'sandboxes.agents.x-k8s.io', '--ignore-not-found', '--wait=true']);
  const service = {
    apiVersion: 'v1', kind: 'Service',
    metadata: { name: API_SERVICE_NAME, namespace: API_SERVICE_NAMESPACE },
    spec: { type: 'ExternalName', externalName: '127.0.0.1', ports: [{ name: 'https', port, protocol: 'TCP' }] },
  };
  const apiService = {
    apiVersion: 'apiregistration.k8s.io/v1', kind: 'APIService',
    metadata: { name: 'v1beta1.agents.x-k8s.io' },
    spec: {
      group: 'agents.x-k8s.io', version: 'v1beta1', groupPriorityMinimum: 1000, versionPriority: 15,
      service: { namespace: API_SERVICE_NAMESPACE, name: API_SERVICE_NAME, port },
      ...(caPem !== undefined ? { caBundle: Buffer.from(caPem).toString('base64') } : { insecureSkipTLSVerify: true }),
    },
  };
  await kubectl(cluster, ['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [service, apiService] }));
  await eventually(async () => {
    const status = await kubectl(cluster, ['get', 'apiservice', 'v1beta1.agents.x-k8s.io', '-o', 'jsonpath={.status.conditions[?(@.type=="Available")].status}']);
    return status.trim() === 'True';
  }, { what: 'the APIService v1beta1.agents.x-k8s.io Available', timeoutMs: 60_000, everyMs: 500 });
}

export interface DirectAnswer {
  status: number;
  body: unknown;
}

/** A request straight to the control plane's Sandbox API, as `client` (a certificate and key) with these headers. */
export function callDirect(port: number, caPem: string, path: string, options: { client?: IssuedCertificate; headers?: Record<string, string>; method?: string } = {}): Promise<DirectAnswer> {
  return new Promise((resolve, reject) => {
    const req = request({
      host: '127.0.0.1', port, path, method: options.method ?? 'GET', ca: caPem, servername: 'localhost',
      ...(options.client !== undefined ? { cert: options.client.certPem, key: options.client.keyPem } : {}),
      headers: options.headers ?? {},
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body: unknown = text;
        try {
          body = JSON.parse(text);
        } catch {
          // not JSON
        }
        resolve({ status: res.statusCode ?? 0, body });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

/** How many keys etcd holds under a prefix, asked of etcd itself (its v3 JSON gateway). */
export async function etcdCount(cluster: TestCluster, prefix: string): Promise<number> {
  const key = Buffer.from(prefix);
  const end = Buffer.from(prefix);
  end[end.length - 1] = (end[end.length - 1] ?? 0) + 1;
  const res = await fetch(`${cluster.etcdUrl}/v3/kv/range`, {
    method: 'POST',
    body: JSON.stringify({ key: key.toString('base64'), range_end: end.toString('base64'), count_only: true }),
  });
  const body = (await res.json()) as { count?: string };
  return Number(body.count ?? '0');
}
