// A client-go exec credential plugin (client.authentication.k8s.io v1 and
// v1beta1): the command a kubeconfig names prints an ExecCredential (a token,
// or a client certificate and key) with an optional expiry. Run without a
// terminal (a server has none): stdin closed, its stderr passed through to
// ours as client-go does, and killed when it does not answer in time. Its
// credential is kept until it expires; requests that find none wait together
// on one run.
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable } from 'node:stream';
import { z } from 'zod';
import { KubeConfigError } from './kubeconfig.js';

export const execConfigSchema = z
  .object({
    apiVersion: z.enum(['client.authentication.k8s.io/v1', 'client.authentication.k8s.io/v1beta1']),
    command: z.string().min(1),
    args: z.array(z.string()).nullish(),
    env: z.array(z.object({ name: z.string().min(1), value: z.string() })).nullish(),
    provideClusterInfo: z.boolean().optional(),
    interactiveMode: z.enum(['Never', 'IfAvailable', 'Always']).optional(),
  })
  .loose();

export type ExecConfig = z.infer<typeof execConfigSchema>;

const execCredentialSchema = z.object({
  apiVersion: z.string(),
  kind: z.literal('ExecCredential'),
  status: z.object({
    token: z.string().min(1).optional(),
    clientCertificateData: z.string().min(1).optional(),
    clientKeyData: z.string().min(1).optional(),
    expirationTimestamp: z.string().optional(),
  }),
});

export interface PluginCredential {
  readonly token?: string | undefined;
  readonly cert?: Buffer | undefined;
  readonly key?: Buffer | undefined;
  /** Epoch ms; Infinity when the plugin gave no expiry. */
  readonly expiresAt: number;
}

export const PLUGIN_TIMEOUT_MS = 30_000;
const MAX_OUTPUT_BYTES = 1 << 20;
/** How long after the plugin exits its output may still arrive (a child it left behind may hold the pipe open). */
const OUTPUT_GRACE_MS = 1_000;
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;

export class ExecPlugin {
  readonly #config: ExecConfig;
  readonly #clusterInfo: (() => object) | undefined;
  readonly #timeoutMs: number;
  #credential: PluginCredential | undefined;
  #running: Promise<PluginCredential> | undefined;

  /** `clusterInfo`: the cluster as the plugin sees it in KUBERNETES_EXEC_INFO when it asks for it, as of each run. */
  constructor(config: ExecConfig, clusterInfo?: () => object, options: { timeoutMs?: number } = {}) {
    this.#config = config;
    this.#clusterInfo = clusterInfo;
    this.#timeoutMs = options.timeoutMs ?? PLUGIN_TIMEOUT_MS;
  }

  /**
   * Forgets `refused` (the apiserver answered 401 to it): the next request runs the plugin again, as client-go does.
   * A 401 for a credential already replaced changes nothing (client-go's rule too), so requests sent with an old one
   * do not each cost a run.
   */
  invalidate(refused: PluginCredential | undefined): void {
    if (refused !== undefined && refused === this.#credential) this.#credential = undefined;
  }

  /** The current credential; runs the plugin when there is none or it expired. */
  credential(): Promise<PluginCredential> {
    if (this.#credential && this.#credential.expiresAt > Date.now()) return Promise.resolve(this.#credential);
    this.#running ??= this.#run().finally(() => (this.#running = undefined));
    return this.#running;
  }

  async #run(): Promise<PluginCredential> {
    const output = await this.#spawn();
    let parsed: z.infer<typeof execCredentialSchema> | undefined;
    try {
      parsed = execCredentialSchema.parse(JSON.parse(output));
    } catch {
      // Neither the output nor the parser's message is repeated: either may be the token itself.
      throw this.#failure('printed something that is not an ExecCredential');
    }
    if (parsed.apiVersion !== this.#config.apiVersion)
      throw this.#failure(`answered in ${parsed.apiVersion}, not the ${this.#config.apiVersion} it is configured for`);
    const { token, clientCertificateData, clientKeyData, expirationTimestamp } = parsed.status;
    if ((clientCertificateData === undefined) !== (clientKeyData === undefined))
      throw this.#failure('gave a client certificate without its key, or a key without its certificate');
    if (token === undefined && clientCertificateData === undefined)
      throw this.#failure('gave no token nor certificate');
    const expiresAt = expirationTimestamp === undefined ? Infinity : Date.parse(expirationTimestamp);
    if (expirationTimestamp !== undefined && (!RFC3339.test(expirationTimestamp) || Number.isNaN(expiresAt)))
      throw this.#failure('gave an expirationTimestamp that is not an RFC 3339 time');
    return (this.#credential = {
      token,
      cert: clientCertificateData === undefined ? undefined : Buffer.from(clientCertificateData),
      key: clientKeyData === undefined ? undefined : Buffer.from(clientKeyData),
      expiresAt,
    });
  }

  #spawn(): Promise<string> {
    const { command, args, env, apiVersion } = this.#config;
    const info = { apiVersion, kind: 'ExecCredential', spec: { interactive: false, cluster: this.#clusterInfo?.() } };
    let child: ChildProcessByStdio<null, Readable, null>;
    try {
      // Its own process group, so a timeout kills whatever it started too.
      child = spawn(command, args ?? [], {
        detached: true,
        stdio: ['ignore', 'pipe', 'inherit'],
        env: {
          ...process.env,
          ...Object.fromEntries((env ?? []).map(({ name, value }) => [name, value])),
          KUBERNETES_EXEC_INFO: JSON.stringify(info),
        },
      });
    } catch {
      // Node's message quotes the offending argument or variable, which may be a secret.
      return Promise.reject(this.#failure('could not be started: its command, args or env are not valid'));
    }
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      let exited: { code: number | null; signal: NodeJS.Signals | null } | undefined;
      let timedOut = false;
      let grace: NodeJS.Timeout | undefined;
      const killGroup = (): void => {
        try {
          if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
        } catch {
          // Already gone.
        }
      };
      const finish = (): void => {
        clearTimeout(timer);
        clearTimeout(grace);
        // A child it left holding the output would outlive every run (each 401 starts one): it goes too.
        if (!child.stdout.readableEnded) killGroup();
        child.stdout.destroy();
        if (size > MAX_OUTPUT_BYTES) reject(this.#failure(`printed more than ${MAX_OUTPUT_BYTES} bytes`));
        else if (exited && exited.code !== 0)
          reject(
            this.#failure(`exited with ${exited.code === null ? `signal ${exited.signal}` : `code ${exited.code}`}`),
          );
        else resolve(Buffer.concat(chunks).toString('utf8'));
      };
      const timer = setTimeout(() => {
        timedOut = true;
        killGroup();
        child.stdout.destroy();
        reject(this.#failure(`did not answer within ${this.#timeoutMs} ms`));
      }, this.#timeoutMs);
      child.stdout.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size <= MAX_OUTPUT_BYTES) chunks.push(chunk);
        else killGroup();
      });
      child.stdout.on('end', () => {
        if (exited) finish();
      });
      child.on('error', (error: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        reject(this.#failure(`could not be started: ${error.code ?? 'error'}`));
      });
      child.on('exit', (code, signal) => {
        if (timedOut) return;
        exited = { code, signal };
        if (child.stdout.readableEnded) finish();
        else grace = setTimeout(finish, OUTPUT_GRACE_MS);
      });
    });
  }

  #failure(what: string): KubeConfigError {
    return new KubeConfigError(
      `exec plugin ${this.#config.command} ${what} (its stderr, if any, is in this process's)`,
    );
  }
}
