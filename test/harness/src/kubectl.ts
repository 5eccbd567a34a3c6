// Running the real kubectl against a test cluster, output captured.
import { runCommand } from './children.js';
import { findBinary } from './binaries.js';

export interface KubectlOptions {
  /** Written to kubectl's stdin (for `-f -`). */
  input?: string;
  timeoutMs?: number;
}

export interface KubectlResult {
  stdout: string;
  stderr: string;
  /** The exit code; -1 when kubectl was killed by the timeout or a signal. */
  code: number;
}

/** kubectl `args` behind the harness's watchdog (killed after `timeoutMs`, default 60 s). */
export async function runKubectl(
  kubeconfigPath: string,
  cacheDir: string,
  args: string[],
  options: KubectlOptions = {},
): Promise<KubectlResult> {
  const { stdout, stderr, code } = await runCommand({
    command: findBinary('kubectl'),
    args: [`--kubeconfig=${kubeconfigPath}`, `--cache-dir=${cacheDir}`, ...args],
    input: options.input,
    timeoutMs: options.timeoutMs ?? 60_000,
  });
  return { stdout, stderr, code: code ?? -1 };
}
