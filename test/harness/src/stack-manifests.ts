// The objects the local stack applies: a Node per simulated node (so each
// NodeInventory can point its owner reference at it) and a sample template +
// warm pool that warmpool drives.
import type { V1Node } from '@kubernetes/client-node';
import type { SandboxEnv, SandboxTemplate, SandboxWarmPool } from '@warmpool/api';
import { listManifest, sandboxEnv, template, warmPool, type Named } from './objects.js';

export const SAMPLE_IMAGE = 'python:3.13-slim';
export const SAMPLE_NAME = 'python';
export const SAMPLE_REPLICAS = 30;

export interface SampleOptions {
  namespace: string;
  name?: string;
  image?: string;
  replicas?: number;
}

/** A SandboxTemplate that opts in to warmpool (`warmpool.dev/driver: sandboxd`). */
export function sampleTemplate(options: SampleOptions): Named<SandboxTemplate> {
  return template(options.namespace, options.name ?? SAMPLE_NAME, options.image ?? SAMPLE_IMAGE);
}

export function samplePool(options: SampleOptions): Named<SandboxWarmPool> {
  const name = options.name ?? SAMPLE_NAME;
  return warmPool(options.namespace, name, name, options.replicas ?? SAMPLE_REPLICAS);
}

/** A SandboxEnv of the same name whose one member is the sample pool, in the scaling group `default`. */
export function sampleEnv(options: SampleOptions): Named<SandboxEnv> {
  const name = options.name ?? SAMPLE_NAME;
  return sandboxEnv(options.namespace, name, { [name]: 'default' });
}

/**
 * The sample as one YAML-compatible JSON list, for `kubectl apply -f -` and for the user to edit; with `env`, its
 * SandboxEnv too.
 */
export function sampleManifest(options: SampleOptions, extra: { env?: boolean } = {}): string {
  return listManifest(
    sampleTemplate(options),
    samplePool(options),
    ...(extra.env === true ? [sampleEnv(options)] : []),
  );
}

/**
 * A bare core/v1 Node. Nothing here runs pods (no kubelet, no scheduler); the
 * object exists so NodeInventories have an owner, as on a real cluster, and
 * carries `address` (a loopback IP) in status.addresses as a kubelet would
 * report its InternalIP: the control plane pushes to an agent only at an
 * address of its Node.
 */
export function nodeObject(name: string, address: string): V1Node {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      labels: { 'kubernetes.io/hostname': name, 'warmpool.dev/simulated': 'true', 'warmpool.dev/loopback': address },
    },
    spec: {},
    status: {
      addresses: [
        { type: 'InternalIP', address },
        { type: 'Hostname', address: name },
      ],
    },
  };
}
