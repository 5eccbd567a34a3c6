// POST /v1/claims: several claims in one request, each item run exactly as
// POST /v1/claim would run it (claim-one.ts), all of them at once, answered
// together in item order. The envelope is judged first: a malformed one is a
// 400 for the whole request and claims nothing; after that every item gets its
// own result, a bad item a 400 of its own while the others are served. The
// route's access is declared once, in ROUTE_ACCESS, like every route's.
import { agentBatchClaimEnvelopeSchema } from '@warmpool/api';
import { readJsonBody } from '@warmpool/runtime';
import { claimOne, type ClaimOneDependencies } from './claim-one.js';
import { toResponse, type Reply } from './responses.js';
import { BODY, bodyRefused, type Handler, type Routes } from './route.js';
import { ANY_JSON, parseBody } from './strict-body.js';

const JSON_HEADERS = { 'content-type': 'application/json' };
const decoder = new TextDecoder();

export function claimsBatchRoute({ route }: Routes, deps: ClaimOneDependencies): Handler {
  return route('claims', async (c) => {
    const json = await readJsonBody(c, ANY_JSON, BODY);
    if (!json.ok) return bodyRefused(json);
    const envelope = parseBody(agentBatchClaimEnvelopeSchema, json.value);
    if (!envelope.ok) return toResponse(envelope.reply);
    const replies = await Promise.all(envelope.value.claims.map((item) => claimOne(deps, item)));
    return new Response(resultsJson(replies), { status: 200, headers: JSON_HEADERS });
  });
}

/** `{"results":[{"status","body"}…]}`, each body embedded as the JSON it already is (no re-encoding). */
export function resultsJson(replies: readonly Reply[]): string {
  return `{"results":[${replies.map((r) => `{"status":${r.status},"body":${bodyJson(r.body)}}`).join(',')}]}`;
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
