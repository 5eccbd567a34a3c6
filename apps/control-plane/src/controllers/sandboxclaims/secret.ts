// The Secret that hands a SandboxClaim's sandbox to its user: named after the
// claim, controlled by it, keys `id`, `token`, `ownerAddr`, `deadline`,
// `node`. The controller deletes it itself with its claim (the owner
// reference only lets a garbage collector, where one runs, do the same). The
// token lives nowhere else in the API: not in the claim's status, not in an
// annotation.
import {
  apiVersionOf,
  SANDBOX_SECRET_TYPE,
  SandboxClaimType,
  type KubeObject,
  type ObjectMeta,
  type ResourceType,
  type SandboxClaim,
  type SandboxSecretKey,
} from '@warmpool/api';
import type { ClaimGrant } from '../../provisioning/claim-service.js';

export const SecretType: ResourceType = {
  group: '',
  version: 'v1',
  plural: 'secrets',
  kind: 'Secret',
  namespaced: true,
};
export { SANDBOX_SECRET_TYPE };
/** Label on the Secret naming its claim. */
export const CLAIM_LABEL = 'warmpool.dev/sandboxclaim';

export interface KubeSecret extends KubeObject {
  metadata: ObjectMeta;
  type?: string;
  /** base64 values. */
  data?: Record<string, string>;
}

export function secretData(
  grant: Pick<ClaimGrant, 'id' | 'token' | 'ownerAddr' | 'deadline' | 'node'>,
): Record<SandboxSecretKey, string> {
  const plain: Record<SandboxSecretKey, string> = {
    id: grant.id,
    token: grant.token,
    ownerAddr: grant.ownerAddr,
    deadline: grant.deadline,
    node: grant.node,
  };
  const data = {} as Record<SandboxSecretKey, string>;
  for (const [key, value] of Object.entries(plain) as Array<[SandboxSecretKey, string]>)
    data[key] = Buffer.from(value, 'utf8').toString('base64');
  return data;
}

export function sandboxSecret(claim: SandboxClaim, grant: ClaimGrant): KubeSecret {
  const name = claim.metadata.name ?? '';
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name,
      namespace: claim.metadata.namespace ?? '',
      labels: { [CLAIM_LABEL]: name },
      ownerReferences: [
        {
          apiVersion: apiVersionOf(SandboxClaimType),
          kind: SandboxClaimType.kind,
          name,
          uid: claim.metadata.uid ?? '',
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    type: SANDBOX_SECRET_TYPE,
    data: secretData(grant),
  };
}

/**
 * Whether the existing Secret is this claim's (controlled by it, or by an earlier claim of the same name) rather than
 * the user's own.
 */
export function isClaimSecret(secret: KubeSecret): boolean {
  return (
    secret.type === SANDBOX_SECRET_TYPE &&
    (secret.metadata.ownerReferences ?? []).some(
      (ref) => ref.controller === true && ref.kind === SandboxClaimType.kind && ref.name === secret.metadata.name,
    )
  );
}

/** Whether the Secret already says what `wanted` says (no write needed). */
export function secretMatches(secret: KubeSecret, wanted: KubeSecret): boolean {
  const owner = (s: KubeSecret): string | undefined =>
    s.metadata.ownerReferences?.find((ref) => ref.controller === true)?.uid;
  return owner(secret) === owner(wanted) && JSON.stringify(sorted(secret.data)) === JSON.stringify(sorted(wanted.data));
}

function sorted(data: Record<string, string> | undefined): Array<[string, string]> {
  return Object.entries(data ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}
