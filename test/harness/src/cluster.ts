// A real, throw-away Kubernetes control plane for one test file: etcd and
// kube-apiserver on free loopback ports, fresh certificates, a temp dir that
// disappears with it.
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { startApiserver, type ApiserverOptions } from './apiserver.js';
import { forgetRemoveAtExit, removeAtExit, type ManagedChild } from './children.js';
import { startEtcd } from './etcd.js';
import type { TlsClientAuth } from './http.js';
import { kubeconfigYaml, writeKubeconfig } from './kubeconfig.js';
import { runKubectl, type KubectlOptions, type KubectlResult } from './kubectl.js';
import { createClusterPki, writeClusterPki, type ClusterPki } from './pki.js';
import { freePorts } from './ports.js';

/** The chart's CRDs, found from this file in both src/ and dist/. */
export const DEFAULT_CRDS_DIR = fileURLToPath(new URL('../../../charts/warmpool/files/crds/', import.meta.url));

export interface StartClusterOptions {
  /** Install charts/warmpool/files/crds and wait until they are Established (default true). */
  crds?: boolean;
  /** Used in the temp dir and kubeconfig names (default "warmpool"). */
  name?: string;
  crdsDir?: string;
  readyTimeoutMs?: number;
  /** Let the apiserver serve /debug/pprof to the admin client (default false; see ApiserverOptions.profiling). */
  apiserverProfiling?: boolean;
  /** Admission plugins the apiserver enables beyond its defaults (e.g. OwnerReferencesPermissionEnforcement). */
  admissionPlugins?: readonly string[];
}

export interface ClusterTimings {
  etcdMs: number;
  apiserverMs: number;
  /** 0 when CRDs were not installed. */
  crdsMs: number;
}

export interface TestCluster {
  readonly name: string;
  /** https://127.0.0.1:<port> */
  readonly server: string;
  /** http://127.0.0.1:<port> of etcd (its v3 JSON gateway answers there too). */
  readonly etcdUrl: string;
  readonly kubeconfigPath: string;
  /** Admin (system:masters) client configuration. */
  readonly kubeConfig: KubeConfig;
  /** The cluster's temp dir: certificates, etcd data, logs, kubeconfig. */
  readonly dataDir: string;
  /** From the call to etcd + kube-apiserver answering /readyz (CRDs not included). */
  readonly startupMs: number;
  readonly timings: ClusterTimings;
  readonly pki: ClusterPki;
  /** The admin client certificate, for raw HTTPS requests. */
  readonly adminTls: TlsClientAuth;
  /** Current pids (each is also its process group id); undefined while stopped. */
  pids(): { etcd: number | undefined; apiserver: number | undefined };
  kubectl(args: string[], options?: KubectlOptions): Promise<KubectlResult>;
  /** Creates `<prefix>-<random>` and returns its name. */
  createNamespace(prefix: string): Promise<string>;
  installCrds(): Promise<void>;
  /**
   * Waits until the CRDs `targets` name (kubectl arguments: `crd/<name>`, `-f <dir>`, `crd --all`) are Established,
   * at most `timeoutMs` (default 60 s); throws with kubectl's words otherwise.
   */
  waitForCrds(targets: readonly string[], timeoutMs?: number): Promise<void>;
  /** A KubeConfig that authenticates with a bearer token (e.g. from `kubectl create token`). */
  kubeConfigForToken(token: string): KubeConfig;
  /** Apiserver only; etcd keeps running, so state survives. */
  stopApiserver(): Promise<void>;
  /** Starts it again on the same port with the same certificates, so clients reconnect. */
  startApiserver(): Promise<void>;
  restartApiserver(): Promise<void>;
  stop(): Promise<void>;
  /** Same as stop(). */
  close(): Promise<void>;
}

/** How long waitForCrds waits for CRDs to be Established, by default. */
const CRDS_ESTABLISHED_MS = 60_000;

function dnsLabel(text: string, max: number): string {
  const cleaned = text
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/^-+|-+$/g, '');
  return (cleaned || 'x').slice(0, max).replace(/-+$/, '');
}

class LocalCluster implements TestCluster {
  readonly name: string;
  readonly server: string;
  readonly etcdUrl: string;
  readonly kubeconfigPath: string;
  readonly kubeConfig: KubeConfig;
  readonly dataDir: string;
  readonly pki: ClusterPki;
  readonly adminTls: TlsClientAuth;
  readonly timings: ClusterTimings = { etcdMs: 0, apiserverMs: 0, crdsMs: 0 };
  startupMs = 0;
  readonly #crdsDir: string;
  readonly #apiserverOptions: ApiserverOptions;
  readonly #etcd: ManagedChild;
  #apiserver: ManagedChild | undefined;
  #stopped = false;

  constructor(fields: {
    name: string;
    dataDir: string;
    pki: ClusterPki;
    apiserverOptions: ApiserverOptions;
    etcd: ManagedChild;
    crdsDir: string;
  }) {
    this.name = fields.name;
    this.dataDir = fields.dataDir;
    this.pki = fields.pki;
    this.#apiserverOptions = fields.apiserverOptions;
    this.#etcd = fields.etcd;
    this.#crdsDir = fields.crdsDir;
    this.server = `https://127.0.0.1:${fields.apiserverOptions.port}`;
    this.etcdUrl = fields.apiserverOptions.etcdUrl;
    this.adminTls = { ca: fields.pki.ca.certPem, cert: fields.pki.admin.certPem, key: fields.pki.admin.keyPem };
    this.kubeconfigPath = writeKubeconfig(
      join(this.dataDir, 'kubeconfig'),
      kubeconfigYaml({
        name: this.name,
        server: this.server,
        caPem: this.pki.ca.certPem,
        userName: 'admin',
        user: { clientCertPem: this.pki.admin.certPem, clientKeyPem: this.pki.admin.keyPem },
      }),
    );
    this.kubeConfig = new KubeConfig();
    this.kubeConfig.loadFromFile(this.kubeconfigPath);
  }

  pids(): { etcd: number | undefined; apiserver: number | undefined } {
    return {
      etcd: this.#etcd.running ? this.#etcd.pid : undefined,
      apiserver: this.#apiserver?.running ? this.#apiserver.pid : undefined,
    };
  }

  kubectl(args: string[], options?: KubectlOptions): Promise<KubectlResult> {
    return runKubectl(this.kubeconfigPath, join(this.dataDir, 'kubectl-cache'), args, options);
  }

  async createNamespace(prefix: string): Promise<string> {
    const name = `${dnsLabel(prefix, 50)}-${randomBytes(4).toString('hex')}`;
    await this.kubeConfig.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name } } });
    return name;
  }

  async installCrds(): Promise<void> {
    const started = performance.now();
    const apply = await this.kubectl([
      'apply',
      '--server-side',
      '--field-manager=warmpool-harness',
      '-f',
      this.#crdsDir,
    ]);
    if (apply.code !== 0)
      throw new Error(`installing CRDs from ${this.#crdsDir} failed:\n${apply.stderr}${apply.stdout}`);
    await this.waitForCrds(['-f', this.#crdsDir]);
    // kubectl cached discovery before the new kinds existed; start it afresh.
    rmSync(join(this.dataDir, 'kubectl-cache'), { recursive: true, force: true });
    this.timings.crdsMs = Math.round(performance.now() - started);
  }

  /**
   * `kubectl wait --for=condition=Established`, asked again when kubectl exits at once with ".status.conditions
   * accessor error: <nil>": it read a CRD the apiserver had not given conditions yet (a known race of `kubectl
   * wait`). Any other failure, or the deadline, throws.
   */
  async waitForCrds(targets: readonly string[], timeoutMs = CRDS_ESTABLISHED_MS): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const seconds = Math.max(1, Math.ceil((deadline - performance.now()) / 1000));
      const wait = await this.kubectl(['wait', '--for=condition=Established', `--timeout=${seconds}s`, ...targets]);
      if (wait.code === 0) return;
      const raced = `${wait.stderr}${wait.stdout}`.includes('.status.conditions accessor error: <nil>');
      if (!raced || performance.now() >= deadline)
        throw new Error(`CRDs did not become Established:\n${wait.stderr}${wait.stdout}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  kubeConfigForToken(token: string): KubeConfig {
    const config = new KubeConfig();
    config.loadFromString(
      kubeconfigYaml({
        name: this.name,
        server: this.server,
        caPem: this.pki.ca.certPem,
        userName: 'token-user',
        user: { token },
      }),
    );
    return config;
  }

  async stopApiserver(): Promise<void> {
    const apiserver = this.#apiserver;
    this.#apiserver = undefined;
    await apiserver?.stop();
  }

  async startApiserver(): Promise<void> {
    if (this.#stopped) throw new Error(`cluster ${this.name} is stopped`);
    if (this.#apiserver?.running) return;
    const started = performance.now();
    this.#apiserver = await startApiserver(this.#apiserverOptions, this.adminTls);
    this.timings.apiserverMs = Math.round(performance.now() - started);
  }

  async restartApiserver(): Promise<void> {
    await this.stopApiserver();
    await this.startApiserver();
  }

  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    await this.stopApiserver();
    await this.#etcd.stop();
    if (process.env.WARMPOOL_KEEP_CLUSTER === '1') {
      console.error(`warmpool harness: keeping ${this.dataDir} (WARMPOOL_KEEP_CLUSTER=1)`);
    } else {
      rmSync(this.dataDir, { recursive: true, force: true });
    }
    forgetRemoveAtExit(this.dataDir);
  }

  close(): Promise<void> {
    return this.stop();
  }
}

export async function startCluster(options: StartClusterOptions = {}): Promise<TestCluster> {
  const started = performance.now();
  const name = dnsLabel(options.name ?? 'warmpool', 40);
  const dataDir = mkdtempSync(join(tmpdir(), `warmpool-${name}-`));
  removeAtExit(dataDir);
  let etcd: ManagedChild | undefined;
  let cluster: LocalCluster | undefined;
  try {
    const pkiDir = join(dataDir, 'pki');
    mkdirSync(pkiDir, { mode: 0o700 });
    const pki = createClusterPki();
    const pkiFiles = writeClusterPki(pki, pkiDir);
    const [clientPort = 0, peerPort = 0, apiserverPort = 0] = await freePorts(3);

    const etcdStarted = performance.now();
    etcd = (
      await startEtcd({
        dataDir: join(dataDir, 'etcd'),
        clientPort,
        peerPort,
        logFile: join(dataDir, 'etcd.log'),
        orphanCleanupDir: dataDir,
      })
    ).child;
    const etcdMs = Math.round(performance.now() - etcdStarted);

    const apiserverOptions: ApiserverOptions = {
      port: apiserverPort,
      etcdUrl: `http://127.0.0.1:${clientPort}`,
      pki: pkiFiles,
      logFile: join(dataDir, 'apiserver.log'),
      orphanCleanupDir: dataDir,
      ...(options.readyTimeoutMs === undefined ? {} : { readyTimeoutMs: options.readyTimeoutMs }),
      ...(options.apiserverProfiling === true ? { profiling: true } : {}),
      ...(options.admissionPlugins === undefined ? {} : { admissionPlugins: options.admissionPlugins }),
    };
    cluster = new LocalCluster({
      name,
      dataDir,
      pki,
      apiserverOptions,
      etcd,
      crdsDir: options.crdsDir ?? DEFAULT_CRDS_DIR,
    });
    await cluster.startApiserver();
    cluster.timings.etcdMs = etcdMs;
    cluster.startupMs = Math.round(performance.now() - started);
    if (options.crds ?? true) await cluster.installCrds();
    return cluster;
  } catch (error) {
    if (cluster) await cluster.stop();
    else {
      await etcd?.stop('SIGTERM', 1000);
      rmSync(dataDir, { recursive: true, force: true });
      forgetRemoveAtExit(dataDir);
    }
    throw error;
  }
}
