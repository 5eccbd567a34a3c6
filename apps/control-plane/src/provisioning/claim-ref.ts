import { randomUUID } from 'node:crypto';

/** A claimRef for a client that sent none: a DNS label, unique enough never to meet another. */
export function generateClaimRef(): string {
  return `c-${randomUUID().replaceAll('-', '').slice(0, 24)}`;
}
