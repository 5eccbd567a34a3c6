// The answer of POST /v1/claims as it is written: one NDJSON line per item,
// `{"index","status","body"}`, as each item's reply settles; the lines of one
// turn leave in one chunk, and the answer ends after the last. Written the
// same way onto Node's response (the direct path) and into a Web stream (the
// Hono path).
import { BATCH_CLAIM_RESULTS_MEDIA_TYPE } from '@warmpool/api';
import type { Reply } from './responses.js';

export const RESULT_HEADERS = { 'content-type': BATCH_CLAIM_RESULTS_MEDIA_TYPE };

/** Where the lines go. */
export interface LineSink {
  write(chunk: string): void;
  end(): void;
  /** The caller hung up: no more lines (the claims go on). */
  gone(): boolean;
}

/** Writes each reply's line into `sink` as it settles (claimOne's replies never reject). */
export function writeResultLines(replies: ReadonlyArray<Promise<Reply>>, sink: LineSink): void {
  let pending: string[] = [];
  let left = replies.length;
  const flush = (): void => {
    const chunk = pending.join('');
    pending = [];
    if (sink.gone()) return;
    sink.write(chunk);
    if (left === 0) sink.end();
  };
  replies.forEach((reply, index) => {
    void reply.then((r) => {
      if (pending.length === 0) setImmediate(flush);
      pending.push(`{"index":${index},"status":${r.status},"body":${bodyJson(r.body)}}\n`);
      left--;
    });
  });
}

const decoder = new TextDecoder();

/** A reply's body as a JSON value: its own text when that is JSON, else the text as a string; no body is null. */
function bodyJson(body: Reply['body']): string {
  if (body === null) return 'null';
  const text = typeof body === 'string' ? body : decoder.decode(body);
  if (text.trim() === '') return 'null';
  try {
    JSON.parse(text);
    return text;
  } catch {
    return JSON.stringify(text);
  }
}
