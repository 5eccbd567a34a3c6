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
import { OWNER_ADDR_MAX_LENGTH, ownerAddrSchema } from './owner-addr.js';
import {
  claimGrantSchema,
  claimRedirectSchema,
  sandboxdRowSchema,
  type ClaimGrant,
  type ClaimRedirect,
  type SandboxdRow,
} from './sandboxd.js';

// The shapes themselves are written once, in sandboxd.ts; these names say how warmpool reads them (extra fields
// pass, only what warmpool depends on is required).

/** A claim sandboxd served (sandboxd.ts claimGrantSchema). */
export const tolerantClaimResponseSchema = claimGrantSchema;
export type TolerantClaimResponse = ClaimGrant;

/**
 * A claim sandboxd did not serve but points elsewhere (sandboxd.ts claimRedirectSchema). warmpool places claims
 * itself and sends `no_redirect: true`, so this should not come back; when it does, it is a refusal with
 * candidates, never a served claim.
 */
export const redirectAnswerSchema = claimRedirectSchema;
export type RedirectAnswer = ClaimRedirect;

/** One row of `GET /v1/sandboxes` (sandboxd.ts sandboxdRowSchema): `claimed_at` optional, anything else passes. */
export const tolerantSandboxRowSchema = sandboxdRowSchema;
export type TolerantSandboxRow = SandboxdRow;

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
  // A node's answer is not size-capped: a longer raw address is normalized each time, never kept.
  if (raw.length > OWNER_ADDR_KEPT_LENGTH) return ownerAddrOf(raw);
  // Every grant of a node names the same address, so answers are kept (the function is pure; the memo is bounded
  // in entries and in each entry's length).
  const known = ownerAddrs.get(raw);
  if (known !== undefined) return known === '' ? undefined : known;
  const normalized = ownerAddrOf(raw);
  if (ownerAddrs.size >= OWNER_ADDRS_KEPT) ownerAddrs.clear();
  ownerAddrs.set(raw, normalized ?? '');
  return normalized;
}

/** Raw owner address → normalized ('' for none): a fleet's worth of nodes. */
const ownerAddrs = new Map<string, string>();
const OWNER_ADDRS_KEPT = 4_096;
/** The longest raw address kept: a host:port at its limit, written as an origin with room to spare. */
const OWNER_ADDR_KEPT_LENGTH = 2 * OWNER_ADDR_MAX_LENGTH;

function ownerAddrOf(raw: string): string | undefined {
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
