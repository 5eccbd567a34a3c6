// Request bodies: at most 1 MiB (enforced while reading), JSON, then the
// contract's zod schema. Every failure is a 400 with a one-line reason.
//
// An oversized body is refused without buffering it. It is not left half read
// either: a client still sending would see its connection cut instead of the
// 400. A declared Content-Length over the limit is never touched (the node
// server discards it after the answer); a streamed one is read on and thrown
// away up to DISCARD_LIMIT_BYTES, past which the connection is given up.
import { INVALID_BODY_MESSAGE, MAX_BODY_BYTES } from '@warmpool/api';
import type { Context } from 'hono';
import type { z } from 'zod';

const DISCARD_LIMIT_BYTES = 16 * MAX_BODY_BYTES;

export type BodyResult<T> = { ok: true; value: T } | { ok: false; error: string };

/** The body as text, or undefined when it exceeds MAX_BODY_BYTES. */
async function readLimited(c: Context): Promise<string | undefined> {
  const declared = c.req.header('content-length');
  if (declared !== undefined && c.req.header('transfer-encoding') === undefined) {
    const length = Number(declared);
    if (!Number.isSafeInteger(length) || length > MAX_BODY_BYTES) return undefined;
    return c.req.text();
  }
  const stream = c.req.raw.body;
  if (stream === null) return '';
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size <= MAX_BODY_BYTES) chunks.push(value);
    else if (size > DISCARD_LIMIT_BYTES) {
      await reader.cancel();
      return undefined;
    }
  }
  return size > MAX_BODY_BYTES ? undefined : Buffer.concat(chunks).toString('utf8');
}

function describeIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  if (issue === undefined) return INVALID_BODY_MESSAGE;
  const path = issue.path.map(String).join('.');
  return path === '' ? issue.message : `${path}: ${issue.message}`;
}

/**
 * Read, parse and validate the body. `emptyAs` stands in for an empty body
 * where the contract lets every field be absent (renew).
 */
export async function readBody<S extends z.ZodType>(c: Context, schema: S, emptyAs?: unknown): Promise<BodyResult<z.output<S>>> {
  let json: unknown;
  try {
    const text = await readLimited(c);
    if (text === undefined) return { ok: false, error: INVALID_BODY_MESSAGE };
    json = text.trim() === '' && emptyAs !== undefined ? emptyAs : JSON.parse(text);
  } catch {
    return { ok: false, error: INVALID_BODY_MESSAGE };
  }
  const parsed = schema.safeParse(json);
  return parsed.success ? { ok: true, value: parsed.data } : { ok: false, error: describeIssue(parsed.error) };
}
