// A batch job's data as the worker reads it from Redis, on every job.
// `batchJobSchema` (zod) stays the definition; this is a hand-written check of
// the same rules for the plain JSON a job is, so the common valid job skips
// zod's generic machinery (in the control plane's profile zod's walk over a
// batch's claims cost several µs per claim). It only ever accepts: whatever it
// does not accept goes to zod, which then accepts it or throws with its own
// words. An accepted job is handed back as it is, so it accepts only what zod
// would return unchanged: no field zod strips, no default left to fill.
// test/batch-job-read.properties.test.ts checks that what it accepts, zod
// accepts with the same value.
import { batchJobSchema, type BatchClaim, type BatchJob } from './claim-jobs.js';
import { KEY_PART_MAX_LENGTH, PRINTABLE_KEY_PART } from './sandboxd.js';

const JOB_FIELDS = new Set(['replyTo', 'namespace', 'warmPool', 'key', 'deadline', 'queuedAt', 'claims']);
const KEY_FIELDS = new Set(['template', 'net', 'size']);
const CLAIM_FIELDS = new Set(['claimRef', 'ttlSeconds', 'door', 'owner', 'generated']);
const DOORS = new Set(['crd', 'http', 'fed']);

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Every own enumerable key of `value` is one of `fields` (zod strips any other, so such a value is zod's). */
function onlyFields(value: Record<string, unknown>, fields: ReadonlySet<string>): boolean {
  for (const field in value) if (!fields.has(field)) return false;
  return true;
}

const isText = (value: unknown): value is string => typeof value === 'string' && value.length >= 1;

// A pool key part: printable, 1..253 long. Within 253 UTF-16 units it is within 253 code points too.
const isKeyPart = (value: unknown): boolean =>
  typeof value === 'string' &&
  value.length >= 1 &&
  value.length <= KEY_PART_MAX_LENGTH &&
  PRINTABLE_KEY_PART.test(value);

function isBatchClaim(value: unknown): value is BatchClaim {
  if (!isRecord(value) || !onlyFields(value, CLAIM_FIELDS)) return false;
  const { claimRef, ttlSeconds, door, owner, generated } = value;
  return (
    isText(claimRef) &&
    typeof ttlSeconds === 'number' &&
    Number.isSafeInteger(ttlSeconds) &&
    ttlSeconds >= 1 &&
    typeof door === 'string' &&
    DOORS.has(door) &&
    isText(owner) &&
    typeof generated === 'boolean'
  );
}

/** `data` when it is a job batchJobSchema returns unchanged, else undefined (it may still be valid: ask zod). */
export function quickBatchJob(data: unknown): BatchJob | undefined {
  if (!isRecord(data) || !onlyFields(data, JOB_FIELDS)) return undefined;
  const { replyTo, namespace, warmPool, key, deadline, queuedAt, claims } = data;
  if (!isText(replyTo) || !isText(namespace) || !isText(warmPool)) return undefined;
  // Every part present: a missing net or size is a default zod fills in.
  if (!isRecord(key) || !onlyFields(key, KEY_FIELDS)) return undefined;
  if (!isKeyPart(key['template']) || !isKeyPart(key['net']) || !isKeyPart(key['size'])) return undefined;
  if (typeof deadline !== 'number' || !Number.isFinite(deadline)) return undefined;
  if (queuedAt !== undefined && (typeof queuedAt !== 'number' || !Number.isFinite(queuedAt))) return undefined;
  if (!Array.isArray(claims) || claims.length === 0) return undefined;
  for (const claim of claims) if (!isBatchClaim(claim)) return undefined;
  return data as BatchJob;
}

/** A batch job's data read as `batchJobSchema.parse` reads it (same value, same errors), valid jobs faster. */
export function readBatchJob(data: unknown): BatchJob {
  return quickBatchJob(data) ?? batchJobSchema.parse(data);
}
