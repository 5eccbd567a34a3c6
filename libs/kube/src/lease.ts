// The coordination.k8s.io/v1 Lease record as leader election writes it: its
// type, and the records of each step (first holder, renewal, take-over,
// release), built over the Lease as read so that everything else on it (labels,
// annotations, fields we do not know) is written back unchanged.
import type { KubeObject, ObjectMeta, ResourceType } from '@warmpool/api';

export const LeaseType: ResourceType = {
  group: 'coordination.k8s.io',
  version: 'v1',
  plural: 'leases',
  kind: 'Lease',
  namespaced: true,
};

export interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  /** MicroTime (RFC 3339 with microseconds). */
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

export interface Lease extends KubeObject {
  metadata: ObjectMeta;
  spec?: LeaseSpec;
}

export interface LeaseRef {
  namespace: string;
  name: string;
}

/** The Lease a first candidate creates, holding it. */
export function firstLease(ref: LeaseRef, identity: string, durationSeconds: number, stamp: string): Lease {
  return {
    metadata: { namespace: ref.namespace, name: ref.name },
    spec: {
      holderIdentity: identity,
      leaseDurationSeconds: durationSeconds,
      acquireTime: stamp,
      renewTime: stamp,
      leaseTransitions: 0,
    },
  };
}

/** The holder's renewal of the Lease it holds. */
export function renewedLease(held: Lease, durationSeconds: number, stamp: string): Lease {
  return withSpec(held, { renewTime: stamp, leaseDurationSeconds: durationSeconds });
}

/**
 * `identity` holding the Lease as read: a renewal when it already held it (acquireTime and the transition count
 * kept), a transition otherwise.
 */
export function heldBy(current: Lease, identity: string, durationSeconds: number, stamp: string): Lease {
  const keeping = current.spec?.holderIdentity === identity;
  const transitions = current.spec?.leaseTransitions ?? 0;
  return withSpec(current, {
    holderIdentity: identity,
    leaseDurationSeconds: durationSeconds,
    renewTime: stamp,
    acquireTime: keeping ? (current.spec?.acquireTime ?? stamp) : stamp,
    leaseTransitions: keeping ? transitions : transitions + 1,
  });
}

/** The Lease released: no holder, and a one-second duration so a successor takes it at once. */
export function releasedLease(held: Lease, stamp: string): Lease {
  return withSpec(held, { holderIdentity: '', leaseDurationSeconds: 1, renewTime: stamp, acquireTime: stamp });
}

/** Kubernetes MicroTime wants exactly six fractional digits. */
export function microTime(date: Date): string {
  return date.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

function withSpec(lease: Lease, spec: LeaseSpec): Lease {
  return { ...lease, metadata: { ...lease.metadata }, spec: { ...lease.spec, ...spec } };
}
