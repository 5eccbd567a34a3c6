// The SandboxClaim controller's pure parts: whose claim it is, the Ready
// condition and its transitions, lifetimes and renewals, the token Secret, and the
// claim_refs the janitor reads.
import {
  formatNodeClaimRef,
  MAX_CLAIM_TTL_SECONDS,
  ownerDigest,
  parseNodeClaimRef,
  SANDBOX_CLAIM_FINALIZER,
  SANDBOX_ID_ANNOTATION,
  type SandboxClaim,
} from '@warmpool/api';
import { poolObject, templateObject } from '@warmpool/harness';
import { describe, expect, it } from 'vitest';
import { isExpired, renewalAt, shutdownAt, ttlSecondsFor } from '../../../src/controllers/sandboxclaims/lifetime.js';
import { isServed, ownershipOf, type ClaimCaches } from '../../../src/controllers/sandboxclaims/ownership.js';
import { isClaimSecret, sandboxSecret, secretMatches } from '../../../src/controllers/sandboxclaims/secret.js';
import {
  claimedStatus,
  failedStatus,
  ipOf,
  isRetryable,
  statusDiffers,
  statusReplacement,
} from '../../../src/controllers/sandboxclaims/status.js';
import type { ClaimGrant } from '../../../src/provisioning/claim-service.js';

const NOW = Date.parse('2030-01-01T00:00:00Z');

function claim(
  name: string,
  pool: string,
  extra: {
    annotations?: Record<string, string>;
    finalizers?: string[];
    shutdownTime?: string;
    status?: SandboxClaim['status'];
  } = {},
): SandboxClaim {
  return {
    metadata: {
      namespace: 'ns',
      name,
      uid: `uid-${name}`,
      generation: 1,
      resourceVersion: '5',
      ...(extra.annotations ? { annotations: extra.annotations } : {}),
      ...(extra.finalizers ? { finalizers: extra.finalizers } : {}),
    },
    spec: {
      warmPoolRef: { name: pool },
      ...(extra.shutdownTime ? { lifecycle: { shutdownTime: extra.shutdownTime } } : {}),
    },
    ...(extra.status ? { status: extra.status } : {}),
  };
}

const caches: ClaimCaches = {
  pool: (namespace, name) =>
    ({
      driven: poolObject(namespace, 'driven', 'ours', 3),
      upstream: poolObject(namespace, 'upstream', 'theirs', 3),
      orphan: poolObject(namespace, 'orphan', 'missing', 3),
    })[name],
  template: (namespace, name) =>
    ({
      ours: templateObject(namespace, 'ours', 'img:1'),
      theirs: templateObject(namespace, 'theirs', 'img:1', { optIn: false }),
    })[name],
};

const grant: ClaimGrant = {
  id: 'sb_1',
  token: 'secret-token',
  deadline: '2030-01-01T01:00:00Z',
  ownerAddr: '10.0.0.7:9000',
  node: 'node-0',
  namespace: 'ns',
  warmPool: 'driven',
  claimRef: 'c',
  tier: 'warm',
  door: 'crd',
  // The uid of claim('c', …).
  owner: 'uid-c',
};

describe('whose SandboxClaim it is', () => {
  it('takes claims of pools whose template opts in', () => {
    expect(ownershipOf(claim('c', 'driven'), caches)).toEqual({ kind: 'ours', pool: 'driven' });
  });

  it('leaves claims of undriven or missing pools to upstream when they are not addressed to warmpool', () => {
    expect(ownershipOf(claim('c', 'upstream'), caches)).toEqual({ kind: 'not-ours' });
    expect(ownershipOf(claim('c', 'nowhere'), caches)).toEqual({ kind: 'not-ours' });
    expect(ownershipOf(claim('c', 'orphan'), caches)).toEqual({ kind: 'not-ours' });
  });

  it('answers PoolNotFound / NotDriven to claims addressed to warmpool: its annotation, its finalizer or a sandbox it served', () => {
    const addressed = { annotations: { 'warmpool.dev/driver': 'sandboxd' } };
    expect(ownershipOf(claim('c', 'nowhere', addressed), caches)).toMatchObject({
      kind: 'unservable',
      reason: 'PoolNotFound',
    });
    expect(ownershipOf(claim('c', 'upstream', addressed), caches)).toMatchObject({
      kind: 'unservable',
      reason: 'NotDriven',
    });
    expect(ownershipOf(claim('c', 'orphan', addressed), caches)).toMatchObject({
      kind: 'unservable',
      reason: 'NotDriven',
    });
    expect(ownershipOf(claim('c', 'nowhere', { finalizers: [SANDBOX_CLAIM_FINALIZER] }), caches)).toMatchObject({
      kind: 'unservable',
      reason: 'PoolNotFound',
    });
    expect(
      ownershipOf(claim('c', 'upstream', { annotations: { [SANDBOX_ID_ANNOTATION]: 'sb_1' } }), caches),
    ).toMatchObject({ kind: 'unservable', reason: 'NotDriven' });
  });

  it("knows a claim warmpool served by its Ready=True Claimed status (or an earlier version's annotation), and keeps answering it after its pool went", () => {
    const served: SandboxClaim['status'] = {
      conditions: [
        {
          type: 'Ready',
          status: 'True',
          reason: 'Claimed',
          message: 'sandbox sb_1',
          lastTransitionTime: '2030-01-01T00:00:00Z',
        },
      ],
    };
    const other: SandboxClaim['status'] = {
      conditions: [
        {
          type: 'Ready',
          status: 'True',
          reason: 'DependenciesReady',
          message: '',
          lastTransitionTime: '2030-01-01T00:00:00Z',
        },
      ],
    };
    expect(isServed(claim('c', 'driven', { status: served }))).toBe(true);
    expect(isServed(claim('c', 'driven', { annotations: { [SANDBOX_ID_ANNOTATION]: 'sb_1' } }))).toBe(true);
    expect(isServed(claim('c', 'driven'))).toBe(false);
    expect(isServed(claim('c', 'upstream', { status: other })), "upstream's Ready is not warmpool's").toBe(false);
    expect(ownershipOf(claim('c', 'nowhere', { status: served }), caches)).toMatchObject({
      kind: 'unservable',
      reason: 'PoolNotFound',
    });
    expect(ownershipOf(claim('c', 'upstream', { status: other }), caches)).toEqual({ kind: 'not-ours' });
  });

  it('does not count another value of the driver annotation as addressed to warmpool', () => {
    expect(ownershipOf(claim('c', 'nowhere', { annotations: { 'warmpool.dev/driver': 'other' } }), caches)).toEqual({
      kind: 'not-ours',
    });
  });
});

describe('the Ready condition', () => {
  it("is True / Claimed with the sandbox named after the claim and the owner address's IP, never the token", () => {
    const status = claimedStatus(claim('c', 'driven'), grant, NOW);
    expect(status.sandbox).toEqual({ name: 'c', podIPs: ['10.0.0.7'] });
    expect(status.conditions).toEqual([
      expect.objectContaining({
        type: 'Ready',
        status: 'True',
        reason: 'Claimed',
        lastTransitionTime: '2030-01-01T00:00:00Z',
        observedGeneration: 1,
      }),
    ]);
    expect(JSON.stringify(status)).not.toContain('secret-token');
  });

  it('is False with the failure reason, and keeps its transition time while it stays False', () => {
    const first = failedStatus(claim('c', 'driven'), 'NoCapacity', 'no room', NOW);
    expect(first.conditions[0]).toMatchObject({
      status: 'False',
      reason: 'NoCapacity',
      lastTransitionTime: '2030-01-01T00:00:00Z',
    });
    expect(first.sandbox).toBeNull();
    const later = failedStatus(
      claim('c', 'driven', { status: { conditions: first.conditions } }),
      'NodeRefused',
      'refused',
      NOW + 60_000,
    );
    expect(later.conditions[0]).toMatchObject({ reason: 'NodeRefused', lastTransitionTime: '2030-01-01T00:00:00Z' });
    const ready = claimedStatus(
      claim('c', 'driven', { status: { conditions: later.conditions } }),
      grant,
      NOW + 120_000,
    );
    expect(ready.conditions[0]).toMatchObject({ status: 'True', lastTransitionTime: '2030-01-01T00:02:00Z' });
  });

  it("keeps other writers' conditions", () => {
    const status = failedStatus(
      claim('c', 'driven', { status: { conditions: [{ type: 'Other', status: 'True' }] } }),
      'Expired',
      'gone',
      NOW,
    );
    expect(status.conditions.map((c) => c.type)).toEqual(['Other', 'Ready']);
  });

  it('is rewritten only when what it says changes', () => {
    const written = claimedStatus(claim('c', 'driven'), grant, NOW);
    const current = claim('c', 'driven', {
      status: { conditions: written.conditions, sandbox: written.sandbox ?? {} },
    });
    expect(statusDiffers(current, claimedStatus(current, grant, NOW + 5_000))).toBe(false);
    expect(statusDiffers(current, failedStatus(current, 'Expired', 'gone', NOW))).toBe(true);
    const failed = failedStatus(claim('c', 'driven'), 'NoCapacity', 'no room', NOW);
    const failing = claim('c', 'driven', { status: { conditions: failed.conditions } });
    expect(statusDiffers(failing, failedStatus(failing, 'NoCapacity', 'no room', NOW + 1_000))).toBe(false);
    expect(statusDiffers(claim('c', 'driven'), failed)).toBe(true);
  });

  it('is written as the whole status, conditioned on the resourceVersion it was computed from', () => {
    const current = claim('c', 'driven', {
      annotations: { a: 'b' },
      status: {
        conditions: [{ type: 'Other', status: 'True' }],
        sandbox: { name: 'old', podIPs: ['10.9.9.9'] },
        ...({ upstreamField: 'kept' } as object),
      },
    });
    const put = statusReplacement(current, claimedStatus(current, grant, NOW));
    // Only what names the object, its uid and its version: on a PUT the apiserver checks the uid as a precondition (a
    // merge patch ignores it) and the status subresource keeps nothing else of the metadata.
    expect(put.metadata).toEqual({ namespace: 'ns', name: 'c', uid: 'uid-c', resourceVersion: '5' });
    expect(put.status).toEqual({
      upstreamField: 'kept',
      conditions: [{ type: 'Other', status: 'True' }, expect.objectContaining({ type: 'Ready', status: 'True' })],
      sandbox: { name: 'c', podIPs: ['10.0.0.7'] },
    });
    expect(JSON.stringify(put)).not.toContain('secret-token');
    // `sandbox: null` clears it.
    expect(statusReplacement(current, failedStatus(current, 'Expired', 'gone', NOW)).status).not.toHaveProperty(
      'sandbox',
    );
    // Never an unconditional write.
    const unversioned = { ...current, metadata: { ...current.metadata, resourceVersion: '' } };
    expect(() => statusReplacement(unversioned, claimedStatus(unversioned, grant, NOW))).toThrow(/no resourceVersion/);
  });

  it('retries only the failures that can clear up by themselves', () => {
    expect(['NoCapacity', 'NodeRefused', 'Unavailable', 'Timeout'].every((r) => isRetryable(r as never))).toBe(true);
    expect(['PoolNotFound', 'NotDriven', 'BadRequest', 'Expired'].some((r) => isRetryable(r as never))).toBe(false);
  });

  it('reads the IP out of IPv4, bracketed IPv6 and bare addresses', () => {
    expect(ipOf('10.1.2.3:7000')).toBe('10.1.2.3');
    expect(ipOf('[fd00::1]:7000')).toBe('fd00::1');
    expect(ipOf('fd00::1')).toBe('fd00::1');
    expect(ipOf('10.1.2.3')).toBe('10.1.2.3');
  });
});

describe("a claim's lifetime", () => {
  it('holds a renewable lease without a shutdownTime, renewed at half', () => {
    expect(ttlSecondsFor(undefined, NOW, 3_600)).toBe(3_600);
    expect(renewalAt(NOW + 3_600_000, undefined, NOW, 3_600)).toBe(NOW + 1_800_000);
  });

  it('runs to the shutdownTime, then is expired', () => {
    const shutdown = NOW + 90_500;
    expect(ttlSecondsFor(shutdown, NOW, 3_600)).toBe(91);
    expect(renewalAt(shutdown, shutdown, NOW, 3_600)).toBeUndefined();
    expect(isExpired(shutdown, NOW)).toBe(false);
    expect(isExpired(shutdown, shutdown)).toBe(true);
  });

  it("moves the deadline at once when the shutdownTime moves, in steps of the node's cap beyond it", () => {
    expect(renewalAt(NOW + 60_000, NOW + 600_000, NOW, 3_600)).toBe(NOW);
    const far = NOW + 3 * MAX_CLAIM_TTL_SECONDS * 1000;
    expect(ttlSecondsFor(far, NOW, 3_600)).toBe(MAX_CLAIM_TTL_SECONDS);
    const deadline = NOW + MAX_CLAIM_TTL_SECONDS * 1000;
    expect(renewalAt(deadline, far, NOW, 3_600)).toBe(deadline - (MAX_CLAIM_TTL_SECONDS * 1000) / 2);
  });

  it('reads shutdownTime, ignoring what is not a time', () => {
    expect(shutdownAt(claim('c', 'p', { shutdownTime: '2030-01-01T00:01:00Z' }))).toBe(NOW + 60_000);
    expect(shutdownAt(claim('c', 'p', { shutdownTime: 'soon' }))).toBeUndefined();
    expect(shutdownAt(claim('c', 'p'))).toBeUndefined();
  });
});

describe('the sandbox Secret', () => {
  it('is named after the claim, controlled by it, and carries id, token, ownerAddr, deadline and node', () => {
    const secret = sandboxSecret(claim('c', 'driven'), grant);
    expect(secret.metadata).toMatchObject({ name: 'c', namespace: 'ns' });
    expect(secret.metadata.ownerReferences).toEqual([
      {
        // The wire string upstream's SandboxClaim has, not libs/api's constant: garbage collection matches on it.
        apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
        kind: 'SandboxClaim',
        name: 'c',
        uid: 'uid-c',
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
    const decoded = Object.fromEntries(
      Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]),
    );
    expect(decoded).toEqual({
      id: 'sb_1',
      token: 'secret-token',
      ownerAddr: '10.0.0.7:9000',
      deadline: '2030-01-01T01:00:00Z',
      node: 'node-0',
    });
    expect(isClaimSecret(secret)).toBe(true);
    expect(secretMatches(secret, sandboxSecret(claim('c', 'driven'), grant))).toBe(true);
    expect(secretMatches(secret, sandboxSecret(claim('c', 'driven'), { ...grant, token: 'other' }))).toBe(false);
  });

  it("is told apart from a user's own Secret of the same name", () => {
    expect(isClaimSecret({ metadata: { name: 'c', namespace: 'ns' }, type: 'Opaque', data: {} })).toBe(false);
  });
});

describe('claim_refs the janitor reads', () => {
  const UID = '6f1c2a4e-0b7d-4c3e-9a51-2d8e7f6a9b10';
  const DIGEST = ownerDigest({ username: 'system:serviceaccount:team-a:ci', uid: 'u-1' }, 'pool:py');

  it('parses what warmpool writes, for each front door, and gives back the same string', () => {
    const refs = {
      crd: { door: 'crd', namespace: 'team-a', name: 'job-42', uid: UID },
      http: { door: 'http', namespace: 'team-a', claimRef: 'job.v1', pool: 'py', owner: DIGEST },
      fed: { door: 'fed', peer: 'eu west/1', namespace: 'team-a', claimRef: 'job-42', pool: 'py' },
    } as const;
    expect(formatNodeClaimRef(refs.crd)).toBe(`crd:team-a/job-42/${UID}`);
    expect(formatNodeClaimRef(refs.http)).toBe(`http:team-a/job.v1/py/${DIGEST}`);
    expect(formatNodeClaimRef(refs.fed)).toBe('fed:eu%20west%2F1/team-a/job-42/py');
    for (const owner of Object.values(refs)) expect(parseNodeClaimRef(formatNodeClaimRef(owner))).toEqual(owner);
  });

  it('tells HTTP owners apart by identity and by what they asked for', () => {
    expect(DIGEST).toMatch(/^[0-9a-f]{32}$/);
    expect(ownerDigest({ username: 'system:serviceaccount:team-a:ci', uid: 'u-1' }, 'pool:py')).toBe(DIGEST);
    expect(ownerDigest({ username: 'system:serviceaccount:team-a:ci', uid: 'u-2' }, 'pool:py')).not.toBe(DIGEST);
    expect(ownerDigest({ username: 'system:serviceaccount:team-b:ci', uid: 'u-1' }, 'pool:py')).not.toBe(DIGEST);
    expect(ownerDigest({ username: 'system:serviceaccount:team-a:ci', uid: 'u-1' }, 'env:py')).not.toBe(DIGEST);
  });

  it('parses nothing else: no claim_ref, the old <namespace>/<name> form, an unknown door, a malformed part', () => {
    expect(parseNodeClaimRef(undefined)).toBeUndefined();
    expect(parseNodeClaimRef('team-a/job-42')).toBeUndefined();
    expect(parseNodeClaimRef('no-slash')).toBeUndefined();
    expect(parseNodeClaimRef(`pod:team-a/job-42/${UID}`)).toBeUndefined();
    expect(parseNodeClaimRef('crd:team-a/job-42')).toBeUndefined();
    expect(parseNodeClaimRef(`crd:team-a/job-42/${UID}/x`)).toBeUndefined();
    expect(parseNodeClaimRef(`crd:Upper/x/${UID}`)).toBeUndefined();
    expect(parseNodeClaimRef('crd:team-a/job-42/not-a-uid')).toBeUndefined();
    expect(parseNodeClaimRef('http:team-a/job-42/py/not-a-digest')).toBeUndefined();
    expect(parseNodeClaimRef(`http:team-a/job-42/${DIGEST}`)).toBeUndefined();
    expect(parseNodeClaimRef('fed:/team-a/job-42/py')).toBeUndefined();
    expect(parseNodeClaimRef('fed:%E0%A4%A/team-a/job-42/py')).toBeUndefined();
  });
});
