// Which kubeconfig a process uses, in client-go's order: --kubeconfig, then
// $KUBECONFIG, then the pod's service account, then ~/.kube/config.
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { configureTransport, type KubeTransportOptions } from '../transport.js';
import { ClientNodeKubeConfig } from './client-node.js';
import { CredentialsKubeConfig, type Material } from './credentials.js';
import { readKubeconfigFiles, type ResolvedContext } from './file.js';
import { inCluster, inClusterKubeConfig } from './in-cluster.js';
import { KubeConfigError, type KubeConfig } from './kubeconfig.js';
import { RefreshedFile } from './refreshed-file.js';

/**
 * The KubeConfig to use: the file at `path` when given; else $KUBECONFIG's files, merged; else the pod's service
 * account when running in a cluster; else ~/.kube/config. Throws KubeConfigError when none is found or it cannot be
 * used. `transport`: the options of the transport its clients will share (default: the transport's own).
 */
export function loadKubeConfig(path?: string, transport?: KubeTransportOptions): KubeConfig {
  const kubeConfig = chooseKubeConfig(path);
  if (transport !== undefined) configureTransport(kubeConfig, transport);
  return kubeConfig;
}

function chooseKubeConfig(path: string | undefined): KubeConfig {
  if (path) return fromContext(readKubeconfigFiles([path]));
  const fromEnv = (process.env['KUBECONFIG'] ?? '').split(delimiter).filter((file) => file !== '');
  if (fromEnv.length > 0) return fromContext(readKubeconfigFiles(fromEnv));
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
  if (user.exec !== undefined || user['auth-provider'] !== undefined || cluster['proxy-url'] !== undefined)
    return new ClientNodeKubeConfig(context);
  const where = `kubeconfig ${context.files.join(delimiter)}, user of context ${context.contextName}`;
  const token = user.token || undefined;
  if (token !== undefined && user.tokenFile) throw new KubeConfigError(`${where}: both token and tokenFile are set`);
  const bearer = token !== undefined || Boolean(user.tokenFile);
  if (bearer && user.username !== undefined)
    throw new KubeConfigError(`${where}: a username and a bearer token are both set; choose one`);
  const clientCertificate = material(user['client-certificate-data'], user['client-certificate']);
  const clientKey = material(user['client-key-data'], user['client-key']);
  if ((clientCertificate === undefined) !== (clientKey === undefined))
    throw new KubeConfigError(`${where}: a client certificate needs its key, and a key its certificate`);
  return new CredentialsKubeConfig({
    server: cluster.server,
    ca: material(cluster['certificate-authority-data'], cluster['certificate-authority']),
    skipTlsVerify: cluster['insecure-skip-tls-verify'],
    tlsServerName: cluster['tls-server-name'] || undefined,
    clientCertificate,
    clientKey,
    token:
      token !== undefined ? { value: token } : user.tokenFile ? { file: new RefreshedFile(user.tokenFile) } : undefined,
    basic: user.username !== undefined ? { username: user.username, password: user.password ?? '' } : undefined,
    impersonate: user.as || undefined,
  });
}

/** Inline base64 data wins over a file, as in client-go. */
function material(data: string | undefined, file: string | undefined): Material | undefined {
  if (data) return { data: Buffer.from(data, 'base64') };
  if (file) return { file: new RefreshedFile(file) };
  return undefined;
}
