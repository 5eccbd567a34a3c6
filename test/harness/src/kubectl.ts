// Running the real kubectl against a test cluster, output captured.
import { spawn } from 'node:child_process';
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

export function runKubectl(
  kubeconfigPath: string,
  cacheDir: string,
  args: string[],
  options: KubectlOptions = {},
): Promise<KubectlResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(findBinary('kubectl'), [`--kubeconfig=${kubeconfigPath}`, `--cache-dir=${cacheDir}`, ...args], {
      stdio: ['pipe', 'pipe', 'pipe'],
      timeout: options.timeoutMs ?? 60_000,
      killSignal: 'SIGKILL',
    });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
    child.on('error', reject);
    child.on('close', (code) => {
      resolve({
        stdout: Buffer.concat(stdout).toString('utf8'),
        stderr: Buffer.concat(stderr).toString('utf8'),
        code: code ?? -1,
      });
    });
    child.stdin.on('error', () => undefined); // kubectl may exit before reading stdin
    child.stdin.end(options.input ?? '');
  });
}
