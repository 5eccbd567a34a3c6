// Every apiserver write the SandboxClaim controller makes, in one place so
// they are counted (writes per claim is a benchmark figure) and each guards
// against the claim having been deleted and recreated under the same name:
// metadata patches and every status write (Ready=True, Ready=False, Expired)
// carry the resourceVersion they were computed from, deletes a uid
// precondition.
import { SANDBOX_CLAIM_FINALIZER, SandboxClaimType, type SandboxClaim, type ShutdownPolicy } from '@warmpool/api';
import {
  ignoreNotFound,
  isAlreadyExists,
  isConflict,
  isNotFound,
  ResourceClient,
  retryOnConflict,
  type KubeConfig,
} from '@warmpool/kube';
import type { ClaimGrant } from '../../provisioning/claim-service.js';
import type { SandboxClaimMetrics } from './metrics.js';
import { isClaimSecret, sandboxSecret, secretData, secretMatches, SecretType, type KubeSecret } from './secret.js';
import { statusReplacement, type ClaimStatusPatch } from './status.js';

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

  /** Lets the apiserver finish deleting a claim that carries the finalizer of earlier versions. */
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

  /**
   * Writes the status `statusOf` computes, only onto this very claim: the write carries the resourceVersion it was
   * computed from and the claim's uid (both preconditions of the PUT), and after a 409 `statusOf` sees the claim as it is then, so
   * what another writer added meanwhile is kept. Every status write goes here: one without the version would land on a
   * namesake created after a delete (an Expired there leaves the user's new claim terminal). 'gone' when the claim was deleted, is being deleted or was
   * replaced by a namesake: nothing is written then.
   */
  async writeStatusOf(
    claim: SandboxClaim,
    statusOf: (claim: SandboxClaim) => ClaimStatusPatch,
  ): Promise<'written' | 'gone'> {
    try {
      return await retryOnConflict(async (attempt) => {
        const current =
          attempt === 1 ? claim : await this.#claims.get(refOf(claim), { signal: AbortSignal.timeout(TIMEOUT_MS) });
        if (current.metadata.uid !== claim.metadata.uid || current.metadata.deletionTimestamp !== undefined)
          return 'gone';
        this.#metrics.write('status');
        // A PUT carrying current's resourceVersion and uid: refused (409, so read again) unless the claim is still at it.
        await this.#claims.replaceStatus(statusReplacement(current, statusOf(current)), {
          fieldManager: FIELD_MANAGER,
          signal: AbortSignal.timeout(TIMEOUT_MS),
        });
        return 'written';
      });
    } catch (err) {
      if (isNotFound(err)) return 'gone';
      throw err;
    }
  }

  /**
   * Creates the claim's Secret, or brings an earlier one up to date. Throws SecretTakenError for a Secret that is not a
   * claim's.
   */
  async ensureSecret(claim: SandboxClaim, grant: ClaimGrant): Promise<void> {
    if ((await this.createSecret(claim, grant)) === 'exists') await this.updateSecret(claim, grant);
  }

  /** Creates the claim's Secret; 'exists' when a Secret of that name is already there, which is left untouched. */
  async createSecret(claim: SandboxClaim, grant: ClaimGrant): Promise<'created' | 'exists'> {
    try {
      this.#metrics.write('secret');
      await this.#secrets.create(sandboxSecret(claim, grant), {
        fieldManager: FIELD_MANAGER,
        signal: AbortSignal.timeout(TIMEOUT_MS),
      });
      return 'created';
    } catch (err) {
      if (isAlreadyExists(err)) return 'exists';
      throw err;
    }
  }

  /**
   * Brings the existing Secret of the claim's name up to date (an earlier attempt's, or an earlier claim's of that
   * name). Throws SecretTakenError for a Secret that is not a claim's.
   */
  async updateSecret(claim: SandboxClaim, grant: ClaimGrant): Promise<void> {
    const wanted = sandboxSecret(claim, grant);
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
    await this.deleteSecretOf(refOf(claim), claim.metadata.uid ?? '');
  }

  /**
   * Deletes the sandbox Secret `ref` if the claim of uid `owner` controls it; a user's Secret, or one of another claim
   * of that name, is left alone.
   */
  async deleteSecretOf(ref: { namespace: string; name: string }, owner: string): Promise<void> {
    try {
      const existing = await this.#secrets.get(ref, { signal: AbortSignal.timeout(TIMEOUT_MS) });
      if (!isClaimSecret(existing)) return;
      const controller = existing.metadata.ownerReferences?.find((r) => r.controller === true);
      if (controller?.uid !== owner) return;
      this.#metrics.write('delete');
      await this.#secrets.delete(ref, {
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
