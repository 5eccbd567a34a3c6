// Giving the election Lease up on a clean close: the holder clears
// holderIdentity so a successor takes over at once instead of waiting for the
// lease to expire.
import { isConflict } from './errors.js';
import type { LeaseSeat } from './lease-attempt.js';
import { microTime, releasedLease } from './lease.js';
import { errorFields } from './logger.js';

/** Releases the Lease if we hold it; gives up (logged) after `timeoutMs` or a second conflict. */
export async function releaseLease(seat: LeaseSeat, timeoutMs: number): Promise<void> {
  const { observed } = seat;
  const held = observed.lease;
  if (observed.holder !== seat.identity || !held) return;
  const signal = AbortSignal.timeout(timeoutMs);
  for (let attempt = 1; attempt <= 2; attempt++) {
    const stamp = microTime(new Date());
    try {
      // The second attempt starts from a fresh read: an updateHeld() write may have moved the resourceVersion.
      const base = attempt === 1 ? held : await seat.leases.get(seat.ref, { signal });
      if (base.spec?.holderIdentity !== seat.identity) return;
      observed.set(await seat.leases.replace(releasedLease(base, stamp), { signal }));
      seat.logger.info('released lease', seat.describe());
      return;
    } catch (err) {
      if (attempt === 2 || !isConflict(err)) {
        seat.logger.warn('failed to release lease', { ...seat.describe(), ...errorFields(err) });
        return;
      }
    }
  }
}
