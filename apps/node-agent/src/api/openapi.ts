// The agent API's OpenAPI 3.1 document, served at GET /openapi.json. Every
// body schema is generated (libs/runtime's openApiDocument) from the zod schema
// that validates it on the wire (libs/api), so the document cannot drift from
// what the agent accepts and answers; only the route table below is written here.
import {
  agentErrorBodySchema,
  agentBatchClaimRequestSchema,
  agentBatchClaimResultSchema,
  BATCH_CLAIM_RESULTS_MEDIA_TYPE,
  agentClaimRequestSchema,
  agentRenewRequestSchema,
  agentSetPoolsStrictSchema,
  claimResponseSchema,
  nodeInfoSchema,
  renewResponseSchema,
  sandboxListSchema,
  sandboxRowSchema,
} from '@warmpool/api';
import {
  openApiBuilders,
  packageVersion,
  servedDocument,
  type OpenApiComponent,
  type OpenApiJson as Json,
} from '@warmpool/runtime';
import { z } from 'zod';

const staleGenerationSchema = z.object({
  error: z.string(),
  reason: z.literal('StaleGeneration'),
  appliedGeneration: z.number().int(),
});

/** Named component schemas: the request and answer shapes of the API. */
const COMPONENTS = {
  SetPoolsRequest: { schema: agentSetPoolsStrictSchema, io: 'input' },
  ClaimRequest: { schema: agentClaimRequestSchema, io: 'input' },
  BatchClaimRequest: { schema: agentBatchClaimRequestSchema, io: 'input' },
  RenewRequest: { schema: agentRenewRequestSchema, io: 'input' },
  NodeInfo: { schema: nodeInfoSchema, io: 'output' },
  ClaimResponse: { schema: claimResponseSchema, io: 'output' },
  BatchClaimResult: { schema: agentBatchClaimResultSchema, io: 'output' },
  RenewResponse: { schema: renewResponseSchema, io: 'output' },
  SandboxRow: { schema: sandboxRowSchema, io: 'output' },
  SandboxList: { schema: sandboxListSchema, io: 'output' },
  Error: { schema: agentErrorBodySchema, io: 'output' },
  StaleGeneration: { schema: staleGenerationSchema, io: 'output' },
} satisfies Record<string, OpenApiComponent>;

const { json, text, body, op, ref } = openApiBuilders<keyof typeof COMPONENTS>();

/** Answers every authenticated route can give besides its own. */
const COMMON_ERRORS: Json = {
  '401': json('Error', 'no or a wrong token'),
  '405': json('Error', 'the path exists, the method does not (Allow lists the ones that do)'),
  '503': json('Error', 'no fleet token configured, or sandboxd unreachable'),
};
const ROOT = [{ fleetToken: [] }];
const SANDBOX = [{ fleetToken: [] }, { sandboxToken: [] }];
const ID = { name: 'id', in: 'path', required: true, schema: { type: 'string' } };

const PATHS: Json = {
  '/healthz': { get: op('healthz', 'Liveness', { '200': text('ok') }, { security: [] }) },
  '/readyz': {
    get: op(
      'readyz',
      'Readiness: sandboxd answers and a fleet token is configured',
      { '200': text('ok'), '503': json('Error', 'not ready, with reasons') },
      { security: [] },
    ),
  },
  '/metrics': { get: op('metrics', 'Prometheus metrics', { '200': text('text exposition format') }, { security: [] }) },
  '/openapi.json': {
    get: op(
      'openapi',
      'This document',
      { '200': { description: 'OpenAPI 3.1', content: { 'application/json': {} } } },
      { security: [] },
    ),
  },
  '/v1/pools': {
    put: op(
      'setPools',
      "Set the node's warm pool targets (the control plane, with a generation that only grows)",
      {
        '200': json('NodeInfo', "applied; the node's pools now"),
        '400': json('Error', 'invalid body'),
        '409': json('StaleGeneration', 'older than the applied generation: nothing changed'),
        ...COMMON_ERRORS,
      },
      { security: ROOT, requestBody: body('SetPoolsRequest') },
    ),
  },
  '/v1/info': {
    get: op(
      'info',
      "The node's pools, claims and flags",
      { '200': json('NodeInfo', 'the node'), ...COMMON_ERRORS },
      { security: ROOT },
    ),
  },
  '/v1/claim': {
    post: op(
      'claim',
      'Claim a warm sandbox of a template',
      {
        '200': json('ClaimResponse', 'claimed: the sandbox and its own token'),
        '400': json('Error', 'invalid body'),
        '429': json('Error', 'the node is full or draining, or too many claims are in flight'),
        ...COMMON_ERRORS,
      },
      { security: ROOT, requestBody: body('ClaimRequest') },
    ),
  },
  '/v1/claims': {
    post: op(
      'claimBatch',
      'Claim several sandboxes in one request: each item is run as POST /v1/claim runs it, all at once',
      {
        '200': {
          description:
            'one line per item (NDJSON; the schema is that of one line), each sent as soon as that item is answered: its index in the request, and the status and JSON body POST /v1/claim would have answered',
          content: { [BATCH_CLAIM_RESULTS_MEDIA_TYPE]: { schema: ref('BatchClaimResult') } },
        },
        '400': json('Error', 'invalid envelope (not an object, no claims, too many, unknown field): nothing claimed'),
        ...COMMON_ERRORS,
      },
      { security: ROOT, requestBody: body('BatchClaimRequest') },
    ),
  },
  '/v1/sandboxes': {
    get: op(
      'listSandboxes',
      "The node's sandboxes",
      { '200': json('SandboxList', 'the sandboxes'), '400': json('Error', 'invalid claim_ref'), ...COMMON_ERRORS },
      {
        security: ROOT,
        parameters: [{ name: 'claim_ref', in: 'query', required: false, schema: { type: 'string' } }],
      },
    ),
  },
  '/v1/sandboxes/{id}': {
    get: op(
      'getSandbox',
      'One sandbox',
      { '200': json('SandboxRow', 'the sandbox'), '404': json('Error', 'no such sandbox'), ...COMMON_ERRORS },
      { security: ROOT, parameters: [ID] },
    ),
  },
  '/v1/sandboxes/{id}/release': {
    post: op(
      'release',
      'Give a claimed sandbox back',
      { '204': { description: 'released' }, '404': json('Error', 'no such sandbox'), ...COMMON_ERRORS },
      { security: SANDBOX, parameters: [ID] },
    ),
  },
  '/v1/sandboxes/{id}/renew': {
    post: op(
      'renew',
      "Extend a claim's deadline",
      { '200': json('RenewResponse', 'the new deadline'), '404': json('Error', 'no such sandbox'), ...COMMON_ERRORS },
      {
        security: SANDBOX,
        parameters: [ID],
        requestBody: body('RenewRequest', false),
      },
    ),
  },
  '/v1/drain': {
    post: op(
      'drain',
      'Stop refilling and refuse new claims',
      { '200': json('NodeInfo', 'draining'), ...COMMON_ERRORS },
      { security: ROOT },
    ),
    delete: op(
      'undrain',
      'Lift the drain',
      { '200': json('NodeInfo', 'no longer draining'), ...COMMON_ERRORS },
      { security: ROOT },
    ),
  },
};

/** The agent's version: the package.json above src/ (or dist/), whose api/ folder holds this module. */
const AGENT_VERSION = packageVersion(new URL('..', import.meta.url).href);

/** The document (built once per process for this package's own version). */
export const openApiDocument = servedDocument(AGENT_VERSION, (version) => ({
  info: {
    title: 'warmpool node agent',
    version,
    description:
      'The per-node agent in front of sandboxd: the fleet token, a body limit, validation, and SetPools generations.',
  },
  security: ROOT,
  paths: PATHS,
  components: COMPONENTS,
  securitySchemes: {
    fleetToken: { type: 'http', scheme: 'bearer', description: 'The fleet token (root)' },
    sandboxToken: {
      type: 'http',
      scheme: 'bearer',
      description: "A claimed sandbox's own token (release, renew of that sandbox)",
    },
  },
}));
