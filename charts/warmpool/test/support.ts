// What the chart's specs share: where the chart is, its namespace, and Helm
// (the harness's, behind its watchdog) run for a render or a release.
import { fileURLToPath } from 'node:url';
import { runHelm, type TestCluster } from '@warmpool/harness';

export const CHART = fileURLToPath(new URL('..', import.meta.url));
export const NAMESPACE = 'warmpool-system';

/** `--set` arguments for Helm. */
export function setArgs(set: readonly string[]): string[] {
  return set.flatMap((value) => ['--set', value]);
}

export interface ReleaseOptions {
  release?: string;
  namespace?: string;
  /** Default true. */
  createNamespace?: boolean;
}

/**
 * `helm install` of this chart into the cluster, without waiting for pods (a
 * test apiserver has no kubelet): the release's NOTES as text.
 */
export function helmInstall(
  cluster: TestCluster,
  set: readonly string[],
  options: ReleaseOptions = {},
): Promise<string> {
  const { release = 'warmpool', namespace = NAMESPACE, createNamespace = true } = options;
  return runHelm(
    [
      'install',
      release,
      CHART,
      '-n',
      namespace,
      ...(createNamespace ? ['--create-namespace'] : []),
      '--wait=false',
      ...setArgs(set),
    ],
    { kubeconfigPath: cluster.kubeconfigPath },
  );
}
