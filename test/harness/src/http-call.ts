// One HTTP call as the specs make them against warmpool's apps: a bearer token,
// a JSON (or raw) body, and the answer read whole.
import { request } from 'node:http';

export interface HttpAnswer<T = unknown> {
  status: number;
  headers: Headers;
  text: string;
  /** The body parsed as JSON; undefined when it is not JSON. */
  json: unknown;
  /** The parsed body when the answer says it is JSON (and is not empty), else the text. */
  body: T;
}

export interface HttpCallOptions {
  /** Bearer token; null or undefined sends no Authorization header. */
  token?: string | null;
  /** Sent as JSON. */
  body?: unknown;
  /** Sent as is. */
  rawBody?: string | ReadableStream<Uint8Array>;
  /** Extra headers; a body is sent as application/json unless they say otherwise. */
  headers?: Record<string, string>;
  /** Give up after this long (default: no limit). */
  timeoutMs?: number;
}

/** `method base+path`; whatever the status, the answer is read and returned. */
export async function httpCall<T = unknown>(
  base: string,
  method: string,
  path: string,
  options: HttpCallOptions = {},
): Promise<HttpAnswer<T>> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token !== undefined && options.token !== null) headers['authorization'] = `Bearer ${options.token}`;
  const body = options.rawBody ?? (options.body === undefined ? undefined : JSON.stringify(options.body));
  if (body !== undefined) headers['content-type'] ??= 'application/json';
  const init: RequestInit & { duplex?: 'half' } = { method, headers, body };
  if (body instanceof ReadableStream) init.duplex = 'half';
  if (options.timeoutMs !== undefined) init.signal = AbortSignal.timeout(options.timeoutMs);
  const res = await fetch(base + path, init);
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  const declaredJson = (res.headers.get('content-type') ?? '').includes('json') && text !== '';
  return { status: res.status, headers: res.headers, text, json, body: (declaredJson ? JSON.parse(text) : text) as T };
}

/**
 * A POST whose headers declare a body (say a Content-Length far over a cap) of which only `firstBytes` are ever sent:
 * the answer must come without the rest, as a server that refuses by the declared size answers.
 */
export function postDeclaringOnly(
  url: string,
  headers: Record<string, string>,
  firstBytes: string,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(new URL(url), { method: 'POST', headers });
    req.on('response', (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.write(firstBytes);
  });
}
