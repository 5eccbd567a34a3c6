// The Sandbox API the control plane serves through the aggregation layer
// (agents.x-k8s.io/v1beta1, resource sandboxes): the create body it accepts
// and the meta.k8s.io shapes it answers (Status, Table, watch events). The
// Sandbox object itself is `Sandbox` in ./crds.ts.
import { z } from 'zod';
import { claimRefSchema, MAX_CLAIM_TTL_SECONDS } from './claims.js';
import type { Sandbox } from './crds.js';

/** `POST /apis/agents.x-k8s.io/v1beta1/namespaces/{ns}/sandboxes`: names the pool; the name is the claimRef. */
export const createSandboxBodySchema = z
  .object({
    apiVersion: z.literal('agents.x-k8s.io/v1beta1').optional(),
    kind: z.literal('Sandbox').optional(),
    metadata: z
      .object({
        name: claimRefSchema.optional(),
        generateName: z
          .string()
          .max(52)
          .regex(/^[a-z0-9]([-a-z0-9]*)?$/, 'must be the start of a DNS label')
          .optional(),
        namespace: z.string().optional(),
      })
      .loose(),
    spec: z
      .object({
        warmPoolRef: z.object({ name: z.string().min(1).max(253) }),
        ttlSeconds: z.number().int().min(1).max(MAX_CLAIM_TTL_SECONDS).optional(),
      })
      .loose(),
  })
  .loose();
export type CreateSandboxBody = z.output<typeof createSandboxBodySchema>;

/** meta.k8s.io/v1 Status: every error (and a delete's success) answers one. */
export interface KubeStatus {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: Record<string, never>;
  status: 'Success' | 'Failure';
  message?: string;
  reason?: string;
  details?: {
    name?: string;
    group?: string;
    kind?: string;
    retryAfterSeconds?: number;
    causes?: Array<{ reason?: string; message: string; field?: string }>;
  };
  code: number;
}

export interface SandboxObjectList {
  apiVersion: 'agents.x-k8s.io/v1beta1';
  kind: 'SandboxList';
  metadata: { resourceVersion: string };
  items: Sandbox[];
}

export interface TableColumn {
  name: string;
  type: string;
  format: string;
  description: string;
  priority: number;
}

/** meta.k8s.io/v1 Table, what `kubectl get` prints. */
export interface KubeTable {
  kind: 'Table';
  apiVersion: 'meta.k8s.io/v1';
  metadata: { resourceVersion: string };
  columnDefinitions: TableColumn[];
  rows: Array<{ cells: unknown[]; object: unknown }>;
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
