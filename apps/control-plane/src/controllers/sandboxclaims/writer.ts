// Every apiserver write the SandboxClaim controller makes, in one place so
// they are counted (writes per claim is a benchmark figure) and each guards
// against the claim having been deleted and recreated under the same name:
// metadata patches carry the resourceVersion they were computed from, deletes
// a uid precondition.
import type { KubeConfig } from '@kubernetes/client-node';
import {
  SANDBOX_CLAIM_FINALIZER,
  SANDBOX_ID_ANNOTATION,
  SandboxClaimType,
  type SandboxClaim,
  type ShutdownPolicy,
} from '@warmpool/api';
import {
  ignoreNotFound,
  isAlreadyExists,
  isConflict,
  isNotFound,
  ResourceClient,
  retryOnConflict,
} from '@warmpool/kube';
import type { ClaimGrant } from '../../provisioning/claim-service.js';
import type { SandboxClaimMetrics } from './metrics.js';
import { isClaimSecret, sandboxSecret, secretData, secretMatches, SecretType, type KubeSecret } from './secret.js';
import type { ClaimStatusPatch } from './status.js';

/**
 * A Secret of the claim's name exists and is not a sandbox Secret of a claim: it is the user's, and stays untouched.
 */
export class SecretTakenError extends Error {
  override name = 'SecretTakenError';
}

export const FIELD_MANAGER = 'warmpool-sandboxclaims';

const TIMEOUT_MS = 10_000;

function refOf(claim: SandboxClaim): { namespace: string; name: string } {
  return { namespace: claim.metadata.namespace ?? '', name: claim.metadata.name ?? '' };
}

export class ClaimWriter {
  readonly #claims: ResourceClient<SandboxClaim>;
  readonly #secrets: ResourceClient<KubeSecret>;
  readonly #metrics: SandboxClaimMetrics;

  constructor(kubeConfig: KubeConfig, metrics: SandboxClaimMetrics) {
    this.#claims = new ResourceClient<SandboxClaim>(kubeConfig, SandboxClaimType);
    this.#secrets = new ResourceClient<KubeSecret>(kubeConfig, SecretType);
    this.#metrics = metrics;
  }

  /**
   * Adds the finalizer and the sandbox-id annotation in one write, once the
   * sandbox is claimed. 'gone' when the claim was deleted, is being deleted
   * (no finalizer can be added then) or was replaced by a namesake: the caller
   * releases the sandbox.
   */
  async markServed(claim: SandboxClaim, sandboxId: string): Promise<'marked' | 'gone'> {
    try {
      return await retryOnConflict(async (attempt) => {
        const current =
          attempt === 1 ? claim : await this.#claims.get(refOf(claim), { signal: AbortSignal.timeout(TIMEOUT_MS) });
        if (current.metadata.uid !== claim.metadata.uid || current.metadata.deletionTimestamp !== undefined)
          return 'gone';
        const finalizers = current.metadata.finalizers ?? [];
        if (
          finalizers.includes(SANDBOX_CLAIM_FINALIZER) &&
          current.metadata.annotations?.[SANDBOX_ID_ANNOTATION] === sandboxId
        )
          return 'marked';
        this.#metrics.write('metadata');
        await this.#claims.patch(
          refOf(claim),
          {
            metadata: {
              resourceVersion: current.metadata.resourceVersion,
              finalizers: finalizers.includes(SANDBOX_CLAIM_FINALIZER)
                ? finalizers
                : [...finalizers, SANDBOX_CLAIM_FINALIZER],
              annotations: { [SANDBOX_ID_ANNOTATION]: sandboxId },
            },
          },
          { fieldManager: FIELD_MANAGER, signal: AbortSignal.timeout(TIMEOUT_MS) },
        );
        return 'marked';
      });
    } catch (err) {
      if (isNotFound(err)) return 'gone';
      throw err;
    }
  }

  /** Undoes markServed when the sandbox had to be handed back before the claim was answered. */
  async unmarkServed(claim: SandboxClaim): Promise<void> {
    await ignoreNotFound(
      retryOnConflict(async () => {
        const current = await this.#claims.get(refOf(claim), { signal: AbortSignal.timeout(TIMEOUT_MS) });
        if (current.metadata.uid !== claim.metadata.uid) return;
        this.#metrics.write('metadata');
        await this.#claims.patch(
          refOf(claim),
          {
            metadata: {
              resourceVersion: current.metadata.resourceVersion,
              finalizers: (current.metadata.finalizers ?? []).filter((f) => f !== SANDBOX_CLAIM_FINALIZER),
              annotations: { [SANDBOX_ID_ANNOTATION]: null },
            },
          },
          { fieldManager: FIELD_MANAGER, signal: AbortSignal.timeout(TIMEOUT_MS) },
        );
      }),
    );
  }

  /** Lets the apiserver finish deleting the claim. */
  async removeFinalizer(claim: SandboxClaim): Promise<void> {
    await ignoreNotFound(
      retryOnConflict(async (attempt) => {
        const current =
          attempt === 1 ? claim : await this.#claims.get(refOf(claim), { signal: AbortSignal.timeout(TIMEOUT_MS) });
        if (current.metadata.uid !== claim.metadata.uid) return;
        const finalizers = current.metadata.finalizers ?? [];
        if (!finalizers.includes(SANDBOX_CLAIM_FINALIZER)) return;
        this.#metrics.write('metadata');
        await this.#claims.patch(
          refOf(claim),
          {
            metadata: {
              resourceVersion: current.metadata.resourceVersion,
              finalizers: finalizers.filter((f) => f !== SANDBOX_CLAIM_FINALIZER),
            },
          },
          { fieldManager: FIELD_MANAGER, signal: AbortSignal.timeout(TIMEOUT_MS) },
        );
      }),
    );
  }

  async writeStatus(claim: SandboxClaim, status: ClaimStatusPatch): Promise<void> {
    this.#metrics.write('status');
    // `sandbox: null` removes it (JSON merge patch).
    await ignoreNotFound(
      this.#claims.patchStatus(refOf(claim), status as unknown as Partial<NonNullable<SandboxClaim['status']>>, {
        fieldManager: FIELD_MANAGER,
        signal: AbortSignal.timeout(TIMEOUT_MS),
      }),
    );
  }

  /**
   * Creates the claim's Secret, or brings an earlier one up to date. Throws SecretTakenError for a Secret that is not a
   * claim's.
   */
  async ensureSecret(claim: SandboxClaim, grant: ClaimGrant): Promise<void> {
    const wanted = sandboxSecret(claim, grant);
    try {
      this.#metrics.write('secret');
      await this.#secrets.create(wanted, { fieldManager: FIELD_MANAGER, signal: AbortSignal.timeout(TIMEOUT_MS) });
      return;
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
    }
    await retryOnConflict(async () => {
      const existing = await this.#secrets.get(refOf(claim), { signal: AbortSignal.timeout(TIMEOUT_MS) });
      if (!isClaimSecret(existing))
        throw new SecretTakenError(
          `Secret ${refOf(claim).namespace}/${refOf(claim).name} exists and is not a sandbox Secret of a SandboxClaim: warmpool does not overwrite it`,
        );
      if (secretMatches(existing, wanted)) return;
      this.#metrics.write('secret');
      await this.#secrets.replace(
        { ...wanted, metadata: { ...wanted.metadata, resourceVersion: existing.metadata.resourceVersion } },
        { fieldManager: FIELD_MANAGER, signal: AbortSignal.timeout(TIMEOUT_MS) },
      );
    });
  }

  /** After a renewal: the Secret's `deadline` follows the lease. A missing or foreign Secret is left as it is. */
  async updateSecretDeadline(claim: SandboxClaim, grant: Omit<ClaimGrant, 'token'>, deadline: string): Promise<void> {
    await ignoreNotFound(
      retryOnConflict(async () => {
        const existing = await this.#secrets.get(refOf(claim), { signal: AbortSignal.timeout(TIMEOUT_MS) });
        if (!isClaimSecret(existing)) return;
        const token = Buffer.from(existing.data?.['token'] ?? '', 'base64').toString('utf8');
        const data = secretData({ ...grant, token, deadline });
        if (JSON.stringify(existing.data) === JSON.stringify(data)) return;
        this.#metrics.write('secret');
        await this.#secrets.replace(
          { ...existing, data },
          { fieldManager: FIELD_MANAGER, signal: AbortSignal.timeout(TIMEOUT_MS) },
        );
      }),
    );
  }

  /**
   * Deletes the claim's Secret when its sandbox is gone, without waiting for
   * the garbage collector: the token must not outlive the sandbox's claim.
   */
  async deleteSecret(claim: SandboxClaim): Promise<void> {
    try {
      const existing = await this.#secrets.get(refOf(claim), { signal: AbortSignal.timeout(TIMEOUT_MS) });
      if (!isClaimSecret(existing)) return;
      const owner = existing.metadata.ownerReferences?.find((ref) => ref.controller === true);
      if (owner?.uid !== claim.metadata.uid) return;
      this.#metrics.write('delete');
      await this.#secrets.delete(refOf(claim), {
        preconditions: { uid: existing.metadata.uid ?? '' },
        signal: AbortSignal.timeout(TIMEOUT_MS),
      });
    } catch (err) {
      if (!isNotFound(err) && !isConflict(err)) throw err;
    }
  }

  /**
   * The cache says the claim `namespace/name` is gone: deletes the sandbox
   * Secret of that name unless the apiserver still has the claim that controls
   * it (the cache may lag). A user's own Secret, or one of a live namesake, is
   * left alone; the delete carries the Secret's uid, so a Secret written in
   * between is never the one deleted.
   */
  async deleteOrphanSecret(namespace: string, name: string): Promise<void> {
    try {
      const existing = await this.#secrets.get({ namespace, name }, { signal: AbortSignal.timeout(TIMEOUT_MS) });
      if (!isClaimSecret(existing)) return;
      const owner = existing.metadata.ownerReferences?.find((ref) => ref.controller === true);
      const claim = await ignoreNotFound(
        this.#claims.get({ namespace, name }, { signal: AbortSignal.timeout(TIMEOUT_MS) }),
      );
      if (claim !== undefined && claim.metadata.uid === owner?.uid) return;
      this.#metrics.write('delete');
      await this.#secrets.delete(
        { namespace, name },
        { preconditions: { uid: existing.metadata.uid ?? '' }, signal: AbortSignal.timeout(TIMEOUT_MS) },
      );
    } catch (err) {
      if (!isNotFound(err) && !isConflict(err)) throw err;
    }
  }

  /** shutdownPolicy Delete / DeleteForeground after expiry. */
  async deleteClaim(claim: SandboxClaim, policy: Exclude<ShutdownPolicy, 'Retain'>): Promise<void> {
    this.#metrics.write('delete');
    try {
      await this.#claims.delete(refOf(claim), {
        propagationPolicy: policy === 'DeleteForeground' ? 'Foreground' : 'Background',
        preconditions: { uid: claim.metadata.uid ?? '' },
        signal: AbortSignal.timeout(TIMEOUT_MS),
      });
    } catch (err) {
      if (!isNotFound(err) && !isConflict(err)) throw err;
    }
  }
}
