// POST /v1/claims: several claims in one request, each item run exactly as
// POST /v1/claim would run it (claim-one.ts), all of them at once, each
// item's result streamed back as soon as it is answered (NDJSON, one line per
// item, with its index): a claim that boots cold on the node holds back no
// other. The results answered in one turn leave in one chunk. The envelope
// is judged first: a malformed one is a 400 for the whole request and claims
// nothing; after that every item gets its own result, a bad item a 400 of its
// own while the others are served. The route's access is declared once, in
// ROUTE_ACCESS, like every route's. Every item is also counted as a claim
// (route "claim", its own status, timed from the batch's start), so what
// watches the claims sees them however they came.
import { agentBatchClaimEnvelopeSchema, BATCH_CLAIM_RESULTS_MEDIA_TYPE } from '@warmpool/api';
import { readJsonBody } from '@warmpool/runtime';
import { claimOne, type ClaimOneDependencies } from './claim-one.js';
import { toResponse, type Reply } from './responses.js';
import { BODY, bodyRefused, type Handler, type Routes } from './route.js';
import { ANY_JSON, parseBody } from './strict-body.js';

const RESULT_HEADERS = { 'content-type': BATCH_CLAIM_RESULTS_MEDIA_TYPE };
const decoder = new TextDecoder();
const encoder = new TextEncoder();

/** Records one claim answered: its status, timed from `startedMs`. */
export type ObserveClaim = (status: number, startedMs: number) => void;

export function claimsBatchRoute({ route }: Routes, deps: ClaimOneDependencies, observe: ObserveClaim): Handler {
  return route('claims', async (c) => {
    const started = performance.now();
    const json = await readJsonBody(c, ANY_JSON, BODY);
    if (!json.ok) return bodyRefused(json);
    const envelope = parseBody(agentBatchClaimEnvelopeSchema, json.value);
    if (!envelope.ok) return toResponse(envelope.reply);
    const replies = envelope.value.claims.map((item) =>
      claimOne(deps, item).then((reply) => {
        observe(reply.status, started);
        return reply;
      }),
    );
    return new Response(resultLines(replies), { status: 200, headers: RESULT_HEADERS });
  });
}

/**
 * One line per reply, `{"index","status","body"}`, as each settles (claimOne never rejects); the lines of one turn in
 * one chunk; the stream ends after the last. A caller that hangs up stops the lines, not the claims.
 */
export function resultLines(replies: ReadonlyArray<Promise<Reply>>): ReadableStream<Uint8Array> {
  let pending: string[] = [];
  let left = replies.length;
  let cancelled = false;
  return new ReadableStream<Uint8Array>({
    start(controller) {
      const flush = (): void => {
        const chunk = pending.join('');
        pending = [];
        if (cancelled) return;
        controller.enqueue(encoder.encode(chunk));
        if (left === 0) controller.close();
      };
      replies.forEach((reply, index) => {
        void reply.then((r) => {
          if (pending.length === 0) setImmediate(flush);
          pending.push(`{"index":${index},"status":${r.status},"body":${bodyJson(r.body)}}\n`);
          left--;
        });
      });
    },
    cancel() {
      cancelled = true;
    },
  });
}

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
