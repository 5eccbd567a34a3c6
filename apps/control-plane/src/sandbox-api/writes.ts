// create and delete of sandboxes: a create is an HTTP-door claim of the
// requesting user, named by the Sandbox's name (its claimRef); a delete
// releases it on its node. A SandboxClaim's sandbox is never released here
// (the SandboxClaim controller does, when the SandboxClaim is deleted), and a name a
// SandboxClaim holds is never created.
import {
  AGENTS_GROUP,
  createSandboxBodySchema,
  DEFAULT_CLAIM_TTL_SECONDS,
  ownerDigest,
  SandboxType,
  type KubeStatus,
} from '@warmpool/api';
import { readBodyBytes, decodeBody } from '@warmpool/runtime';
import { randomBytes } from 'node:crypto';
import { Hono, type Context } from 'hono';
import type { RouteAccess } from '../http/access/route-access.js';
import { callerGoneWith } from '../provisioning/caller-signal.js';
import type { ClaimService } from '../provisioning/claim-service.js';
import type { SandboxApiEnv, SandboxVerb } from './access.js';
import { NAMESPACED, represent } from './reads.js';
import { ApiError, jsonResponse, notFound, representationOf } from './responses.js';
import { factsOfGrant, ServedSandbox } from './sandbox-object.js';
import type { SandboxView } from './view.js';

const PLURAL = SandboxType.plural;
const MAX_BODY_BYTES = 64 * 1024;

/** What delete asks of the SandboxClaim cache (the apiserver's word, which survives Redis losing the claim index). */
export interface SandboxClaimCache {
  hasSynced(): boolean;
  get(namespace: string, name: string): unknown;
}

export interface WriteOptions {
  view: SandboxView;
  /** create and delete claim and release through it; without it they answer 405. */
  claims?: ClaimService | undefined;
  /**
   * The SandboxClaim cache: a SandboxClaim's sandbox is released only by deleting the SandboxClaim (the SandboxClaim
   * controller then releases it and deletes the Secret that names it), never behind its back; delete answers 503 until the cache is synced.
   */
  sandboxClaims?: SandboxClaimCache | undefined;
  now: () => number;
}

export function writeRoutes(
  access: RouteAccess<SandboxApiEnv, SandboxVerb>,
  options: WriteOptions,
): Hono<SandboxApiEnv> {
  return new Hono<SandboxApiEnv>()
    .post(NAMESPACED, access.allow('create'), (c) => create(c, options))
    .delete(`${NAMESPACED}/:name`, access.allow('delete'), (c) => remove(c, options));
}

async function create(c: Context<SandboxApiEnv>, options: WriteOptions): Promise<Response> {
  const representation = representationOf(c.req.header('accept'), c.req.query('includeObject'));
  const claims = writable(c, options, 'create needs provisioning (--redis-url): this control plane cannot claim');
  const namespace = c.req.param('namespace') ?? '';
  const body = await sandboxBody(c, namespace);
  const name =
    body.metadata.name ??
    (body.metadata.generateName !== undefined
      ? `${body.metadata.generateName}${randomBytes(3).toString('hex').slice(0, 5)}`
      : undefined);
  if (name === undefined)
    throw new ApiError(
      'Invalid',
      'Sandbox is invalid: metadata.name: Required value: name or generateName is required',
      {
        group: AGENTS_GROUP,
        kind: SandboxType.kind,
      },
    );
  // A claimRef answers its live sandbox again (idempotency); a Sandbox create must not: exactly one create of a
  // name is answered 201. Looked up first (the index or the nodes, and the view, which also holds what the nodes
  // published), then decided by the claim itself: only the one call whose order had the sandbox claimed is fresh,
  // however many replicas serve creates of that name at once. A SandboxClaim of that name owns the name too (its
  // Sandbox appears once it is served), as the claim API refuses such a claimRef and delete refuses to release it.
  if (
    sandboxClaimNamed(options, namespace, name) ||
    (await claims.lookup({ namespace, door: 'http' }, name, { indexOnly: true })) !== undefined ||
    options.view.get(namespace, name) !== undefined
  )
    throw alreadyExists(name);
  const pool = body.spec.warmPoolRef.name;
  const grant = await claims.claim(
    {
      namespace,
      warmPool: pool,
      claimRef: name,
      ttlSeconds: body.spec.ttlSeconds ?? DEFAULT_CLAIM_TTL_SECONDS,
      // A Sandbox is an HTTP-door claim of the requesting user (the same key space as the claim API's).
      owner: { door: 'http', digest: ownerDigest(c.get('user'), `pool:${pool}`) },
      // A name made from generateName cannot be come back for: released if the client gives up before the answer.
      ...(body.metadata.name === undefined ? { claimRefGenerated: true } : {}),
    },
    { givenUp: callerGoneWith(c.req.raw.signal) },
  );
  if (grant.fresh !== true) throw alreadyExists(name);
  const now = options.now();
  const facts = { ...factsOfGrant(namespace, name, grant), claimedAt: new Date(now).toISOString() };
  const resourceVersion = options.view.resourceVersion;
  const served = new ServedSandbox(facts, resourceVersion);
  return jsonResponse(c, 201, represent([served], representation, resourceVersion, false, now));
}

async function remove(c: Context<SandboxApiEnv>, options: WriteOptions): Promise<Response> {
  // As for every verb, an Accept it cannot serve is refused first (406).
  representationOf(c.req.header('accept'), c.req.query('includeObject'));
  const claims = writable(c, options, 'delete needs provisioning (--redis-url): this control plane cannot release');
  const namespace = c.req.param('namespace') ?? '';
  const name = c.req.param('name') ?? '';
  if (sandboxClaimNamed(options, namespace, name))
    throw new ApiError(
      'Conflict',
      `sandboxes.${AGENTS_GROUP} "${name}" is held by the SandboxClaim "${name}": delete the SandboxClaim instead (that releases the sandbox)`,
      { name, group: AGENTS_GROUP, kind: PLURAL },
    );
  // Only an HTTP claim's Sandbox is released here (a SandboxClaim's is in another key space), and by its id: exactly
  // the sandbox checked, even if the name were claimed again in between. A Sandbox is named by its claimRef only.
  const scope = { namespace, door: 'http' } as const;
  const grant = await claims.lookup(scope, name);
  if (grant === undefined || grant.claimRef !== name) throw notFound(name);
  if (!(await claims.release(scope, grant.id))) throw notFound(name);
  const done: KubeStatus = {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Success',
    details: { name, group: AGENTS_GROUP, kind: PLURAL },
    code: 200,
  };
  return jsonResponse(c, 200, done);
}

/** The claim service, for a write that is no dry run; 405 on a control plane without provisioning. */
function writable(c: Context, options: WriteOptions, without: string): ClaimService {
  if (c.req.query('dryRun') !== undefined)
    throw new ApiError('BadRequest', 'dryRun is not supported: a Sandbox is a claim, made or released for real');
  if (options.claims === undefined) throw new ApiError('MethodNotAllowed', without);
  return options.claims;
}

/** The body of a create, checked: a Sandbox of the request's namespace (422 Invalid when it is no Sandbox). */
async function sandboxBody(c: Context, namespace: string) {
  const bytes = await readBodyBytes(c, MAX_BODY_BYTES);
  let json: unknown;
  try {
    if (typeof bytes === 'symbol' || bytes.byteLength === 0) throw new Error('unreadable');
    json = JSON.parse(decodeBody(bytes));
  } catch {
    throw new ApiError('BadRequest', 'the body is not a JSON Sandbox (at most 64 KiB)');
  }
  const parsed = createSandboxBodySchema.safeParse(json);
  if (!parsed.success) {
    const causes = parsed.error.issues.map((issue) => ({
      reason: 'FieldValueInvalid',
      message: issue.message,
      field: issue.path.join('.'),
    }));
    throw new ApiError('Invalid', `Sandbox is invalid: ${causes.map((c) => `${c.field}: ${c.message}`).join('; ')}`, {
      group: AGENTS_GROUP,
      kind: SandboxType.kind,
      causes,
    });
  }
  const body = parsed.data;
  if (body.metadata.namespace !== undefined && body.metadata.namespace !== namespace)
    throw new ApiError(
      'BadRequest',
      `the namespace of the object (${body.metadata.namespace}) does not match the namespace of the request (${namespace})`,
    );
  return body;
}

/** Whether a SandboxClaim holds the name (its cache must be synced to tell: 503 until then). */
function sandboxClaimNamed(options: WriteOptions, namespace: string, name: string): boolean {
  const { sandboxClaims } = options;
  if (sandboxClaims === undefined || !sandboxClaims.hasSynced())
    throw new ApiError(
      'ServiceUnavailable',
      `the SandboxClaim cache is not synced yet: cannot tell whether sandbox "${name}" is a SandboxClaim's`,
      { retryAfterSeconds: 1 },
    );
  return sandboxClaims.get(namespace, name) !== undefined;
}

function alreadyExists(name: string): ApiError {
  return new ApiError('AlreadyExists', `sandboxes.${AGENTS_GROUP} "${name}" already exists`, {
    name,
    group: AGENTS_GROUP,
    kind: PLURAL,
  });
}
