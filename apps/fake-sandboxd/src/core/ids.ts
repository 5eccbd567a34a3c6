// Sandbox ids are public handles; tokens are bearer secrets, so both come from
// the CSPRNG and tokens carry 256 bits.
import { randomBytes } from 'node:crypto';

export function newSandboxId(): string {
  return `sb_${randomBytes(12).toString('base64url')}`;
}

export function newSandboxToken(): string {
  return randomBytes(32).toString('base64url');
}
