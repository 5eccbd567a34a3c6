// What the claim index stores and answers: reservations and records, the
// results of its calls, and the scopes (front doors) its keys are spaced by.
import {
  claimRecordSchema,
  triedNodeSchema,
  type BatchProgress,
  type ClaimRecord,
  type NodeClaimOwner,
  type TriedNode,
} from '@warmpool/api';
import { z } from 'zod';
import type { ClaimScope } from './claim-service.js';

const reservationSchema = z.object({ job: z.string(), tried: z.array(triedNodeSchema) });
export type Reservation = z.output<typeof reservationSchema>;

/** What reserve() found for a claimRef. */
export type ReserveResult =
  | { state: 'new' }
  | { state: 'served'; record: ClaimRecord }
  /** Reserved by this job already (a retried or stalled job): `tried` may hold a served claim. */
  | { state: 'mine'; reservation: Reservation }
  /** Reserved by another job. */
  | { state: 'busy'; reservation: Reservation };

export interface Reserved {
  states: ReserveResult[];
  /** Set while the index may have lost entries (epoch ms of the loss): 'new' then proves nothing. */
  recoveringSince: number | undefined;
}

/** A claimRef of a batch, in its scope, with the nodes it is about to be sent to. */
export interface ReserveEntry {
  scope: ClaimScope;
  claimRef: string;
  tried?: readonly TriedNode[];
}

/**
 * A batch job's progress and where BullMQ keeps the job (its hash): written
 * with the reservations, so a rerun of the job finds the nodes it asked.
 */
export interface JobProgress {
  key: string;
  value: BatchProgress;
}

/** What record() did with a served claim. */
export type RecordResult = { ok: true } | { ok: false; holder: ClaimRecord | Reservation | undefined };

/** The key space of a scope: `crd/<ns>`, `http/<ns>` or `fed/<peer>/<ns>`. */
export function scopePath(scope: ClaimScope): string {
  return scope.door === 'fed'
    ? `fed/${encodeURIComponent(scope.peer ?? '')}/${scope.namespace}`
    : `${scope.door}/${scope.namespace}`;
}

/** The scope a record belongs to. */
export function scopeOf(record: Pick<ClaimRecord, 'namespace' | 'door' | 'peer'>): ClaimScope {
  return {
    namespace: record.namespace,
    door: record.door,
    ...(record.peer !== undefined ? { peer: record.peer } : {}),
  };
}

/** The scope a node's claim_ref names (its front door, namespace and peer). */
export function scopeOfNodeClaim(owner: NodeClaimOwner): ClaimScope {
  return scopeOf({
    namespace: owner.namespace,
    door: owner.door,
    ...(owner.door === 'fed' ? { peer: owner.peer } : {}),
  });
}

export function parseValue(value: string): ClaimRecord | Reservation | undefined {
  let json: unknown;
  try {
    json = JSON.parse(value);
  } catch {
    return undefined;
  }
  const record = claimRecordSchema.safeParse(json);
  if (record.success) return record.data;
  const reservation = reservationSchema.safeParse(json);
  return reservation.success ? reservation.data : undefined;
}

/**
 * What the record script is given for a served claim: the record's JSON without its token, and the token's JSON. The
 * script writes the record (the token put back before the closing brace) and the claimed event (the record as given:
 * the events stream feeds views that never show a token), so the record travels to Redis once.
 */
export function recordParts(record: ClaimRecord): { shownJson: string; tokenJson: string } {
  const { token, ...shown } = record;
  return { shownJson: JSON.stringify(shown), tokenJson: JSON.stringify(token) };
}
