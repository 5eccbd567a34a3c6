// SandboxdVariant: a scripted stand-in for behaviours of the real sandboxd
// (cocoonstack/sandbox, docs/sandboxd-api.md) that fake-sandboxd does not
// have yet. It sits in front of a real fake-sandboxd (which keeps the state:
// pools, claims, leases) and rewrites what goes by: a redirect answer instead
// of a claim, claim answers with extra fields or another owner_addr, list rows
// with extra fields and without claimed_at, a `?claim_ref=` filter ignored, a
// tenant token's 403 on the operator routes, slow claims. Interim, for the
// specs of "Meet the real sandboxd", until fake-sandboxd's own switches land.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SandboxdVariantBehaviour {
  /** Claims answer 200 `{"redirect": [...]}` and are not forwarded (nothing is claimed). */
  redirectClaims?: string[];
  /** Only the next this many claims answer the redirect (counted down); every claim when absent. */
  redirectNext?: number;
  /** Fields added to every served claim answer (e.g. template_digest, volumes, net_route). */
  claimExtras?: Record<string, unknown>;
  /** Replaces `owner_addr` in served claim answers; null removes it. */
  ownerAddr?: string | null;
  /** Fields added to every list row. */
  rowExtras?: Record<string, unknown>;
  /** List rows lose `claimed_at`. */
  dropClaimedAt?: boolean;
  /** Rows appended to every list as they are (e.g. one without an id). */
  extraRows?: unknown[];
  /** `GET /v1/sandboxes?claim_ref=` answers the whole list (an older daemon). */
  ignoreClaimRefFilter?: boolean;
  /** The operator routes (/v1/info, PUT /v1/pools, drain) answer 403, as to a tenant token. */
  tenantToken?: boolean;
  /** Served claims answer this much later (the claim itself is made at once, as a slow cold boot that lands). */
  claimDelayMs?: number;
  /**
   * Claims reach the daemon behind only this much later (a cold boot: nothing is listed under its claim_ref until it
   * lands), whether or not the caller is still there.
   */
  claimLandsAfterMs?: number;
  /** PUT /v1/pools answers this much later (a real sandboxd waits for the VMs it trims); applied at once. */
  poolsDelayMs?: number;
}

export interface SandboxdVariant {
  /** `http://127.0.0.1:port`, for an agent's --sandboxd-url. */
  url: string;
  /** The behaviour, changeable while it runs. */
  behaviour: SandboxdVariantBehaviour;
  /** Bodies of the claims forwarded to the daemon behind it (parsed), in order. */
  readonly claimBodies: unknown[];
  /** Bodies of the PUT /v1/pools it got (parsed), in order. */
  readonly poolsBodies: unknown[];
  /** The paths (with query) of every call it got, in order. */
  readonly calls: string[];
  close(): Promise<void>;
}

const OPERATOR_ROUTES = /^(GET \/v1\/info|PUT \/v1\/pools|POST \/v1\/drain|DELETE \/v1\/drain)$/;

/** Starts a SandboxdVariant on loopback in front of `upstream` (a fake-sandboxd's http:// URL). */
export async function startSandboxdVariant(
  upstream: string,
  behaviour: SandboxdVariantBehaviour = {},
): Promise<SandboxdVariant> {
  const claimBodies: unknown[] = [];
  const poolsBodies: unknown[] = [];
  const calls: string[] = [];
  const variant: Omit<SandboxdVariant, 'url' | 'close'> = { behaviour, claimBodies, poolsBodies, calls };
  const server: Server = createServer((req, res) => {
    serve(upstream, variant, req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: `variant: ${String(err)}` }));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    ...variant,
    get behaviour() {
      return variant.behaviour;
    },
    set behaviour(value) {
      variant.behaviour = value;
    },
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function serve(
  upstream: string,
  variant: Omit<SandboxdVariant, 'url' | 'close'>,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const b = variant.behaviour;
  const url = new URL(req.url ?? '/', 'http://variant');
  variant.calls.push(`${req.method ?? ''} ${url.pathname}${url.search}`);
  const body = await readBody(req);
  const route = `${req.method ?? ''} ${url.pathname}`;
  if (b.tenantToken === true && OPERATOR_ROUTES.test(route))
    return json(res, 403, { error: 'forbidden: operator route needs the root api_token' });
  if (route === 'POST /v1/claim') {
    variant.claimBodies.push(safeJson(body));
    if (b.redirectClaims !== undefined && (b.redirectNext === undefined || b.redirectNext > 0)) {
      if (b.redirectNext !== undefined) b.redirectNext--;
      return json(res, 200, { redirect: b.redirectClaims });
    }
    if (b.claimLandsAfterMs !== undefined) await new Promise((resolve) => setTimeout(resolve, b.claimLandsAfterMs));
  }
  if (route === 'PUT /v1/pools') variant.poolsBodies.push(safeJson(body));
  if (route === 'GET /v1/sandboxes' && b.ignoreClaimRefFilter === true) url.searchParams.delete('claim_ref');
  const headers: Record<string, string> = {};
  for (const name of ['authorization', 'content-type']) {
    const value = req.headers[name];
    if (typeof value === 'string') headers[name] = value;
  }
  const answer = await fetch(`${upstream}${url.pathname}${url.search}`, {
    method: req.method ?? 'GET',
    headers,
    ...(body.length > 0 ? { body } : {}),
  });
  const text = await answer.text();
  if (route === 'PUT /v1/pools' && b.poolsDelayMs !== undefined)
    await new Promise((resolve) => setTimeout(resolve, b.poolsDelayMs));
  if (answer.status === 200 && route === 'POST /v1/claim') {
    const claim = safeJson(text) as Record<string, unknown>;
    Object.assign(claim, b.claimExtras ?? {});
    if (b.ownerAddr === null) delete claim['owner_addr'];
    else if (b.ownerAddr !== undefined) claim['owner_addr'] = b.ownerAddr;
    if (b.claimDelayMs !== undefined) await new Promise((resolve) => setTimeout(resolve, b.claimDelayMs));
    return json(res, 200, claim);
  }
  if (answer.status === 200 && route === 'GET /v1/sandboxes') {
    const list = safeJson(text) as { sandboxes: Array<Record<string, unknown>> };
    const rows: unknown[] = list.sandboxes.map((row) => {
      const out = { ...row, ...(b.rowExtras ?? {}) };
      if (b.dropClaimedAt === true) delete out['claimed_at'];
      return out;
    });
    rows.push(...(b.extraRows ?? []));
    return json(res, 200, { sandboxes: rows });
  }
  res.writeHead(answer.status, {
    ...(answer.headers.get('content-type') !== null
      ? { 'content-type': answer.headers.get('content-type') as string }
      : {}),
    ...(answer.headers.get('retry-after') !== null
      ? { 'retry-after': answer.headers.get('retry-after') as string }
      : {}),
  });
  res.end(text);
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
