import { randomBytes } from 'node:crypto';

/** A claimRef for a client that sent none: a DNS label, unique enough never to meet another (96 random bits). */
export function generateClaimRef(): string {
  return `c-${randomBytes(12).toString('hex')}`;
}
