import { randomUUID } from 'node:crypto';

/** A claimRef for a client that sent none: a DNS label, unique enough never to meet another (randomUUID draws from a cached pool of random bytes; randomBytes would ask the kernel per call). */
export function generateClaimRef(): string {
  return `c-${randomUUID().replaceAll('-', '').slice(0, 24)}`;
}
