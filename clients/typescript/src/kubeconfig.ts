// The parts of a kubeconfig this client uses: the current (or a named)
// context's namespace, its user's bearer token (token or tokenFile), and its
// cluster's server and CA for listing Sandboxes through the Kubernetes API.
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { load } from 'js-yaml';
import { z } from 'zod';
import { ConfigurationError } from './errors.js';

const contextSchema = z.object({ cluster: z.string(), user: z.string(), namespace: z.string().optional() });
const clusterSchema = z
  .object({
    server: z.string(),
    'certificate-authority': z.string().optional(),
    'certificate-authority-data': z.string().optional(),
    'insecure-skip-tls-verify': z.boolean().optional(),
  })
  .loose();
const userSchema = z
  .object({
    token: z.string().optional(),
    tokenFile: z.string().optional(),
    'client-certificate': z.string().optional(),
    'client-certificate-data': z.string().optional(),
    'client-key': z.string().optional(),
    'client-key-data': z.string().optional(),
  })
  .loose();

const kubeconfigSchema = z
  .object({
    'current-context': z.string().optional(),
    contexts: z.array(z.object({ name: z.string(), context: contextSchema })).default([]),
    clusters: z.array(z.object({ name: z.string(), cluster: clusterSchema })).default([]),
    users: z.array(z.object({ name: z.string(), user: userSchema })).default([]),
  })
  .loose();

/** What the client takes from one kubeconfig context. */
export interface KubeContext {
  namespace: string | undefined;
  server: string;
  /** PEM. */
  ca: string | undefined;
  insecureSkipTlsVerify: boolean;
  /** Reads the bearer token (a tokenFile is read on every call: projected tokens rotate); undefined without one. */
  token: (() => string) | undefined;
  /** PEM client certificate and key: usable for the Kubernetes API, never for the claim API (it needs a token). */
  clientCertificate: { cert: string; key: string } | undefined;
}

/** `KUBECONFIG`'s first file, else ~/.kube/config. */
export function defaultKubeconfigPath(): string {
  const env = process.env['KUBECONFIG'];
  const first = env?.split(':').find((path) => path !== '');
  return first ?? join(homedir(), '.kube', 'config');
}

function fileOrData(base: string, file: string | undefined, data: string | undefined): string | undefined {
  if (data !== undefined) return Buffer.from(data, 'base64').toString('utf8');
  if (file !== undefined) return readFileSync(isAbsolute(file) ? file : resolve(base, file), 'utf8');
  return undefined;
}

/** Reads `path`'s `context` (default: its current-context). */
export function readKubeContext(path: string = defaultKubeconfigPath(), context?: string): KubeContext {
  let raw: unknown;
  try {
    raw = load(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new ConfigurationError(`cannot read the kubeconfig ${path}: ${(error as Error).message}`, { cause: error });
  }
  const parsed = kubeconfigSchema.safeParse(raw);
  if (!parsed.success) throw new ConfigurationError(`${path} is not a kubeconfig: ${parsed.error.message}`);
  const config = parsed.data;
  const contextName = context ?? config['current-context'];
  const ctx = config.contexts.find((c) => c.name === contextName)?.context;
  if (ctx === undefined) throw new ConfigurationError(`${path} has no context ${contextName ?? '(none is current)'}`);
  const cluster = config.clusters.find((c) => c.name === ctx.cluster)?.cluster;
  const user = config.users.find((u) => u.name === ctx.user)?.user;
  if (cluster === undefined || user === undefined)
    throw new ConfigurationError(`${path}: context ${contextName} names a cluster or user it does not define`);
  const base = dirname(path);
  const { token, tokenFile } = user;
  const cert = fileOrData(base, user['client-certificate'], user['client-certificate-data']);
  const key = fileOrData(base, user['client-key'], user['client-key-data']);
  return {
    namespace: ctx.namespace,
    server: cluster.server,
    ca: fileOrData(base, cluster['certificate-authority'], cluster['certificate-authority-data']),
    insecureSkipTlsVerify: cluster['insecure-skip-tls-verify'] === true,
    token:
      token !== undefined
        ? () => token
        : tokenFile !== undefined
          ? () => readFileSync(isAbsolute(tokenFile) ? tokenFile : resolve(base, tokenFile), 'utf8').trim()
          : undefined,
    clientCertificate: cert !== undefined && key !== undefined ? { cert, key } : undefined,
  };
}
