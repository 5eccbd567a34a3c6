// The claim API's OpenAPI 3.1 document, served at GET /openapi.json on the
// claim port. Every body schema is generated (libs/runtime's openApiDocument)
// from the zod schema that validates it on the wire (libs/api), so the
// document cannot drift from what the API accepts and answers; only the route
// table below is written here.
import {
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

const COMPONENTS = {
  CreateClaimRequest: { schema: createClaimRequestSchema, io: 'input' },
  RenewClaimRequest: { schema: renewClaimRequestSchema, io: 'input' },
  Claim: { schema: claimBodySchema, io: 'output' },
  RenewClaimResponse: { schema: renewClaimResponseSchema, io: 'output' },
  Error: { schema: claimErrorBodySchema, io: 'output' },
} satisfies Record<string, OpenApiComponent>;

const { json, body, op } = openApiBuilders<keyof typeof COMPONENTS>();

/** Answers every claim route can give besides its own. */
const COMMON_ERRORS: Json = {
  '400': json('Error', 'BadRequest: an invalid namespace, claim id or body'),
  '401': json('Error', 'Unauthenticated: no bearer token, or the apiserver does not accept it (TokenReview)'),
  '403': json(
    'Error',
    'Forbidden: the caller may not use this verb on sandboxclaims in the namespace (SubjectAccessReview)',
  ),
  '405': json('Error', 'MethodNotAllowed: the path exists, the method does not (Allow lists the ones that do)'),
  '503': json('Error', "Unavailable: Redis, the workers or the apiserver's reviews are unreachable (Retry-After)"),
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
        '404': json('Error', 'PoolNotFound, EnvNotFound or NotDriven'),
        '409': json(
          'Error',
          'ClaimRefInUse: the claimRef is live for another identity, pool or env (a replay answers the same sandbox ' +
            'only to the identity that claimed it, for the same pool or env); no token is shown',
        ),
        '429': json('Error', 'NoCapacity: no node has room (Retry-After)'),
        '502': json('Error', 'NodeRefused: the nodes asked refused'),
        '504': json('Error', 'Timeout: not answered within --claim-timeout'),
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
        '404': json('Error', 'ClaimNotFound'),
        ...COMMON_ERRORS,
      },
      { parameters: [NAMESPACE, ID] },
    ),
    delete: op(
      'releaseClaim',
      "Release a claim's sandbox; needs delete on sandboxclaims",
      {
        '204': { description: 'released' },
        '404': json('Error', 'ClaimNotFound'),
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
        '404': json('Error', 'ClaimNotFound or Expired'),
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
