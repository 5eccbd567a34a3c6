// POST /v1/claims: several claims in one request, each item run exactly as
// POST /v1/claim would run it (claim-one.ts), all of them at once, each
// item's result streamed back as soon as it is answered (NDJSON, one line per
// item, with its index; claims-batch-lines.ts): a claim that boots cold on
// the node holds back no other. The envelope is judged first: a malformed one
// is a 400 for the whole request and claims nothing; after that every item
// gets its own result, a bad item a 400 of its own while the others are
// served. The route's access is declared once, in ROUTE_ACCESS, like every
// route's. Every item is also counted as a claim (route "claim", its own
// status, timed from the batch's start), so what watches the claims sees them
// however they came. Served over HTTP, the batch is answered on Node's own
// objects (claims-batch-direct.ts); this is the same route through Hono's
// Request and Response, for a request that reaches the app without
// node-server's bindings.
import { agentBatchClaimEnvelopeSchema } from '@warmpool/api';
import { readJsonBody } from '@warmpool/runtime';
import { claimOne, type ClaimOneDependencies } from './claim-one.js';
import { RESULT_HEADERS, writeResultLines } from './claims-batch-lines.js';
import { toResponse, type Reply } from './responses.js';
import { BODY, bodyRefused, type Handler, type Routes } from './route.js';
import { ANY_JSON, parseBody } from './strict-body.js';

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
    return new Response(resultStream(replies), { status: 200, headers: RESULT_HEADERS });
  });
}

/** The result lines as a Web stream; a caller that hangs up stops the lines, not the claims. */
function resultStream(replies: ReadonlyArray<Promise<Reply>>): ReadableStream<Uint8Array> {
  let cancelled = false;
  return new ReadableStream<Uint8Array>({
    start(controller) {
      writeResultLines(replies, {
        write: (chunk) => controller.enqueue(encoder.encode(chunk)),
        end: () => controller.close(),
        gone: () => cancelled,
      });
    },
    cancel() {
      cancelled = true;
    },
  });
}
