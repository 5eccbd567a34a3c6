// Running the real helm against the chart (and a test cluster), behind the
// harness's watchdog. Its cache, config and data live in one directory under
// /tmp shared by every run, so a spec never touches the user's own Helm setup.
import { runCommand } from './children.js';
import { findBinary } from './binaries.js';

const HELM_HOME = '/tmp/warmpool-helm';

export interface HelmOptions {
  /** The cluster helm installs into; none for `helm template` and `helm lint`. */
  kubeconfigPath?: string;
  /** SIGKILL after this long; default 5 min. */
  timeoutMs?: number;
}

/** helm `args`; resolves with its stdout, and fails with its stderr unless it exits 0. */
export async function runHelm(args: string[], options: HelmOptions = {}): Promise<string> {
  const result = await runCommand({
    command: findBinary('helm'),
    args,
    env: {
      ...process.env,
      HELM_CACHE_HOME: `${HELM_HOME}/cache`,
      HELM_CONFIG_HOME: `${HELM_HOME}/config`,
      HELM_DATA_HOME: `${HELM_HOME}/data`,
      ...(options.kubeconfigPath === undefined ? {} : { KUBECONFIG: options.kubeconfigPath }),
    },
    timeoutMs: options.timeoutMs ?? 300_000,
  });
  if (result.code !== 0)
    throw new Error(`helm ${args.join(' ')} exited ${result.code ?? result.signal}:\n${result.stderr}`);
  return result.stdout;
}
