// SandboxdVariant: a scripted stand-in in front of a real fake-sandboxd (which
// keeps the state: pools, claims, leases), only for answers the fake cannot
// give. Every variant of the real daemon the fake has a switch for (mesh,
// owner_addr absent or a URL, rows without claimed_at, an older daemon,
// tenants, slow boots and trims: docs/sandboxd.md) is tested on the fake
// itself. What is left here: a redirect answer despite `no_redirect` (the real
// daemon and the fake honour it), claim answers with fields the fake never
// adds (template_digest, volumes, net_route) or an owner_addr switched in
// mid-life, list rows with extra fields or broken (no id), and a record of the
// claim and pool bodies the agent forwards (the fake, as the daemon, echoes no
// pool settings).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SandboxdVariantBehaviour {
  /** Claims answer 200 `{"redirect": [...]}` even with `no_redirect`, and are not forwarded (nothing is claimed). */
  redirectClaims?: string[];
  /** Fields added to every served claim answer (e.g. template_digest, volumes, net_route). */
  claimExtras?: Record<string, unknown>;
  /** Replaces `owner_addr` in served claim answers; null removes it. */
  ownerAddr?: string | null;
  /** Fields added to every list row. */
  rowExtras?: Record<string, unknown>;
  /** Rows appended to every list as they are (e.g. one without an id). */
  extraRows?: unknown[];
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
  if (route === 'POST /v1/claim') {
    variant.claimBodies.push(safeJson(body));
    if (b.redirectClaims !== undefined) return json(res, 200, { redirect: b.redirectClaims });
  }
  if (route === 'PUT /v1/pools') variant.poolsBodies.push(safeJson(body));
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
  if (answer.status === 200 && route === 'POST /v1/claim') {
    const claim = safeJson(text) as Record<string, unknown>;
    Object.assign(claim, b.claimExtras ?? {});
    if (b.ownerAddr === null) delete claim['owner_addr'];
    else if (b.ownerAddr !== undefined) claim['owner_addr'] = b.ownerAddr;
    return json(res, 200, claim);
  }
  if (answer.status === 200 && route === 'GET /v1/sandboxes') {
    const list = safeJson(text) as { sandboxes: Array<Record<string, unknown>> };
    const rows: unknown[] = list.sandboxes.map((row) => ({ ...row, ...(b.rowExtras ?? {}) }));
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
