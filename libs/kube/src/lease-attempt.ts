// One candidate's access to the election Lease, and its one try to acquire or
// renew it (client-go's tryAcquireOrRenew): every write carries the
// resourceVersion it read, so of two racing candidates one gets 409 and loses.
import type { ResourceClient } from './client.js';
import { isNotFound } from './errors.js';
import { firstLease, heldBy, microTime, renewedLease, type Lease, type LeaseRef } from './lease.js';
import { errorFields, type KubeLogger } from './logger.js';
import type { ObservedLease } from './observed-lease.js';

/** A candidate's seat at the election: the Lease, who we are, and what we saw of it. */
export interface LeaseSeat {
  leases: ResourceClient<Lease>;
  ref: LeaseRef;
  identity: string;
  /** How long others wait before taking an unrenewed lease; written into the Lease in whole seconds. */
  leaseDurationMs: number;
  observed: ObservedLease;
  /** Called synchronously with the attempt's start time as soon as a write of ours holds the Lease. */
  held(at: number): void;
  logger: KubeLogger;
  describe(): Record<string, unknown>;
}

export type Attempt = 'held' | 'other-holder' | 'failed';

/**
 * Acquires or renews the Lease once: the holder first writes over the version it last saw; otherwise the Lease is
 * read, created when missing, and taken when free, expired or ours.
 */
export async function tryAcquireOrRenew(seat: LeaseSeat, signal: AbortSignal): Promise<Attempt> {
  const now = performance.now();
  const stamp = microTime(new Date());
  const durationSeconds = Math.max(1, Math.ceil(seat.leaseDurationMs / 1000));
  const { observed } = seat;

  // Fast path: the leader writes over the version it last saw without reading first.
  const held = observed.lease;
  if (observed.holder === seat.identity && observed.validAt(now) && held) {
    try {
      observed.set(await seat.leases.replace(renewedLease(held, durationSeconds, stamp), { signal }));
      seat.held(now);
      return 'held';
    } catch (err) {
      seat.logger.debug('optimistic renew failed; reading the lease', { ...seat.describe(), ...errorFields(err) });
    }
  }

  let current: Lease;
  try {
    current = await seat.leases.get(seat.ref, { signal });
  } catch (err) {
    if (isNotFound(err)) return createLease(seat, now, durationSeconds, stamp, signal);
    seat.logger.warn('cannot read lease', { ...seat.describe(), ...errorFields(err) });
    return 'failed';
  }

  observed.noteRead(current);
  const holder = current.spec?.holderIdentity ?? '';
  if (holder !== '' && holder !== seat.identity && observed.validAt(now)) return 'other-holder';
  try {
    observed.set(await seat.leases.replace(heldBy(current, seat.identity, durationSeconds, stamp), { signal }));
    seat.held(now);
    return 'held';
  } catch (err) {
    // 409: another candidate wrote first; we see its lease on the next try.
    seat.logger.debug('lease update failed', { ...seat.describe(), ...errorFields(err) });
    return 'failed';
  }
}

async function createLease(
  seat: LeaseSeat,
  now: number,
  durationSeconds: number,
  stamp: string,
  signal: AbortSignal,
): Promise<Attempt> {
  try {
    seat.observed.set(
      await seat.leases.create(firstLease(seat.ref, seat.identity, durationSeconds, stamp), { signal }),
    );
    seat.held(now);
    return 'held';
  } catch (err) {
    seat.logger.debug('cannot create lease', { ...seat.describe(), ...errorFields(err) });
    return 'failed';
  }
}
