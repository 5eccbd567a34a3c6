// kubeconfig files for a test cluster.
import { writeFileSync } from 'node:fs';

export type KubeconfigUser = { clientCertPem: string; clientKeyPem: string } | { token: string };

const b64 = (text: string): string => Buffer.from(text, 'utf8').toString('base64');

/** A single-context kubeconfig with everything embedded, so the file alone is enough. */
export function kubeconfigYaml(options: {
  name: string;
  server: string;
  caPem: string;
  userName: string;
  user: KubeconfigUser;
}): string {
  const user =
    'token' in options.user
      ? `    token: ${options.user.token}`
      : `    client-certificate-data: ${b64(options.user.clientCertPem)}\n    client-key-data: ${b64(options.user.clientKeyPem)}`;
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    `- name: ${options.name}`,
    '  cluster:',
    `    server: ${options.server}`,
    `    certificate-authority-data: ${b64(options.caPem)}`,
    'users:',
    `- name: ${options.userName}`,
    '  user:',
    user,
    'contexts:',
    `- name: ${options.name}`,
    '  context:',
    `    cluster: ${options.name}`,
    `    user: ${options.userName}`,
    `current-context: ${options.name}`,
    '',
  ].join('\n');
}

export function writeKubeconfig(path: string, yaml: string): string {
  writeFileSync(path, yaml, { mode: 0o600 });
  return path;
}
