// Upstream agent-sandbox's SandboxWarmPool CRD, as a cluster that runs its
// controller has it (crds.upstream.install=false): the chart's CRD with upstream's
// status schema, which declares no conditions and no observedGeneration
// (kubernetes-sigs/agent-sandbox k8s/crds/extensions.agents.x-k8s.io_sandboxwarmpools.yaml:
// availableReplicas, readyReplicas, replicas, selector).
import { fileURLToPath } from 'node:url';
import type { CustomResourceDefinition, JsonSchemaProps } from '@warmpool/api';
import type { TestCluster } from '@warmpool/harness';
import { kubectl } from './objects.js';

export const CHART_POOL_CRD = fileURLToPath(
  new URL('../../../../charts/warmpool/files/crds/extensions.agents.x-k8s.io_sandboxwarmpools.yaml', import.meta.url),
);

export const UPSTREAM_POOL_STATUS_SCHEMA: JsonSchemaProps = {
  type: 'object',
  properties: {
    availableReplicas: { type: 'integer' },
    readyReplicas: { type: 'integer' },
    replicas: { type: 'integer' },
    selector: { type: 'string' },
  },
};

/** The chart's CRD as JSON (kubectl reads the YAML: no YAML parser of our own). */
export async function chartPoolCrd(cluster: TestCluster): Promise<CustomResourceDefinition> {
  return JSON.parse(
    await kubectl(cluster, ['create', '--dry-run=client', '-o', 'json', '-f', CHART_POOL_CRD]),
  ) as CustomResourceDefinition;
}

export async function upstreamPoolCrd(cluster: TestCluster): Promise<CustomResourceDefinition> {
  const crd = await chartPoolCrd(cluster);
  for (const version of crd.spec?.versions ?? []) {
    const root = version.schema?.openAPIV3Schema;
    if (root?.properties !== undefined) root.properties['status'] = UPSTREAM_POOL_STATUS_SCHEMA;
  }
  return crd;
}
