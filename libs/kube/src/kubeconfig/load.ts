// Which kubeconfig a process uses, in client-go's order: --kubeconfig, then
// $KUBECONFIG, then the pod's service account, then ~/.kube/config.
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { configureTransport, type KubeTransportOptions } from '../transport.js';
import { ClientCertificate, type Material } from './client-certificate.js';
import { ClientNodeKubeConfig } from './client-node.js';
import { CredentialsKubeConfig, tokenFile, type Token } from './credentials.js';
import { readKubeconfigFiles, type ResolvedContext } from './file.js';
import { impersonationHeaders } from './impersonation.js';
import { inCluster, inClusterKubeConfig } from './in-cluster.js';
import { KubeConfigError, type KubeConfig } from './kubeconfig.js';
import { RefreshedFile } from './refreshed-file.js';

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

/** A KubeConfig for a resolved context: our own when its credentials are plain, client-node's when they are not. */
export function fromContext(context: ResolvedContext): KubeConfig {
  const { cluster, user } = context;
  const where = `kubeconfig ${context.files.join(delimiter)}, context ${context.contextName}`;
  const refuse = (why: string): never => {
    throw new KubeConfigError(`${where}: ${why}`);
  };
  const token = tokenOf(user.token, user.tokenFile);
  if (token && user.username !== undefined) refuse('a username and a bearer token are both set; choose one');
  const ca = material(
    where,
    'certificate-authority',
    cluster['certificate-authority-data'],
    cluster['certificate-authority'],
  );
  if (ca && cluster['insecure-skip-tls-verify'])
    refuse('a certificate authority and insecure-skip-tls-verify are both set (client-go refuses this too)');
  const plugin = user.exec !== undefined || user['auth-provider'] !== undefined;
  if ((token || user.username !== undefined || plugin) && !/^https:/i.test(cluster.server))
    refuse(`the server ${cluster.server} is not https: its credentials would be sent in the clear`);
  const impersonation = impersonationHeaders(user);
  if (plugin || cluster['proxy-url'] !== undefined) return new ClientNodeKubeConfig(context, token, impersonation);
  const cert = material(where, 'client-certificate', user['client-certificate-data'], user['client-certificate']);
  const key = material(where, 'client-key', user['client-key-data'], user['client-key']);
  if ((cert === undefined) !== (key === undefined))
    refuse('a client certificate needs its key, and a key its certificate');
  return new CredentialsKubeConfig({
    server: cluster.server,
    ca,
    skipTlsVerify: cluster['insecure-skip-tls-verify'],
    tlsServerName: cluster['tls-server-name'] || undefined,
    clientCertificate: cert && key ? new ClientCertificate(cert, key) : undefined,
    token,
    basic: user.username !== undefined ? { username: user.username, password: user.password ?? '' } : undefined,
    impersonation,
  });
}

/** A token file, read again as it rotates, wins over an inline token (client-go's rule); an empty one is not used. */
function tokenOf(inline: string | undefined, file: string | undefined): Token | undefined {
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
  if (file) return { file: new RefreshedFile(file) };
  return undefined;
}
