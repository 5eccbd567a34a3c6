// Listing claimed sandboxes: the claim API has no list; the Sandboxes that
// warmpool serves through the Kubernetes API (agents.x-k8s.io/v1beta1,
// `kubectl get sandboxes`) are the list, read with the kubeconfig's
// credentials (a token or a client certificate) and CA.
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { z } from 'zod';
import { ClaimApiError, TransportError } from './errors.js';
import type { KubeContext } from './kubeconfig.js';

const sandboxSchema = z.object({
  metadata: z.object({ name: z.string(), namespace: z.string(), creationTimestamp: z.string().optional() }).loose(),
  spec: z
    .object({ warmPoolRef: z.object({ name: z.string() }).optional() })
    .loose()
    .optional(),
  status: z
    .object({
      nodeName: z.string().optional(),
      ownerAddr: z.string().optional(),
      deadline: z.string().optional(),
      tier: z.string().optional(),
      sandboxID: z.string().optional(),
    })
    .loose()
    .optional(),
});
const listSchema = z.object({ items: z.array(sandboxSchema) });

/** One claimed sandbox, as `kubectl get sandboxes` shows it. */
export interface SandboxSummary {
  /** The claimRef of an HTTP claim, or the SandboxClaim's name. */
  name: string;
  namespace: string;
  id: string | undefined;
  warmPool: string | undefined;
  node: string | undefined;
  ownerAddr: string | undefined;
  deadline: string | undefined;
  tier: string | undefined;
  claimedAt: string | undefined;
}

/** The Sandboxes of `namespace`. */
export async function listSandboxes(
  kube: KubeContext,
  namespace: string,
  timeoutMs = 30_000,
): Promise<SandboxSummary[]> {
  const url = new URL(
    `/apis/agents.x-k8s.io/v1beta1/namespaces/${encodeURIComponent(namespace)}/sandboxes`,
    kube.server,
  );
  const { status, body } = await get(url, kube, timeoutMs);
  if (status !== 200) {
    const message = (() => {
      try {
        return (JSON.parse(body) as { message?: string }).message ?? body;
      } catch {
        return body;
      }
    })();
    throw new ClaimApiError(
      status,
      'Unknown',
      `listing sandboxes: HTTP ${status}: ${message.slice(0, 300)}`,
      undefined,
    );
  }
  return listSchema.parse(JSON.parse(body)).items.map((item) => ({
    name: item.metadata.name,
    namespace: item.metadata.namespace,
    id: item.status?.sandboxID,
    warmPool: item.spec?.warmPoolRef?.name,
    node: item.status?.nodeName,
    ownerAddr: item.status?.ownerAddr,
    deadline: item.status?.deadline,
    tier: item.status?.tier,
    claimedAt: item.metadata.creationTimestamp,
  }));
}

function get(url: URL, kube: KubeContext, timeoutMs: number): Promise<{ status: number; body: string }> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (kube.token !== undefined) headers['authorization'] = `Bearer ${kube.token()}`;
  const tls =
    url.protocol === 'https:'
      ? {
          ca: kube.ca,
          rejectUnauthorized: !kube.insecureSkipTlsVerify,
          cert: kube.token === undefined ? kube.clientCertificate?.cert : undefined,
          key: kube.token === undefined ? kube.clientCertificate?.key : undefined,
        }
      : {};
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(url, { method: 'GET', headers, timeout: timeoutMs, ...tls }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', (error) => reject(new TransportError('connection', error.message, { cause: error })));
    });
    req.on('timeout', () => req.destroy(new TransportError('timeout', `GET ${url.pathname}: no answer in time`)));
    req.on('error', (error) =>
      reject(
        error instanceof TransportError ? error : new TransportError('connection', error.message, { cause: error }),
      ),
    );
    req.end();
  });
}
