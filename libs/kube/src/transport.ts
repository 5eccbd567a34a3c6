// HTTP/1.1 to the apiserver with the KubeConfig's own authentication (client
// certs, tokens, exec plugins), without the generated API classes: we need free
// choice of content type (merge patch, apply-patch+yaml), the raw Status body
// of failures, and a streamed body for watches.
//
// Why node:https and not client-node's fetch: that path negotiates HTTP/2 with
// the apiserver, and undici's HTTP/2 client throws an uncaught SocketError
// (crashing the process) when the apiserver goes away after a watch stream on
// the shared session was aborted. With HTTP/1.1 each watch owns its connection
// and ending it is just closing that socket.
import http from 'node:http';
import https from 'node:https';
import type { IncomingMessage } from 'node:http';
import { KubeApiError } from './errors.js';
import type { KubeStatus } from './errors.js';
import type { KubeConfig } from './kubeconfig/kubeconfig.js';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export type QueryValue = string | number | boolean | undefined;

export interface KubeRequest {
  method: HttpMethod;
  /** Absolute API path, e.g. `/apis/warmpool.dev/v1alpha1/nodeinventories`. */
  path: string;
  query?: Record<string, QueryValue>;
  /** Sent as JSON. */
  body?: unknown;
  /** Content type of the body; JSON unless a patch says otherwise. */
  contentType?: string;
  signal?: AbortSignal;
  /**
   * Fail the request when no byte arrives for this long (a dead or frozen peer). A plain request takes the
   * transport's requestIdleTimeoutMs when this is not given; a watch (streamLines) has none unless given.
   */
  idleTimeoutMs?: number;
}

export interface KubeTransportOptions {
  /**
   * How long a plain request (not a watch) may go without a byte before it fails (default 70 s). A living
   * apiserver ends every non-watch request itself within its --request-timeout (60 s by default), so with that
   * default only a dead or frozen one reaches this; without it, a request on a kept-alive connection to a frozen
   * apiserver waits for TCP keepalive to give up (minutes).
   */
  requestIdleTimeoutMs?: number;
}

/**
 * Past the apiserver's default --request-timeout (60 s), so a living apiserver with that default answers (504) first.
 */
export const DEFAULT_REQUEST_IDLE_TIMEOUT_MS = 70_000;

/**
 * Each app's --kube-request-timeout (KUBE_REQUEST_TIMEOUT), which sets requestIdleTimeoutMs: one flag spec
 * (@warmpool/runtime's FlagSpec shape) for the control plane, the node agent and the router.
 */
export const KUBE_REQUEST_TIMEOUT_FLAG = {
  kind: 'duration',
  description:
    "A request to the apiserver (not a watch) fails after this long without a byte of its answer; keep it above the apiserver's --request-timeout (60s by default); 0: none",
  env: 'KUBE_REQUEST_TIMEOUT',
  default: DEFAULT_REQUEST_IDLE_TIMEOUT_MS,
} as const;

interface Prepared {
  url: URL;
  options: https.RequestOptions;
}

export class KubeTransport {
  readonly #kubeConfig: KubeConfig;
  readonly #requestIdleTimeoutMs: number;
  // client-node's own agent opens a new TLS connection per request; ours keeps them alive.
  #agent: http.Agent | undefined;
  #agentMaterial = '';

  constructor(kubeConfig: KubeConfig, options: KubeTransportOptions = {}) {
    this.#kubeConfig = kubeConfig;
    this.#requestIdleTimeoutMs = options.requestIdleTimeoutMs ?? DEFAULT_REQUEST_IDLE_TIMEOUT_MS;
  }

  /**
   * Sends one request and returns the parsed JSON answer; throws KubeApiError on any non-2xx, and an Error when no
   * byte arrived for the request's idle timeout.
   */
  async request<R>(req: KubeRequest): Promise<R> {
    const response = await this.#send({ ...req, idleTimeoutMs: req.idleTimeoutMs ?? this.#requestIdleTimeoutMs });
    const text = await readText(response);
    const status = response.statusCode ?? 0;
    if (status < 200 || status >= 300) throw errorFromBody(status, text);
    return (text === '' ? undefined : JSON.parse(text)) as R;
  }

  /**
   * Streams a newline-delimited JSON body (a watch). Ends when the server ends
   * the stream or `req.signal` aborts; leaving the loop early closes the connection.
   */
  async *streamLines(req: KubeRequest): AsyncGenerator<unknown, void, undefined> {
    if (req.signal?.aborted) return;
    let response: IncomingMessage | undefined;
    try {
      response = await this.#send(req);
      if (response.statusCode !== 200) throw errorFromBody(response.statusCode ?? 0, await readText(response));
      response.setEncoding('utf8');
      let buffered = '';
      for await (const chunk of response as AsyncIterable<string>) {
        buffered += chunk;
        let newline = buffered.indexOf('\n');
        while (newline >= 0) {
          const line = buffered.slice(0, newline).trim();
          buffered = buffered.slice(newline + 1);
          if (line !== '') yield JSON.parse(line) as unknown;
          newline = buffered.indexOf('\n');
        }
      }
      // A stream cut off mid-response must not look like a clean end.
      if (!response.complete) throw new Error('watch stream ended before the response was complete');
      if (buffered.trim() !== '') yield JSON.parse(buffered) as unknown;
    } catch (err) {
      // An abort we were asked for is a normal end, not a failure.
      if (req.signal?.aborted) return;
      throw err;
    } finally {
      // Never hand a half-read watch connection back to the pool.
      if (response && !response.complete) response.destroy();
    }
  }

  /** Drops idle keep-alive connections; requests after this open new ones. */
  close(): void {
    this.#agent?.destroy();
    this.#agent = undefined;
    this.#agentMaterial = '';
  }

  async #send(req: KubeRequest): Promise<IncomingMessage> {
    const { url, options } = await this.#prepare(req);
    const body = req.body === undefined ? undefined : JSON.stringify(req.body);
    // applyToHTTPSOptions only ever writes a plain header object.
    const headers: http.OutgoingHttpHeaders = {
      ...(options.headers as http.OutgoingHttpHeaders | undefined),
      Accept: 'application/json',
    };
    if (body !== undefined) {
      headers['Content-Type'] = req.contentType ?? 'application/json';
      headers['Content-Length'] = Buffer.byteLength(body);
    }
    const lib = url.protocol === 'http:' ? http : https;
    return new Promise((resolve, reject) => {
      const answered = (response: IncomingMessage): void => {
        // The credential these options carried was refused: a plugin's is dropped, unless already replaced.
        if (response.statusCode === 401) this.#kubeConfig.onUnauthorized?.(options);
        resolve(response);
      };
      const request = lib.request(url, { ...options, method: req.method, headers, signal: req.signal }, answered);
      request.on('error', reject);
      if (req.idleTimeoutMs !== undefined) {
        request.setTimeout(req.idleTimeoutMs, () =>
          request.destroy(new Error(`no data from the apiserver for ${req.idleTimeoutMs} ms`)),
        );
      }
      request.end(body);
    });
  }

  async #prepare(req: KubeRequest): Promise<Prepared> {
    const cluster = this.#kubeConfig.getCurrentCluster();
    if (!cluster) throw new Error('kubeconfig has no current cluster');
    const url = new URL(cluster.server.replace(/\/+$/, '') + req.path);
    for (const [key, value] of Object.entries(req.query ?? {})) {
      if (value !== undefined) url.searchParams.set(key, String(value));
    }
    // Applied per request: tokens and exec-plugin credentials may rotate.
    const options: https.RequestOptions = {};
    await this.#kubeConfig.applyToHTTPSOptions(options);
    if (!cluster.proxyUrl) options.agent = this.#agentFor(url, options);
    return { url, options };
  }

  #agentFor(url: URL, tls: https.RequestOptions): http.Agent {
    const material = [tls.ca, tls.cert, tls.key, tls.pfx, tls.passphrase, tls.rejectUnauthorized, tls.servername]
      .map(String)
      .join('\0');
    if (this.#agent && material === this.#agentMaterial) return this.#agent;
    if (this.#agent) retire(this.#agent);
    this.#agentMaterial = material;
    const common = { keepAlive: true, keepAliveMsecs: 30_000 };
    this.#agent =
      url.protocol === 'http:'
        ? new http.Agent(common)
        : new https.Agent({
            ...common,
            ...(tls.ca === undefined ? {} : { ca: tls.ca }),
            ...(tls.cert === undefined ? {} : { cert: tls.cert }),
            ...(tls.key === undefined ? {} : { key: tls.key }),
            ...(tls.pfx === undefined ? {} : { pfx: tls.pfx }),
            ...(tls.passphrase === undefined ? {} : { passphrase: tls.passphrase }),
            ...(tls.rejectUnauthorized === undefined ? {} : { rejectUnauthorized: tls.rejectUnauthorized }),
            ...(tls.servername === undefined ? {} : { servername: tls.servername }),
          });
    return this.#agent;
  }
}

/**
 * An agent whose TLS material rotated: its idle connections close now, and each one still carrying a request (a
 * watch, say) closes when that request ends, instead of being cut under it.
 */
function retire(agent: http.Agent): void {
  (agent as http.Agent & { keepAlive: boolean }).keepAlive = false;
  for (const sockets of Object.values(agent.freeSockets)) for (const socket of sockets ?? []) socket.destroy();
}

async function readText(response: IncomingMessage): Promise<string> {
  response.setEncoding('utf8');
  let text = '';
  for await (const chunk of response as AsyncIterable<string>) text += chunk;
  return text;
}

function errorFromBody(statusCode: number, text: string): KubeApiError {
  try {
    const parsed = JSON.parse(text) as KubeStatus;
    if (parsed && typeof parsed === 'object' && parsed.kind === 'Status')
      return KubeApiError.fromStatus(parsed, statusCode);
  } catch {
    // Not JSON (a proxy's error page, say): keep the text as the message.
  }
  return new KubeApiError(statusCode, '', text.slice(0, 500) || `HTTP ${statusCode}`);
}

const transports = new WeakMap<KubeConfig, KubeTransport>();

/**
 * Sets the options of the transport every client of `kubeConfig` will share. Only before the first of them is made
 * (a transport's options are fixed once clients hold it): throws after.
 */
export function configureTransport(kubeConfig: KubeConfig, options: KubeTransportOptions): void {
  if (transports.has(kubeConfig))
    throw new Error('this KubeConfig has its transport already: configure it before any client is made');
  transports.set(kubeConfig, new KubeTransport(kubeConfig, options));
}

/** One transport (and so one connection pool) per KubeConfig object. */
export function transportFor(kubeConfig: KubeConfig): KubeTransport {
  let transport = transports.get(kubeConfig);
  if (!transport) {
    transport = new KubeTransport(kubeConfig);
    transports.set(kubeConfig, transport);
  }
  return transport;
}
