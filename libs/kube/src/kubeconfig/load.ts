// Which kubeconfig a process uses, in client-go's order: --kubeconfig, then
// $KUBECONFIG, then the pod's service account, then ~/.kube/config.
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { z } from 'zod';
import { configureTransport, type KubeTransportOptions } from '../transport.js';
import { bytesOf, ClientCertificate, type Material } from './client-certificate.js';
import { ClientNodeKubeConfig } from './client-node.js';
import { CredentialsKubeConfig, tokenFile, type Token } from './credentials.js';
import { readKubeconfigFiles, type KubeconfigCluster, type ResolvedContext } from './file.js';
import { ExecPlugin, execConfigSchema } from './exec-plugin.js';
import { impersonationHeaders } from './impersonation.js';
import { inCluster, inClusterKubeConfig } from './in-cluster.js';
import { KubeConfigError, type KubeConfig } from './kubeconfig.js';
import { pemFile } from './refreshed-file.js';

/**
 * The KubeConfig to use: the file at `path` when given; else $KUBECONFIG's files, merged (those missing skipped);
 * else the pod's service account when running in a cluster; else ~/.kube/config. Throws KubeConfigError when none is
 * found or it cannot be used. `transport`: the options of the transport its clients will share.
 */
export function loadKubeConfig(path?: string, transport?: KubeTransportOptions): KubeConfig {
  const kubeConfig = chooseKubeConfig(path);
  if (transport !== undefined) configureTransport(kubeConfig, transport);
  return kubeConfig;
}

function chooseKubeConfig(path: string | undefined): KubeConfig {
  if (path) return fromContext(readKubeconfigFiles([path]));
  const fromEnv = (process.env['KUBECONFIG'] ?? '').split(delimiter).filter((file) => file !== '');
  if (fromEnv.length > 0) {
    const present = fromEnv.filter((file) => existsSync(file));
    if (present.length === 0) throw new KubeConfigError(`no file of KUBECONFIG exists: ${fromEnv.join(delimiter)}`);
    return fromContext(readKubeconfigFiles(present));
  }
  if (inCluster()) return inClusterKubeConfig();
  const home = join(homedir(), '.kube', 'config');
  if (existsSync(home)) return fromContext(readKubeconfigFiles([home]));
  throw new KubeConfigError(
    `no kubeconfig: pass --kubeconfig, set KUBECONFIG, run in a pod with a service account, or create ${home}`,
  );
}

/** A KubeConfig for a resolved context: our own, or client-node's for an auth provider or a proxy. */
export function fromContext(context: ResolvedContext): KubeConfig {
  const { cluster, user } = context;
  const where = `kubeconfig ${context.files.join(delimiter)}, context ${context.contextName}`;
  const refuse = (why: string): never => {
    throw new KubeConfigError(`${where}: ${why}`);
  };
  const server = serverOf(cluster.server, refuse);
  const token = bearerToken(user.token, user.tokenFile);
  if (token && user.username !== undefined) refuse('a username and a bearer token are both set; choose one');
  if (token && user.exec !== undefined) refuse('a bearer token and an exec plugin are both set; choose one');
  if (user.exec !== undefined && user['auth-provider'] !== undefined)
    refuse('an exec plugin and an auth provider are both set (client-go refuses this too)');
  if (hasCommand(user['auth-provider']))
    refuse(
      'its auth provider runs a command (cmd-path), which client-node runs blocking the whole process; use an exec plugin (gke-gcloud-auth-plugin, kubelogin)',
    );
  const ca = material(
    where,
    'certificate-authority',
    cluster['certificate-authority-data'],
    cluster['certificate-authority'],
  );
  if (ca && cluster['insecure-skip-tls-verify'])
    refuse('a certificate authority and insecure-skip-tls-verify are both set (client-go refuses this too)');
  const cert = material(where, 'client-certificate', user['client-certificate-data'], user['client-certificate']);
  const key = material(where, 'client-key', user['client-key-data'], user['client-key']);
  if ((cert === undefined) !== (key === undefined))
    refuse('a client certificate needs its key, and a key its certificate');
  const plugin = user.exec === undefined ? undefined : execPlugin(user.exec, cluster, ca, refuse);
  const credentialed = token || user.username !== undefined || plugin || user['auth-provider'] !== undefined;
  if (credentialed && server.protocol !== 'https:')
    refuse(`the server ${server.host} is not https: its credentials would be sent in the clear`);
  const impersonation = impersonationHeaders(user);
  if (user['auth-provider'] !== undefined || cluster['proxy-url'] !== undefined)
    return new ClientNodeKubeConfig(context, { token, plugin, impersonation });
  return new CredentialsKubeConfig({
    server: cluster.server,
    ca,
    skipTlsVerify: cluster['insecure-skip-tls-verify'],
    tlsServerName: cluster['tls-server-name'] || undefined,
    clientCertificate: cert && key ? new ClientCertificate(cert, key) : undefined,
    token,
    basic: user.username !== undefined ? { username: user.username, password: user.password ?? '' } : undefined,
    plugin,
    impersonation,
  });
}

/** The server's URL; credentials belong in the user, never in it (they would show wherever the URL does). */
function serverOf(server: string, refuse: (why: string) => never): URL {
  let url: URL;
  try {
    url = new URL(server);
  } catch {
    return refuse('the server is not a URL');
  }
  if (url.username || url.password)
    refuse(`the server ${url.host} carries credentials in its URL; put them in the user`);
  return url;
}

function execPlugin(
  exec: unknown,
  cluster: KubeconfigCluster,
  ca: Material | undefined,
  refuse: (why: string) => never,
): ExecPlugin {
  const parsed = execConfigSchema.safeParse(exec);
  if (!parsed.success) return refuse(`its exec plugin is not one this loader runs: ${z.prettifyError(parsed.error)}`);
  if (parsed.data.interactiveMode === 'Always') refuse('its exec plugin needs a terminal (interactiveMode: Always)');
  return new ExecPlugin(parsed.data, parsed.data.provideClusterInfo ? () => clusterInfo(cluster, ca) : undefined);
}

function hasCommand(provider: unknown): boolean {
  const config = (provider as { config?: Record<string, unknown> } | undefined)?.config;
  return typeof config?.['cmd-path'] === 'string' && config['cmd-path'] !== '';
}

/** The cluster as client-go describes it to a plugin that asks (KUBERNETES_EXEC_INFO); the CA as the requests use it. */
function clusterInfo(cluster: KubeconfigCluster, ca: Material | undefined): object {
  let caData: string | undefined;
  try {
    caData = ca && bytesOf(ca).toString('base64');
  } catch {
    // The plugin is told no CA; the requests themselves will say what is wrong with the file.
  }
  return {
    server: cluster.server,
    'tls-server-name': cluster['tls-server-name'],
    'insecure-skip-tls-verify': cluster['insecure-skip-tls-verify'],
    'certificate-authority-data': caData,
    'proxy-url': cluster['proxy-url'],
    config: execExtension(cluster),
  };
}

/** A token file, read again as it rotates, wins over an inline token (client-go's rule); an empty one is not used. */
function bearerToken(inline: string | undefined, file: string | undefined): Token | undefined {
  if (file) return tokenFile(file);
  return inline ? { value: inline } : undefined;
}

/** Inline base64 data wins over a file, as in client-go. */
function material(
  where: string,
  field: string,
  data: string | undefined,
  file: string | undefined,
): Material | undefined {
  if (data) {
    const compact = data.replace(/\s+/g, '');
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(compact) || compact.length % 4 === 1)
      throw new KubeConfigError(`${where}: ${field}-data is not base64`);
    return { data: Buffer.from(compact, 'base64') };
  }
  if (file) return { file: pemFile(file) };
  return undefined;
}

/** The cluster's extension for exec plugins, handed to them as `config` (client-go's rule). */
function execExtension(cluster: KubeconfigCluster): unknown {
  const { extensions } = cluster as { extensions?: unknown };
  if (!Array.isArray(extensions)) return undefined;
  const found = (extensions as Array<{ name?: unknown; extension?: unknown }>).find(
    (entry) => entry.name === 'client.authentication.k8s.io/exec',
  );
  return found?.extension;
}
