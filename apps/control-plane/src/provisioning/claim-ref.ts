import { randomBytes } from 'node:crypto';

/** Random bytes per generated claimRef: 96 bits, so no two ever meet, and nobody can guess the next one to take it. */
const REF_BYTES = 12;
/** Drawn from the kernel this many refs at a time: one call per ref would cost a syscall each. */
const POOL_REFS = 256;

let pool = Buffer.alloc(0);
let offset = 0;

/** A claimRef for a client that sent none: a DNS label, `c-` and 24 hex digits, each drawn at random. */
export function generateClaimRef(): string {
  if (offset + REF_BYTES > pool.length) {
    pool = randomBytes(REF_BYTES * POOL_REFS);
    offset = 0;
  }
  const ref = `c-${pool.toString('hex', offset, offset + REF_BYTES)}`;
  offset += REF_BYTES;
  return ref;
}
