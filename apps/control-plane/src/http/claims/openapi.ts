// The claim API's OpenAPI 3.1 document, served at GET /openapi.json on the
// claim port. Every body schema is generated (libs/runtime's openApiDocument)
// from the zod schema that validates it on the wire (libs/api), so the
// document cannot drift from what the API accepts and answers; only the route
// table below is written here, and each failure's status is the one the API
// answers for its reason (../failures.ts).
import {
  type ClaimFailureReason,
  claimBodySchema,
  claimErrorBodySchema,
  createClaimRequestSchema,
  renewClaimRequestSchema,
  renewClaimResponseSchema,
} from '@warmpool/api';
import {
  openApiBuilders,
  packageVersion,
  servedDocument,
  type OpenApiComponent,
  type OpenApiJson as Json,
} from '@warmpool/runtime';
import { FAILURE_STATUS } from '../failures.js';

const COMPONENTS = {
  CreateClaimRequest: { schema: createClaimRequestSchema, io: 'input' },
  RenewClaimRequest: { schema: renewClaimRequestSchema, io: 'input' },
  Claim: { schema: claimBodySchema, io: 'output' },
  RenewClaimResponse: { schema: renewClaimResponseSchema, io: 'output' },
  Error: { schema: claimErrorBodySchema, io: 'output' },
} satisfies Record<string, OpenApiComponent>;

const { json, body, op } = openApiBuilders<keyof typeof COMPONENTS>();

/** The error answer of failures of these reasons (one status: they share it), described. */
function failure(reasons: readonly [ClaimFailureReason, ...ClaimFailureReason[]], description: string): Json {
  const status = FAILURE_STATUS[reasons[0]];
  if (reasons.some((reason) => FAILURE_STATUS[reason] !== status))
    throw new Error(`${reasons.join(', ')} do not share a status`);
  return { [String(status)]: json('Error', description) };
}

/** Answers every claim route can give besides its own. */
const COMMON_ERRORS: Json = {
  ...failure(['BadRequest'], 'BadRequest: an invalid namespace, claim id or body'),
  ...failure(
    ['Unauthenticated'],
    'Unauthenticated: no bearer token, or the apiserver does not accept it (TokenReview)',
  ),
  ...failure(
    ['Forbidden'],
    'Forbidden: the caller may not use this verb on sandboxclaims in the namespace (SubjectAccessReview)',
  ),
  ...failure(
    ['MethodNotAllowed'],
    'MethodNotAllowed: the path exists, the method does not (Allow lists the ones that do)',
  ),
  ...failure(
    ['Unavailable'],
    "Unavailable: Redis, the workers or the apiserver's reviews are unreachable (Retry-After)",
  ),
};
const NAMESPACE = { name: 'namespace', in: 'path', required: true, schema: { type: 'string' } };
const ID = {
  name: 'id',
  in: 'path',
  required: true,
  schema: { type: 'string' },
  description: 'A sandbox id (sb_…) or a claimRef',
};
const KUBERNETES = [{ kubernetesToken: [] }];

const PATHS: Json = {
  '/openapi.json': {
    get: op(
      'openapi',
      'This document',
      { '200': { description: 'OpenAPI 3.1', content: { 'application/json': {} } } },
      { security: [] },
    ),
  },
  '/v1/namespaces/{namespace}/claims': {
    post: op(
      'createClaim',
      'Claim a warm sandbox from a pool (warmPool) or a SandboxEnv (env); needs create on sandboxclaims',
      {
        '200': json('Claim', 'claimed: the sandbox, where it runs, and its own token'),
        ...failure(['PoolNotFound', 'EnvNotFound', 'NotDriven'], 'PoolNotFound, EnvNotFound or NotDriven'),
        ...failure(
          ['ClaimRefInUse'],
          'ClaimRefInUse: the claimRef is live for another identity, pool or env (a replay answers the same sandbox ' +
            'only to the identity that claimed it, for the same pool or env); no token is shown',
        ),
        ...failure(['NoCapacity'], 'NoCapacity: no node has room (Retry-After)'),
        ...failure(['NodeRefused'], 'NodeRefused: the nodes asked refused'),
        ...failure(['Timeout'], 'Timeout: not answered within --claim-timeout'),
        ...COMMON_ERRORS,
      },
      { parameters: [NAMESPACE], requestBody: body('CreateClaimRequest') },
    ),
  },
  '/v1/namespaces/{namespace}/claims/{id}': {
    get: op(
      'getClaim',
      'A claim, without its token; needs get on sandboxclaims',
      {
        '200': json('Claim', 'the claim'),
        ...failure(['ClaimNotFound'], 'ClaimNotFound'),
        ...COMMON_ERRORS,
      },
      { parameters: [NAMESPACE, ID] },
    ),
    delete: op(
      'releaseClaim',
      "Release a claim's sandbox; needs delete on sandboxclaims",
      {
        '204': { description: 'released' },
        ...failure(['ClaimNotFound'], 'ClaimNotFound'),
        ...COMMON_ERRORS,
      },
      { parameters: [NAMESPACE, ID] },
    ),
  },
  '/v1/namespaces/{namespace}/claims/{id}/renew': {
    post: op(
      'renewClaim',
      "Extend a claim's lease by ttlSeconds from now; needs update on sandboxclaims",
      {
        '200': json('RenewClaimResponse', 'the new deadline'),
        ...failure(['ClaimNotFound'], 'ClaimNotFound'),
        ...COMMON_ERRORS,
      },
      { parameters: [NAMESPACE, ID], requestBody: body('RenewClaimRequest', false) },
    ),
  },
};

/** The control plane's version: the package.json beside dist/ (or src/), two folders above this module's. */
const CONTROL_PLANE_VERSION = packageVersion(new URL('../..', import.meta.url).href);

/** The document (built once per process for this package's own version). */
export const claimApiDocument = servedDocument(CONTROL_PLANE_VERSION, (version) => ({
  info: {
    title: 'warmpool claim API',
    version,
    description:
      "Claims of warm sandboxes, served by every control plane replica. Callers authenticate with a Kubernetes bearer token; each route needs its verb on sandboxclaims.extensions.agents.x-k8s.io in the path's namespace.",
  },
  security: KUBERNETES,
  paths: PATHS,
  components: COMPONENTS,
  securitySchemes: {
    kubernetesToken: {
      type: 'http',
      scheme: 'bearer',
      description:
        "A Kubernetes token (e.g. a ServiceAccount's), reviewed with a TokenReview; a peer cluster presents its own peer token instead (see docs/federation.md)",
    },
  },
}));
