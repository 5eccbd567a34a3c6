// What `make up` sets up for trying claims: a ServiceAccount `warmpool-demo`
// whose Role may create, read, renew and release sandbox claims in its
// namespace (the same RBAC gates SandboxClaims and the HTTP claim API) and
// read Sandboxes (what upstream's clients read, and what the sandbox router
// authorizes by), and a SandboxClaim example of the sample pool.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { apiVersionOf, SandboxClaimType, SandboxType } from '@warmpool/api';
import type { TestCluster } from './cluster.js';

export const DEMO_ACCOUNT = 'warmpool-demo';
export const EXAMPLE_CLAIM_NAME = 'demo';

/** ServiceAccount + Role + RoleBinding as one List, for `kubectl apply`. */
export function demoAccessManifest(namespace: string): string {
  const items = [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: DEMO_ACCOUNT, namespace } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: DEMO_ACCOUNT, namespace },
      rules: [
        {
          apiGroups: [SandboxClaimType.group],
          resources: [SandboxClaimType.plural],
          verbs: ['create', 'get', 'list', 'watch', 'update', 'delete'],
        },
        { apiGroups: [SandboxType.group], resources: [SandboxType.plural], verbs: ['get', 'list', 'watch'] },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: DEMO_ACCOUNT, namespace },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: DEMO_ACCOUNT },
      subjects: [{ kind: 'ServiceAccount', name: DEMO_ACCOUNT, namespace }],
    },
  ];
  return `${JSON.stringify({ apiVersion: 'v1', kind: 'List', items }, null, 2)}\n`;
}

/** A SandboxClaim of `pool`, commented, for the user to apply and edit. */
export function sandboxClaimExample(namespace: string, pool: string): string {
  return [
    '# A SandboxClaim warmpool serves from a warm pool: Ready=True within milliseconds,',
    "# the owner address's IP in status.sandbox.podIPs, and id/token/ownerAddr/deadline/node",
    '# in the Secret named after it.',
    '#   kubectl apply -f <this file>',
    `#   kubectl get sandboxclaim ${EXAMPLE_CLAIM_NAME} -n ${namespace}`,
    `#   kubectl get secret ${EXAMPLE_CLAIM_NAME} -n ${namespace} -o jsonpath='{.data.token}' | base64 -d`,
    `#   kubectl delete sandboxclaim ${EXAMPLE_CLAIM_NAME} -n ${namespace}    # releases the sandbox`,
    `apiVersion: ${apiVersionOf(SandboxClaimType)}`,
    `kind: ${SandboxClaimType.kind}`,
    'metadata:',
    `  name: ${EXAMPLE_CLAIM_NAME}`,
    `  namespace: ${namespace}`,
    'spec:',
    '  warmPoolRef:',
    `    name: ${pool}`,
    '  # Without a shutdownTime the sandbox lives as long as the claim.',
    '  # lifecycle:',
    '  #   shutdownTime: "2030-01-01T00:00:00Z"   # then Ready=False Expired',
    '  #   shutdownPolicy: Delete                 # and the claim is deleted',
    '',
  ].join('\n');
}

export interface DemoClaims {
  /** The SandboxClaim example. */
  examplePath: string;
  account: string;
}

/** Applies the demo ServiceAccount and its Role, and writes the SandboxClaim example into `dir`. */
export async function setUpDemoClaims(
  cluster: TestCluster,
  dir: string,
  namespace: string,
  pool: string,
): Promise<DemoClaims> {
  const accessPath = join(dir, 'demo-access.json');
  writeFileSync(accessPath, demoAccessManifest(namespace));
  const applied = await cluster.kubectl(['apply', '--server-side', '--field-manager=warmpool-local', '-f', accessPath]);
  if (applied.code !== 0) throw new Error(`applying ${accessPath} failed:\n${applied.stderr}${applied.stdout}`);
  const examplePath = join(dir, 'sandboxclaim.yaml');
  writeFileSync(examplePath, sandboxClaimExample(namespace, pool));
  return { examplePath, account: DEMO_ACCOUNT };
}
