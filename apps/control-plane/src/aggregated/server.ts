// The Sandbox API over TLS, behind the APIService v1beta1.agents.x-k8s.io:
// discovery, OpenAPI, and get / list / watch / create / delete of sandboxes.
// Every request but the health checks must come from the front proxy
// (front-proxy.ts); every resource request is then authorized with a
// SubjectAccessReview as that user (sandboxes.agents.x-k8s.io, the verb, the
// namespace, the name). Plain Node HTTP: list and get are answered from
// memory, and a watch is a long chunked response.
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  AGENTS_GROUP,
  createSandboxBodySchema,
  DEFAULT_CLAIM_TTL_SECONDS,
  SandboxType,
  UPSTREAM_VERSION,
  type KubeStatus,
  type SandboxObjectList,
  type WatchEventType,
  ownerDigest,
} from '@warmpool/api';
import { messageOf, readIncomingJson, UNREADABLE, type HostPort, type Logger } from '@warmpool/runtime';
import { randomBytes } from 'node:crypto';
import { ReviewUnavailable, type UserInfo } from '@warmpool/kube';
import { ClaimFailure, type ClaimService } from '../provisioning/claim-service.js';
import {
  API_GROUP,
  API_GROUP_LIST,
  API_RESOURCE_LIST,
  OPENAPI_V2,
  OPENAPI_V2_ETAG,
  OPENAPI_V3_GROUP_VERSION,
  OPENAPI_V3_HASH,
  OPENAPI_V3_INDEX,
  OPENAPI_V3_PATH,
} from './discovery.js';
import { authenticateProxied, type RequestHeaderConfig } from './front-proxy.js';
import type { SandboxApiMetrics } from './metrics.js';
import type { SandboxReader } from './reader.js';
import {
  ApiError,
  notFound,
  partialOf,
  representationOf,
  statusOf,
  tableOf,
  type Representation,
} from './responses.js';
import { factsOfGrant, ServedSandbox } from './sandbox-object.js';
import { fieldMatcher, labelMatcher, SelectorError, type Matcher } from './selectors.js';
import type { SandboxChange, SandboxView } from './view.js';
import { watchStartOf, watchTimeoutMs } from './watch-params.js';

export type SandboxVerb = 'get' | 'list' | 'watch' | 'create' | 'delete';

export interface SandboxAuthorizer {
  authorize(user: UserInfo, namespace: string, verb: SandboxVerb, name?: string): Promise<boolean>;
}

/** What delete asks of the SandboxClaim cache (the apiserver's word, which survives Redis losing the claim index). */
export interface SandboxClaimCache {
  hasSynced(): boolean;
  get(namespace: string, name: string): unknown;
}

export interface SandboxApiServerOptions {
  listen: HostPort;
  cert: { cert: string; key: string };
  view: SandboxView;
  reader: SandboxReader;
  /** Why list/watch/get cannot be answered yet (caches, claim events); empty when they can. */
  notReadyReasons: () => string[];
  /** The front proxy's settings; undefined until read (then every request is 503). */
  requestHeaders: () => RequestHeaderConfig | undefined;
  authorizer: SandboxAuthorizer;
  /** create and delete claim and release through it; without it they answer 405. */
  claims?: ClaimService;
  /**
   * The SandboxClaim cache: a SandboxClaim's sandbox is released only by deleting the SandboxClaim (the SandboxClaim
   * controller then releases it and deletes the Secret that names it), never behind its back; delete answers 503 until the cache is synced.
   */
  sandboxClaims?: SandboxClaimCache;
  metrics?: SandboxApiMetrics;
  logger: Logger;
  now?: () => number;
  /** Bookmarks on watches that allow them, this often (default 15 s). */
  bookmarkIntervalMs?: number;
  /**
   * A watch without timeoutSeconds ends after between this and twice this (default 30 min), as the apiserver's do;
   * none lasts longer than twice this.
   */
  defaultWatchTimeoutMs?: number;
}

const GROUP_VERSION_PATH = `/apis/${AGENTS_GROUP}/${UPSTREAM_VERSION}`;
const PLURAL = SandboxType.plural;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const MAX_BODY_BYTES = 64 * 1024;
const MAX_WATCH_BACKLOG_BYTES = 16 * 1024 * 1024;

interface ResourceRequest {
  namespace: string | undefined;
  name: string | undefined;
}

export class SandboxApiServer {
  readonly #options: SandboxApiServerOptions;
  readonly #server: Server;
  readonly #now: () => number;
  readonly #watches = new Set<() => void>();
  #caPem: string | undefined;
  #address: HostPort | undefined;

  constructor(options: SandboxApiServerOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#server = createServer({ ...this.#tlsOptions(), requestCert: true, rejectUnauthorized: false }, (req, res) => {
      this.#handle(req, res).catch((err: unknown) => {
        options.logger.error('Sandbox API request failed', { method: req.method, url: req.url, err });
        if (!res.headersSent) this.#sendError(res, new ApiError('InternalError', 'internal error'));
        else res.destroy();
      });
    });
    this.#server.keepAliveTimeout = 65_000;
  }

  get url(): string | undefined {
    if (this.#address === undefined) return undefined;
    const host = this.#address.host.includes(':') ? `[${this.#address.host}]` : this.#address.host;
    return `https://${host}:${this.#address.port}`;
  }

  get address(): HostPort | undefined {
    return this.#address;
  }

  async start(): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen(this.#options.listen.port, this.#options.listen.host, () => {
        this.#server.off('error', reject);
        const info = this.#server.address() as AddressInfo;
        this.#address = { host: info.address, port: info.port };
        resolve();
      });
    });
  }

  /** The front proxy's CA changed: new connections verify against it. */
  refreshTls(): void {
    const ca = this.#options.requestHeaders()?.clientCa;
    if (ca === this.#caPem) return;
    this.#server.setSecureContext(this.#tlsOptions());
  }

  async close(): Promise<void> {
    for (const end of [...this.#watches]) end();
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => this.#server.closeAllConnections(), 5_000);
      timer.unref();
      this.#server.close(() => {
        clearTimeout(timer);
        resolve();
      });
      this.#server.closeIdleConnections();
    });
  }

  #tlsOptions(): { cert: string; key: string; ca?: string } {
    this.#caPem = this.#options.requestHeaders()?.clientCa;
    return {
      cert: this.#options.cert.cert,
      key: this.#options.cert.key,
      ...(this.#caPem !== undefined ? { ca: this.#caPem } : {}),
    };
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'https://sandbox-api.invalid');
    const path = url.pathname.replace(/\/+$/, '') || '/';
    if (path === '/healthz' || path === '/livez') return this.#sendText(res, 200, 'ok');
    if (path === '/readyz') {
      const reasons = this.#options.notReadyReasons();
      return this.#sendText(res, reasons.length === 0 ? 200 : 503, reasons.length === 0 ? 'ok' : reasons.join('\n'));
    }
    const config = this.#options.requestHeaders();
    if (config === undefined)
      return this.#sendError(
        res,
        new ApiError(
          'ServiceUnavailable',
          'the front proxy settings (kube-system/extension-apiserver-authentication) have not been read yet',
        ),
      );
    const authentication = authenticateProxied(req, config);
    if (!authentication.ok) return this.#sendError(res, new ApiError('Unauthorized', authentication.message));
    const user = authentication.user;
    const method = req.method ?? 'GET';

    const documents: Record<string, unknown> = {
      '/apis': API_GROUP_LIST,
      [`/apis/${AGENTS_GROUP}`]: API_GROUP,
      [GROUP_VERSION_PATH]: API_RESOURCE_LIST,
      '/openapi/v3': OPENAPI_V3_INDEX,
    };
    const document = documents[path];
    if (document !== undefined)
      return method === 'GET' ? this.#sendJson(res, 200, document) : this.#sendError(res, methodNotAllowed(method));
    if (path === '/openapi/v2') return this.#sendCached(req, res, OPENAPI_V2, OPENAPI_V2_ETAG);
    if (path === `/openapi/v3/${OPENAPI_V3_PATH}`)
      return this.#sendCached(req, res, OPENAPI_V3_GROUP_VERSION, `"${OPENAPI_V3_HASH}"`);

    const resource = parseResourcePath(path);
    if (resource === undefined)
      return this.#sendError(
        res,
        new ApiError('NotFound', `the server could not find the requested resource (${method} ${path})`),
      );
    try {
      await this.#serveResource(req, res, url, method, resource, user);
    } catch (err) {
      if (res.headersSent) throw err;
      this.#sendError(res, toApiError(err));
    }
  }

  async #serveResource(
    req: IncomingMessage,
    res: ServerResponse,
    url: URL,
    method: string,
    resource: ResourceRequest,
    user: UserInfo,
  ): Promise<void> {
    const { namespace, name } = resource;
    const query = url.searchParams;
    const watch = query.get('watch') === 'true' || query.get('watch') === '1';
    let verb: SandboxVerb;
    if (method === 'GET') verb = name !== undefined ? 'get' : watch ? 'watch' : 'list';
    else if (method === 'POST' && name === undefined && namespace !== undefined) verb = 'create';
    else if (method === 'DELETE' && name !== undefined) verb = 'delete';
    else throw methodNotAllowed(method);
    if (namespace !== undefined && !DNS_LABEL.test(namespace))
      throw new ApiError('BadRequest', `invalid namespace ${JSON.stringify(namespace)}`);
    const started = performance.now();
    if (!(await this.#options.authorizer.authorize(user, namespace ?? '', verb, name))) {
      const where = namespace === undefined ? 'at the cluster scope' : `in the namespace "${namespace}"`;
      const what = name === undefined ? `sandboxes.${AGENTS_GROUP}` : `sandboxes.${AGENTS_GROUP} "${name}"`;
      throw new ApiError(
        'Forbidden',
        `${what} is forbidden: User "${user.username}" cannot ${verb} resource "${PLURAL}" in API group "${AGENTS_GROUP}" ${where}`,
        {
          ...(name !== undefined ? { name } : {}),
          group: AGENTS_GROUP,
          kind: PLURAL,
        },
      );
    }
    const representation = representationOf(req.headers.accept, query.get('includeObject') ?? undefined);
    if (verb === 'create' || verb === 'delete') {
      if (query.get('dryRun') !== null)
        throw new ApiError('BadRequest', 'dryRun is not supported: a Sandbox is a claim, made or released for real');
    } else {
      const reasons = this.#options.notReadyReasons();
      if (reasons.length > 0)
        throw new ApiError('ServiceUnavailable', `the Sandbox view is not ready: ${reasons.join('; ')}`, {
          retryAfterSeconds: 1,
        });
    }
    try {
      switch (verb) {
        case 'get':
          return await this.#get(res, namespace ?? '', name ?? '', representation);
        case 'list':
          return this.#list(res, namespace, query, representation);
        case 'watch':
          return this.#watch(req, res, namespace, query, representation);
        case 'create':
          return await this.#create(req, res, namespace ?? '', representation, user);
        case 'delete':
          return await this.#delete(res, namespace ?? '', name ?? '');
      }
    } finally {
      if (verb !== 'watch') this.#options.metrics?.request(verb, res.statusCode, (performance.now() - started) / 1000);
    }
  }

  async #get(res: ServerResponse, namespace: string, name: string, representation: Representation): Promise<void> {
    const served = await this.#options.reader.get(namespace, name);
    if (served === undefined) throw notFound(name);
    this.#sendJson(res, 200, this.#represent([served], representation, served.resourceVersion, false));
  }

  #list(
    res: ServerResponse,
    namespace: string | undefined,
    query: URLSearchParams,
    representation: Representation,
  ): void {
    const match = matcherOf(query);
    const items: ServedSandbox[] = [];
    for (const served of this.#options.view.items(namespace)) if (match(served)) items.push(served);
    items.sort((a, b) =>
      a.facts.namespace === b.facts.namespace
        ? compare(a.facts.name, b.facts.name)
        : compare(a.facts.namespace, b.facts.namespace),
    );
    this.#sendJson(res, 200, this.#represent(items, representation, this.#options.view.resourceVersion, true));
  }

  #represent(
    items: readonly ServedSandbox[],
    representation: Representation,
    resourceVersion: string,
    list: boolean,
  ): unknown {
    switch (representation.as) {
      case 'table':
        return tableOf(items, resourceVersion, representation.include, this.#now());
      case 'metadata':
        return list
          ? {
              kind: 'PartialObjectMetadataList',
              apiVersion: 'meta.k8s.io/v1',
              metadata: { resourceVersion },
              items: items.map(partialOf),
            }
          : partialOf(items[0] as ServedSandbox);
      case 'object':
        return list
          ? ({
              apiVersion: `${AGENTS_GROUP}/${UPSTREAM_VERSION}`,
              kind: 'SandboxList',
              metadata: { resourceVersion },
              items: items.map((s) => s.object),
            } satisfies SandboxObjectList)
          : (items[0] as ServedSandbox).object;
    }
  }

  #watch(
    req: IncomingMessage,
    res: ServerResponse,
    namespace: string | undefined,
    query: URLSearchParams,
    representation: Representation,
  ): void {
    const match = matcherOf(query);
    const { view } = this.#options;
    const start = watchStartOf(query.get('resourceVersion'), query.get('sendInitialEvents') === 'true');
    const timeoutMs = watchTimeoutMs(query.get('timeoutSeconds'), {
      defaultMs: this.#options.defaultWatchTimeoutMs ?? 30 * 60_000,
    });
    const inScope = (served: ServedSandbox): boolean =>
      (namespace === undefined || served.facts.namespace === namespace) && match(served);

    // Everything up to now is read before the subscription, synchronously: no change can fall between.
    let replay: SandboxChange[] = [];
    let initial: ServedSandbox[] = [];
    if (start.initial) {
      initial = [...view.items(namespace)].filter((served) => match(served));
    } else {
      const changes = view.changesSince(start.since);
      if (changes === 'gone') {
        res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-cache' });
        const gone: KubeStatus = statusOf(
          new ApiError(
            'Expired',
            `too old resource version: ${start.since} (this replica's history starts later, or it was another replica's); list again`,
          ),
        );
        res.end(`${JSON.stringify({ type: 'ERROR', object: gone })}\n`);
        return;
      }
      replay = changes;
    }

    res.writeHead(200, {
      'content-type': 'application/json',
      'cache-control': 'no-cache',
      'transfer-encoding': 'chunked',
    });
    // At once, not with the first event: client-go's Watch() returns only once it has the response headers.
    res.flushHeaders();
    let headersSent = false;
    const encode = (type: WatchEventType, served: ServedSandbox, rv: number | string): string => {
      let object: unknown;
      if (representation.as === 'table') {
        object = tableOf([served], String(rv), representation.include, this.#now(), !headersSent);
        headersSent = true;
      } else if (representation.as === 'metadata') object = partialOf(served);
      else object = served.object;
      return `${JSON.stringify({ type, object })}\n`;
    };
    const deliver = (change: SandboxChange): string | undefined => {
      const now = inScope(change.sandbox);
      const before = change.previous !== undefined && inScope(change.previous);
      if (change.type === 'MODIFIED') {
        if (now && before) return encode('MODIFIED', change.sandbox, change.resourceVersion);
        if (now) return encode('ADDED', change.sandbox, change.resourceVersion);
        if (before && change.previous !== undefined) {
          return encode(
            'DELETED',
            new ServedSandbox(change.previous.facts, String(change.resourceVersion)),
            change.resourceVersion,
          );
        }
        return undefined;
      }
      return now ? encode(change.type, change.sandbox, change.resourceVersion) : undefined;
    };
    const bookmark = (initialEventsEnd: boolean): string => {
      const metadata = {
        resourceVersion: view.resourceVersion,
        ...(initialEventsEnd ? { annotations: { 'k8s.io/initial-events-end': 'true' } } : {}),
      };
      return `${JSON.stringify({ type: 'BOOKMARK', object: { apiVersion: `${AGENTS_GROUP}/${UPSTREAM_VERSION}`, kind: SandboxType.kind, metadata } })}\n`;
    };

    let chunk = '';
    for (const served of initial) chunk += encode('ADDED', served, served.resourceVersion);
    for (const change of replay) chunk += deliver(change) ?? '';
    const bookmarks = query.get('allowWatchBookmarks') === 'true';
    // A bookmark at once (the end of the initial events when they were asked for): a watch with nothing to report
    // still shows its client a current resourceVersion, and every proxy in between a first byte of body.
    if (bookmarks) chunk += bookmark(query.get('sendInitialEvents') === 'true');
    if (chunk !== '') res.write(chunk);

    const unsubscribe = view.subscribe((change) => {
      const line = deliver(change);
      if (line === undefined) return;
      res.write(line);
      // A client that does not read is let go rather than buffered without bound; it relists and watches again.
      if (res.writableLength > MAX_WATCH_BACKLOG_BYTES) end();
    });
    const timers = [setTimeout(() => end(), timeoutMs)];
    if (bookmarks)
      timers.push(setInterval(() => res.write(bookmark(false)), this.#options.bookmarkIntervalMs ?? 15_000));
    this.#options.metrics?.watchStarted();
    const end = (): void => {
      if (!this.#watches.delete(end)) return;
      unsubscribe();
      for (const timer of timers) clearTimeout(timer);
      this.#options.metrics?.watchEnded();
      res.end();
    };
    this.#watches.add(end);
    // The response closes when the client goes away (the request's own 'close' may come as soon as its body is read).
    res.on('close', end);
  }

  async #create(
    req: IncomingMessage,
    res: ServerResponse,
    namespace: string,
    representation: Representation,
    user: UserInfo,
  ): Promise<void> {
    const claims = this.#options.claims;
    if (claims === undefined)
      throw new ApiError(
        'MethodNotAllowed',
        'create needs provisioning (--redis-url): this control plane cannot claim',
      );
    const json = await new Promise<unknown>((resolve) => readIncomingJson(req, MAX_BODY_BYTES, resolve));
    if (json === UNREADABLE) throw new ApiError('BadRequest', 'the body is not a JSON Sandbox (at most 64 KiB)');
    const parsed = createSandboxBodySchema.safeParse(json);
    if (!parsed.success) {
      const causes = parsed.error.issues.map((issue) => ({
        reason: 'FieldValueInvalid',
        message: issue.message,
        field: issue.path.join('.'),
      }));
      throw new ApiError('Invalid', `Sandbox is invalid: ${causes.map((c) => `${c.field}: ${c.message}`).join('; ')}`, {
        group: AGENTS_GROUP,
        kind: SandboxType.kind,
        causes,
      });
    }
    const body = parsed.data;
    if (body.metadata.namespace !== undefined && body.metadata.namespace !== namespace) {
      throw new ApiError(
        'BadRequest',
        `the namespace of the object (${body.metadata.namespace}) does not match the namespace of the request (${namespace})`,
      );
    }
    const name =
      body.metadata.name ??
      (body.metadata.generateName !== undefined
        ? `${body.metadata.generateName}${randomBytes(3).toString('hex').slice(0, 5)}`
        : undefined);
    if (name === undefined)
      throw new ApiError(
        'Invalid',
        'Sandbox is invalid: metadata.name: Required value: name or generateName is required',
        { group: AGENTS_GROUP, kind: SandboxType.kind },
      );
    // A claimRef answers its live sandbox again (idempotency); a Sandbox create must not: exactly one create of a
    // name is answered 201. Looked up first (the index or the nodes, and the view, which also holds what the nodes
    // published), then decided by the claim itself: only the one call whose order had the sandbox claimed is fresh,
    // however many replicas serve creates of that name at once.
    // A SandboxClaim of that name owns the name too (its Sandbox appears once it is served), as the claim API refuses
    // such a claimRef and #delete refuses to release its sandbox.
    const heldByClaim = this.#sandboxClaimNamed(namespace, name);
    if (
      heldByClaim ||
      (await claims.lookup({ namespace, door: 'http' }, name, { indexOnly: true })) !== undefined ||
      this.#options.view.get(namespace, name) !== undefined
    )
      throw alreadyExists(name);
    const grant = await claims.claim(
      {
        namespace,
        warmPool: body.spec.warmPoolRef.name,
        claimRef: name,
        ttlSeconds: body.spec.ttlSeconds ?? DEFAULT_CLAIM_TTL_SECONDS,
        // A Sandbox is an HTTP-door claim of the requesting user (the same key space as the claim API's).
        owner: { door: 'http', digest: ownerDigest(user, `pool:${body.spec.warmPoolRef.name}`) },
        // A name made from generateName cannot be come back for: released if the client gives up before the answer.
        ...(body.metadata.name === undefined ? { claimRefGenerated: true } : {}),
      },
      { signal: abortOnClose(res) },
    );
    if (grant.fresh !== true) throw alreadyExists(name);
    const facts = { ...factsOfGrant(namespace, name, grant), claimedAt: new Date(this.#now()).toISOString() };
    const full = new ServedSandbox(facts, this.#options.view.resourceVersion);
    this.#sendJson(res, 201, this.#represent([full], representation, this.#options.view.resourceVersion, false));
  }

  async #delete(res: ServerResponse, namespace: string, name: string): Promise<void> {
    const claims = this.#options.claims;
    if (claims === undefined)
      throw new ApiError(
        'MethodNotAllowed',
        'delete needs provisioning (--redis-url): this control plane cannot release',
      );
    const heldByClaim = this.#sandboxClaimNamed(namespace, name);
    if (heldByClaim)
      throw new ApiError(
        'Conflict',
        `sandboxes.${AGENTS_GROUP} "${name}" is held by the SandboxClaim "${name}": delete the SandboxClaim instead (that releases the sandbox)`,
        { name, group: AGENTS_GROUP, kind: PLURAL },
      );
    // Only an HTTP claim's Sandbox is released here (a SandboxClaim's is in another key space), and by its id: exactly
    // the sandbox checked, even if the name were claimed again in between. A Sandbox is named by its claimRef only.
    const scope = { namespace, door: 'http' } as const;
    const grant = await claims.lookup(scope, name);
    if (grant === undefined || grant.claimRef !== name) throw notFound(name);
    if (!(await claims.release(scope, grant.id))) throw notFound(name);
    const done: KubeStatus = {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Success',
      details: { name, group: AGENTS_GROUP, kind: PLURAL },
      code: 200,
    };
    this.#sendJson(res, 200, done);
  }

  /** Whether a SandboxClaim holds the name (its cache must be synced to tell: 503 until then). */
  #sandboxClaimNamed(namespace: string, name: string): boolean {
    const sandboxClaims = this.#options.sandboxClaims;
    if (sandboxClaims === undefined || !sandboxClaims.hasSynced())
      throw new ApiError(
        'ServiceUnavailable',
        `the SandboxClaim cache is not synced yet: cannot tell whether sandbox "${name}" is a SandboxClaim's`,
        { retryAfterSeconds: 1 },
      );
    return sandboxClaims.get(namespace, name) !== undefined;
  }

  #sendCached(req: IncomingMessage, res: ServerResponse, document: unknown, etag: string): void {
    if (req.headers['if-none-match'] === etag) {
      res.writeHead(304, { etag });
      res.end();
      return;
    }
    res.setHeader('etag', etag);
    this.#sendJson(res, 200, document);
  }

  #sendJson(res: ServerResponse, status: number, body: unknown): void {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  }

  #sendText(res: ServerResponse, status: number, text: string): void {
    res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  }

  #sendError(res: ServerResponse, error: ApiError): void {
    const retry = error.details?.retryAfterSeconds;
    if (retry !== undefined) res.setHeader('retry-after', String(retry));
    this.#sendJson(res, error.code, statusOf(error));
  }
}

function parseResourcePath(path: string): ResourceRequest | undefined {
  if (!path.startsWith(`${GROUP_VERSION_PATH}/`)) return undefined;
  const parts = path
    .slice(GROUP_VERSION_PATH.length + 1)
    .split('/')
    .map(decodeURIComponent);
  if (parts.length === 1 && parts[0] === PLURAL) return { namespace: undefined, name: undefined };
  if (parts[0] !== 'namespaces' || parts[2] !== PLURAL) return undefined;
  if (parts.length === 3) return { namespace: parts[1], name: undefined };
  if (parts.length === 4) return { namespace: parts[1], name: parts[3] };
  return undefined;
}

/** The request's selectors over a served Sandbox; without selectors the object is not even built. */
function matcherOf(query: URLSearchParams): (served: ServedSandbox) => boolean {
  const labelSelector = query.get('labelSelector') ?? '';
  const fieldSelector = query.get('fieldSelector') ?? '';
  if (labelSelector.trim() === '' && fieldSelector.trim() === '') return () => true;
  try {
    const labels: Matcher = labelMatcher(labelSelector);
    const fields: Matcher = fieldMatcher(fieldSelector);
    return (served) => {
      const sandbox = served.object;
      return labels(sandbox) && fields(sandbox);
    };
  } catch (err) {
    if (err instanceof SelectorError) throw new ApiError('BadRequest', err.message);
    throw err;
  }
}

function alreadyExists(name: string): ApiError {
  return new ApiError('AlreadyExists', `sandboxes.${AGENTS_GROUP} "${name}" already exists`, {
    name,
    group: AGENTS_GROUP,
    kind: PLURAL,
  });
}

function methodNotAllowed(method: string): ApiError {
  return new ApiError(
    'MethodNotAllowed',
    `the server does not allow this method on the requested resource (${method}); sandboxes support get, list, watch, create, delete`,
  );
}

function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  if (err instanceof ClaimFailure) {
    const retry =
      err.retryAfterSeconds !== undefined ? { retryAfterSeconds: Math.max(1, Math.ceil(err.retryAfterSeconds)) } : {};
    switch (err.reason) {
      case 'PoolNotFound':
      case 'NotDriven':
        return new ApiError('Invalid', `Sandbox is invalid: spec.warmPoolRef.name: ${err.message}`, {
          group: AGENTS_GROUP,
          kind: SandboxType.kind,
          causes: [{ reason: err.reason, message: err.message, field: 'spec.warmPoolRef.name' }],
        });
      case 'BadRequest':
        return new ApiError('BadRequest', err.message);
      case 'ClaimNotFound':
      case 'Expired':
        return new ApiError('NotFound', err.message);
      case 'NoCapacity':
        return new ApiError('TooManyRequests', `no capacity: ${err.message}`, {
          retryAfterSeconds: retry.retryAfterSeconds ?? 1,
        });
      case 'Timeout':
        return new ApiError('Timeout', err.message, retry);
      case 'NodeRefused':
        return new ApiError('InternalError', err.message);
      default:
        return new ApiError('ServiceUnavailable', err.message, { retryAfterSeconds: retry.retryAfterSeconds ?? 1 });
    }
  }
  if (err instanceof ReviewUnavailable)
    return new ApiError('ServiceUnavailable', err.message, { retryAfterSeconds: 1 });
  return new ApiError('InternalError', messageOf(err));
}

/** Aborts when the client goes away before its answer was written. */
function abortOnClose(res: ServerResponse): AbortSignal {
  const controller = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) controller.abort();
  });
  return controller.signal;
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
