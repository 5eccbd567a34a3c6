// The Sandbox API behind the real apiserver's aggregation layer, for specs:
// a serving certificate from a CA of the spec's own, its registration (the
// harness's ExternalName Service + APIService to loopback), calls
// straight to the control plane as the front proxy (or as anyone else), and
// what etcd holds.
import type { IncomingHttpHeaders } from 'node:http';
import { request, type RequestOptions } from 'node:https';
import { SandboxType } from '@warmpool/api';
import { issueCertificate, registerAggregatedApi, type IssuedCertificate, type TestCluster } from '@warmpool/harness';

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
    subject: { commonName: API_SERVICE_NAME },
    issuer: ca,
    usages: ['server'],
    dnsNames: [`${API_SERVICE_NAME}.${API_SERVICE_NAMESPACE}.svc`, 'localhost'],
    ipAddresses: ['127.0.0.1'],
  });
  return { ca, serving };
}

/**
 * Serves agents.x-k8s.io/v1beta1 from `port` on loopback instead of the Sandbox CRD (the harness's aggregation helper).
 */
export async function registerSandboxApi(cluster: TestCluster, port: number, caPem: string | undefined): Promise<void> {
  await registerAggregatedApi(cluster, {
    group: SandboxType.group,
    version: SandboxType.version,
    port,
    ...(caPem !== undefined ? { caPem } : {}),
    serviceNamespace: API_SERVICE_NAMESPACE,
    serviceName: API_SERVICE_NAME,
    replacesCrd: `${SandboxType.plural}.${SandboxType.group}`,
  });
}

export interface DirectAnswer {
  status: number;
  body: unknown;
}

export interface DirectOptions {
  client?: IssuedCertificate;
  headers?: Record<string, string>;
  method?: string;
  /** JSON, sent with its content-type. */
  body?: unknown;
}

function directRequest(port: number, caPem: string, path: string, options: DirectOptions): RequestOptions {
  return {
    host: '127.0.0.1',
    port,
    path,
    method: options.method ?? 'GET',
    ca: caPem,
    servername: 'localhost',
    ...(options.client !== undefined ? { cert: options.client.certPem, key: options.client.keyPem } : {}),
    headers: {
      ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...(options.headers ?? {}),
    },
  };
}

/** A request straight to the control plane's Sandbox API, as `client` (a certificate and key) with these headers. */
export function callDirect(
  port: number,
  caPem: string,
  path: string,
  options: DirectOptions = {},
): Promise<DirectAnswer> {
  return new Promise((resolve, reject) => {
    const req = request(directRequest(port, caPem, path, options), (res) => {
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
    req.end(options.body !== undefined ? JSON.stringify(options.body) : undefined);
  });
}

/** A watch straight to the control plane, read as it streams. */
export interface DirectWatch {
  /** Set once the response's status line and headers arrived. */
  readonly response: { status: number; headers: IncomingHttpHeaders } | undefined;
  /** Whether the server ended the stream. */
  readonly ended: boolean;
  /** The watch events read so far, one JSON line each. */
  events(): Array<{ type: string; object: { metadata?: { name?: string } } }>;
  close(): void;
}

export function watchDirect(port: number, caPem: string, path: string, options: DirectOptions = {}): DirectWatch {
  let response: DirectWatch['response'];
  let ended = false;
  let text = '';
  const req = request(directRequest(port, caPem, path, options), (res) => {
    response = { status: res.statusCode ?? 0, headers: res.headers };
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => (text += chunk));
    res.on('end', () => (ended = true));
    res.on('error', () => (ended = true));
  });
  req.on('error', () => (ended = true));
  req.end();
  return {
    get response() {
      return response;
    },
    get ended() {
      return ended;
    },
    events: () =>
      text
        .split('\n')
        .filter((line) => line.trim() !== '')
        .map((line) => JSON.parse(line) as { type: string; object: { metadata?: { name?: string } } }),
    close: () => req.destroy(),
  };
}
