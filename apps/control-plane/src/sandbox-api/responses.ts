// The apiserver's answer shapes: Status for errors, Table and
// PartialObjectMetadata for the Accept forms kubectl and controllers ask for.
import { AGENTS_GROUP, SandboxType, type KubeStatus, type KubeTable } from '@warmpool/api';
import type { Context } from 'hono';
import { TABLE_COLUMNS, tableCells, type ServedSandbox } from './sandbox-object.js';

export type StatusReason =
  | 'BadRequest'
  | 'Unauthorized'
  | 'Forbidden'
  | 'NotFound'
  | 'AlreadyExists'
  | 'Conflict'
  | 'Invalid'
  | 'Expired'
  | 'MethodNotAllowed'
  | 'NotAcceptable'
  | 'TooManyRequests'
  | 'ServiceUnavailable'
  | 'Timeout'
  | 'InternalError';

export const STATUS_CODES: Record<StatusReason, number> = {
  BadRequest: 400,
  Unauthorized: 401,
  Forbidden: 403,
  NotFound: 404,
  MethodNotAllowed: 405,
  NotAcceptable: 406,
  AlreadyExists: 409,
  Conflict: 409,
  Expired: 410,
  Invalid: 422,
  TooManyRequests: 429,
  InternalError: 500,
  ServiceUnavailable: 503,
  Timeout: 504,
};

export class ApiError extends Error {
  override name = 'ApiError';
  readonly reason: StatusReason;
  readonly details: KubeStatus['details'];
  /** The reason's own code unless another of the same class is meant (502 is an InternalError, as client-go reads it). */
  readonly code: number;

  constructor(reason: StatusReason, message: string, details?: KubeStatus['details'], code?: number) {
    super(message);
    this.reason = reason;
    this.details = details;
    this.code = code ?? STATUS_CODES[reason];
  }
}

export function statusOf(error: ApiError): KubeStatus {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: error.message,
    reason: error.reason,
    ...(error.details !== undefined ? { details: error.details } : {}),
    code: error.code,
  };
}

/** The error as the Status it answers, with Retry-After when its details say when to come back. */
export function statusResponse(c: Context, error: ApiError): Response {
  const retry = error.details?.retryAfterSeconds;
  return jsonResponse(c, error.code, statusOf(error), retry !== undefined ? { 'retry-after': String(retry) } : {});
}

export function jsonResponse(
  c: Context,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): Response {
  return c.newResponse(JSON.stringify(body), status as 200, { ...headers, 'content-type': 'application/json' });
}

export function notFound(name: string): ApiError {
  return new ApiError('NotFound', `sandboxes.${AGENTS_GROUP} "${name}" not found`, {
    name,
    group: AGENTS_GROUP,
    kind: SandboxType.plural,
  });
}

/** How the client wants objects: as themselves, as Table rows, or as metadata only. */
export type Representation =
  { as: 'object' } | { as: 'table'; include: 'None' | 'Metadata' | 'Object' } | { as: 'metadata' };

/**
 * Reads the Accept header the way the apiserver negotiates: the first media
 * type we can serve wins. JSON only (no protobuf); `as=Table` and
 * `as=PartialObjectMetadata[List]` of meta.k8s.io v1 (and v1beta1).
 */
export function representationOf(accept: string | undefined, includeObject: string | undefined): Representation {
  if (accept === undefined || accept.trim() === '') return { as: 'object' };
  for (const part of accept.split(',')) {
    const [type = '', ...params] = part.split(';').map((p) => p.trim());
    if (type !== 'application/json' && type !== '*/*' && type !== 'application/*') continue;
    const fields = new Map(
      params.map((p) => {
        const eq = p.indexOf('=');
        return [p.slice(0, eq).trim(), p.slice(eq + 1).trim()] as const;
      }),
    );
    const as = fields.get('as');
    if (as === undefined) return { as: 'object' };
    if (fields.get('g') !== 'meta.k8s.io' || !['v1', 'v1beta1'].includes(fields.get('v') ?? '')) continue;
    if (as === 'Table') {
      const include = includeObject === 'None' || includeObject === 'Object' ? includeObject : 'Metadata';
      return { as: 'table', include };
    }
    if (as === 'PartialObjectMetadata' || as === 'PartialObjectMetadataList') return { as: 'metadata' };
  }
  throw new ApiError(
    'NotAcceptable',
    `only application/json is served (as a Sandbox, a Table or PartialObjectMetadata); asked for ${accept}`,
  );
}

export function tableOf(
  items: readonly ServedSandbox[],
  resourceVersion: string,
  include: 'None' | 'Metadata' | 'Object',
  now: number,
  headers = true,
): KubeTable {
  return {
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    metadata: { resourceVersion },
    columnDefinitions: headers ? TABLE_COLUMNS : [],
    rows: items.map((served) => ({
      cells: tableCells(served, now),
      object: include === 'Object' ? served.object : include === 'Metadata' ? partialOf(served) : undefined,
    })),
  };
}

export function partialOf(served: ServedSandbox): unknown {
  return { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: served.object.metadata };
}
