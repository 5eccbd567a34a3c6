// Request bodies at the edge: at most MAX_BODY_BYTES (checked on the declared
// length before reading, and while reading a chunked body), JSON, then the
// contract's zod schema. Every failure is a 400 with a one-line reason, in
// sandboxd's words where sandboxd has words for it.
import { INVALID_BODY_MESSAGE, MAX_BODY_BYTES } from '@warmpool/api';
import type { Context } from 'hono';
import type { z } from 'zod';
import { requestHeader } from './headers.js';

export type BodyResult<T> = { ok: true; value: T } | { ok: false; error: string };

const TOO_LARGE: BodyResult<never> = { ok: false, error: INVALID_BODY_MESSAGE };

/** `pools.0.warm: warm must not be negative`: the first issue, with where it is. */
export function describeIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  if (issue === undefined) return INVALID_BODY_MESSAGE;
  const path = issue.path.map(String).join('.');
  return path === '' ? issue.message : `${path}: ${issue.message}`;
}

async function readCapped(stream: ReadableStream<Uint8Array> | null, maxBytes: number): Promise<string | undefined> {
  if (stream === null) return '';
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel();
      return undefined;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

async function readText(c: Context, maxBytes: number): Promise<string | undefined> {
  const declared = requestHeader(c, 'content-length');
  if (declared !== undefined) {
    // The HTTP parser holds the client to its declared length, so checking it up front is enough.
    return Number(declared) > maxBytes ? undefined : c.req.text();
  }
  return readCapped(c.req.raw.body, maxBytes);
}

/**
 * The validated body. `emptyAs` stands in for an empty body where every field
 * may be absent (renew).
 */
export async function readJsonBody<S extends z.ZodType>(c: Context, schema: S, emptyAs?: unknown): Promise<BodyResult<z.output<S>>> {
  let json: unknown;
  try {
    const text = await readText(c, MAX_BODY_BYTES);
    if (text === undefined) return TOO_LARGE;
    json = emptyAs !== undefined && text.trim() === '' ? emptyAs : JSON.parse(text);
  } catch {
    return { ok: false, error: INVALID_BODY_MESSAGE };
  }
  const parsed = schema.safeParse(json);
  return parsed.success ? { ok: true, value: parsed.data } : { ok: false, error: describeIssue(parsed.error) };
}
