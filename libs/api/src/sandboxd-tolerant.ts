// What warmpool reads from a real sandboxd's answers, tolerantly. The real
// daemon (cocoonstack/sandbox, docs/sandboxd-api.md) answers more than our
// contract in ./sandboxd.ts names: extra fields on claims (`template_digest`,
// `volumes`, `from_checkpoint`, …) and on list rows (`hibernated`,
// `archived`, `volumes`, …), `claimed_at` absent on claims recorded before the
// field existed, `owner_addr` as a full http(s) origin when the node has
// `client_advertise`, and a `{"redirect": [...]}` answer (200) to a claim it
// will not serve itself. These schemas read only what warmpool depends on and
// never fail a whole answer for one odd row.
//
// To fold into ./sandboxd.ts once the wire schemas there move: the shapes
// below (claim answer with `owner_addr` optional, `redirectAnswerSchema`,
// rows with `claimed_at` optional, a list parsed row by row).
import { z } from 'zod';
import { ownerAddrSchema } from './owner-addr.js';

/** A claim sandboxd served. Only id, token and deadline are required; everything else it adds passes. */
export const tolerantClaimResponseSchema = z
  .object({
    id: z.string().min(1),
    token: z.string().min(1),
    deadline: z.string().min(1),
    /** host:port, or (with `client_advertise`) a full http(s) origin; absent on some daemons. */
    owner_addr: z.string().optional(),
  })
  .loose();
export type TolerantClaimResponse = z.output<typeof tolerantClaimResponseSchema>;

/**
 * A claim sandboxd did not serve but points elsewhere (a warm miss with warm
 * peers, no golden, or at max_claims). warmpool places claims itself and
 * sends `no_redirect: true`, so this should not come back; when it does (an
 * older daemon), it is a refusal with candidates, never a served claim.
 */
export const redirectAnswerSchema = z
  .object({
    redirect: z.array(z.string()),
    require_promoted: z.boolean().optional(),
  })
  .loose();
export type RedirectAnswer = z.output<typeof redirectAnswerSchema>;

/**
 * One row of `GET /v1/sandboxes`, as warmpool reads it: id, deadline and the
 * pool key are what it depends on (lookups, leases, the inventory's entries
 * and per-key counts); `claimed_at` is optional (absent on claims recorded
 * before the field existed); anything else passes.
 */
export const tolerantSandboxRowSchema = z
  .object({
    id: z.string().min(1),
    key: z.object({ template: z.string(), net: z.string(), size: z.string() }).loose(),
    deadline: z.string().min(1),
    claimed_at: z.string().optional(),
    claim_ref: z.string().optional(),
    /** Only on `GET /v1/sandboxes/{id}` with the root token. */
    token: z.string().optional(),
  })
  .loose();
export type TolerantSandboxRow = z.output<typeof tolerantSandboxRowSchema>;

/** The rows warmpool could read, and how many it had to skip (each lacked what warmpool depends on). */
export interface SandboxRows {
  rows: TolerantSandboxRow[];
  skipped: number;
  /** The first skipped row's problem, for one log line. */
  firstProblem?: string;
}

const listEnvelopeSchema = z.object({ sandboxes: z.array(z.unknown()) }).loose();

/**
 * A `GET /v1/sandboxes` body, row by row: a row without an id, deadline or key
 * is skipped and counted, the others are read. Throws only when the body is
 * not a list at all (`{"sandboxes": [...]}`).
 */
export function parseSandboxRows(json: unknown): SandboxRows {
  const envelope = listEnvelopeSchema.parse(json);
  const result: SandboxRows = { rows: [], skipped: 0 };
  envelope.sandboxes.forEach((raw, i) => {
    const row = tolerantSandboxRowSchema.safeParse(raw);
    if (row.success) {
      result.rows.push(row.data);
      return;
    }
    result.skipped++;
    if (result.firstProblem === undefined) {
      const issue = row.error.issues[0];
      result.firstProblem = `sandboxes.${i}.${issue?.path.join('.') ?? ''}: ${issue?.message ?? 'invalid'}`;
    }
  });
  return result;
}

/** Only the rows recorded under exactly `claimRef`: an older sandboxd ignores the `?claim_ref=` filter. */
export function rowsOfClaimRef<T extends { claim_ref?: string | undefined }>(
  rows: readonly T[],
  claimRef: string,
): T[] {
  return rows.filter((row) => row.claim_ref === claimRef);
}

/**
 * sandboxd's `owner_addr` as warmpool carries it: host:port. A full http(s)
 * origin (`client_advertise`) is reduced to its host:port (the scheme's
 * default port when it names none; an IPv6 host keeps its brackets); a path,
 * query or credentials, another scheme, or anything that is not host:port
 * afterwards answers undefined, so it is never handed on raw (as an address,
 * or as a pod IP).
 */
export function normalizeOwnerAddr(raw: string | undefined): string | undefined {
  if (raw === undefined || raw === '') return undefined;
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(raw)) {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      return undefined;
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
    if (url.username !== '' || url.password !== '' || url.search !== '' || url.hash !== '') return undefined;
    if (url.pathname !== '/' && url.pathname !== '') return undefined;
    const port = url.port !== '' ? url.port : url.protocol === 'https:' ? '443' : '80';
    const hostPort = `${url.hostname}:${port}`;
    return ownerAddrSchema.safeParse(hostPort).success ? hostPort : undefined;
  }
  return ownerAddrSchema.safeParse(raw).success ? raw : undefined;
}
