// What `make up` prints once its stack is up: where everything is, and
// commands to try it from another shell (kubectl, curl, upstream's Python
// client through the router; for a federated stack, a claim that spills over).
import { join, relative, sep } from 'node:path';
import type { LocalStack, StackDescription } from './stack.js';

/** A path as the user would type it from here: relative when under the current directory. */
function shown(path: string): string {
  const rel = relative(process.cwd(), path);
  return rel !== '' && !rel.startsWith('..') && !rel.startsWith(sep) ? rel : path;
}

export function instructions(d: StackDescription, startupMs: number): string {
  const first = d.nodes[0];
  const token = `$(cat ${shown(d.tokenFile)})`;
  const kubeconfig = shown(d.kubeconfig) === d.kubeconfig ? d.kubeconfig : `$PWD/${shown(d.kubeconfig)}`;
  const lines = [
    '',
    `warmpool local stack is up (${(startupMs / 1000).toFixed(1)} s)`,
    '',
    `  kubeconfig     ${shown(d.kubeconfig)}  (admin of ${d.server})`,
    `  fleet token    ${shown(d.tokenFile)}`,
    `  control plane  ${d.controlPlaneUrl ?? 'not started'}  (/metrics, /readyz)`,
    `  claim API      ${d.claimsUrl ?? 'not started'}  (POST /v1/namespaces/{ns}/claims)`,
    `  Sandbox API    ${d.sandboxApiUrl ?? 'not started'}  (kubectl get sandboxes -A, through the aggregation layer)`,
    `  router         ${d.routerUrl ?? 'not started'}  (upstream's router API: POST /execute, /upload; GET /download|list|exists/{path})`,
    ...d.nodes.map(
      (n, i) =>
        `  ${i === 0 ? 'nodes        ' : '             '}  ${n.name}  agent ${n.agentAddress}  sandboxd ${n.sandboxdUrl.replace('http://', '')}`,
    ),
    `  logs           ${shown(d.logsDir)}/<name>.log  (etcd and kube-apiserver: ${d.clusterDataDir})`,
    ...(d.sample
      ? [
          `  sample         ${shown(d.sample.manifestPath)}: SandboxWarmPool ${d.sample.namespace}/${d.sample.name}, ${d.sample.replicas} × ${d.sample.image}`,
        ]
      : []),
    '',
    'In another shell, from this directory:',
    "  export PATH=$HOME/.cache/warmpool/bin:$PATH     # kubectl v1.37 (the machine's own kubectl is older)",
    `  export KUBECONFIG=${kubeconfig}`,
    '  kubectl get swp,nodeinventories',
    ...(d.sample ? [`  kubectl scale swp ${d.sample.name} --replicas=60`] : []),
    ...(d.claims
      ? [
          `  kubectl apply -f ${shown(d.claims.examplePath)}    # a SandboxClaim: Ready, its Secret holds the token`,
          '  kubectl get sandboxclaims',
        ]
      : []),
    ...(d.claims && d.sample && d.claimsUrl
      ? [
          `  # claim over HTTP as the ServiceAccount ${d.claims.account}: POST ${d.claimsUrl}/v1/namespaces/${d.namespace}/claims (in ${shown(join(d.dir, 'claims-url'))})`,
          `  curl -X POST -H "Authorization: Bearer $(kubectl create token ${d.claims.account})" -H 'content-type: application/json' -d '{"warmPool":"${d.sample.name}","ttlSeconds":60}' $(cat ${shown(join(d.dir, 'claims-url'))})`,
        ]
      : []),
  ];
  if (d.routerUrl !== undefined && d.sample && d.claims)
    lines.push(...routerInstructions(d.routerUrl, d.sample.name, d.claims.account));
  if (first) {
    lines.push(`  curl -H "Authorization: Bearer ${token}" ${first.agentUrl}/v1/info`);
    if (d.sample) {
      lines.push(
        `  curl -X POST -H "Authorization: Bearer ${token}" -d '{"template":"${d.sample.image}","ttl_seconds":60}' ${first.agentUrl}/v1/claim`,
      );
      lines.push(
        `  # release: curl -X POST -H "Authorization: Bearer <token from the claim>" ${first.agentUrl}/v1/sandboxes/<id>/release`,
      );
    }
  }
  lines.push('', 'Ctrl-C stops everything.', '');
  return lines.join('\n');
}

/** Upstream's Python client, unmodified, through the router: without a token it acts as the demo ServiceAccount. */
function routerInstructions(routerUrl: string, pool: string, account: string): string[] {
  const script = [
    'from k8s_agent_sandbox import SandboxClient',
    'from k8s_agent_sandbox.models import SandboxDirectConnectionConfig',
    `client = SandboxClient(connection_config=SandboxDirectConnectionConfig(api_url="${routerUrl}"))`,
    `sandbox = client.create_sandbox(warmpool="${pool}")`,
    'print(sandbox.commands.run("echo hello").stdout)',
    'sandbox.files.write("notes.txt", "round trip")',
    'print(sandbox.files.read("notes.txt"))',
    'client.delete_all()',
  ].join('; ');
  return [
    `  # upstream's Python client (pip install k8s-agent-sandbox) through the router, as ${account} (no token needed here):`,
    `  python3 -c '${script}'`,
    `  # with a token instead: extra_headers={"Authorization": "Bearer <kubectl create token ${account}>"}, or api_url="http://token:<token>@${routerUrl.replace('http://', '')}"`,
  ];
}

/**
 * How to claim from the sample SandboxEnv by hand: a ServiceAccount allowed
 * to claim in every cluster, and a curl against the first cluster's claim API
 * that spills to another once the first cluster's member pool is scaled to 0.
 */
export async function federationInstructions(stacks: readonly LocalStack[]): Promise<string> {
  const first = stacks[0]?.description;
  const sample = first?.sample;
  if (first === undefined || sample === undefined) return '';
  for (const stack of stacks) {
    for (const args of [
      ['create', 'serviceaccount', 'claimer', '-n', sample.namespace],
      [
        'create',
        'role',
        'claimer',
        '-n',
        sample.namespace,
        '--verb=create,get,update,delete',
        '--resource=sandboxclaims.extensions.agents.x-k8s.io',
      ],
      [
        'create',
        'rolebinding',
        'claimer',
        '-n',
        sample.namespace,
        '--role=claimer',
        `--serviceaccount=${sample.namespace}:claimer`,
      ],
    ]) {
      const result = await stack.cluster.kubectl(args);
      if (result.code !== 0 && !result.stderr.includes('AlreadyExists'))
        throw new Error(`kubectl ${args.join(' ')}: ${result.stderr}`);
    }
  }
  const kubeconfig = (d: StackDescription): string =>
    shown(d.kubeconfig) === d.kubeconfig ? d.kubeconfig : `$PWD/${shown(d.kubeconfig)}`;
  return [
    `federated: ${stacks.length} clusters (${stacks.map((s) => s.description.clusterId).join(', ')}) share capacity through the hub ${stacks[0]?.redis.url ?? ''} (database 0)`,
    '',
    'Claim from the SandboxEnv through the first cluster (ServiceAccount claimer may claim in every cluster):',
    `  TOKEN=$(KUBECONFIG=${kubeconfig(first)} kubectl create token claimer -n ${sample.namespace})`,
    `  curl -s -X POST -H "Authorization: Bearer $TOKEN" -d '{"env":"${sample.name}","ttlSeconds":60}' $(cat ${shown(join(first.dir, 'claims-url'))})`,
    `  # "cluster": "${first.clusterId ?? ''}". To see it spill to another cluster, empty this cluster's member pool and claim again:`,
    `  KUBECONFIG=${kubeconfig(first)} kubectl scale swp ${sample.name} -n ${sample.namespace} --replicas=0`,
    `  KUBECONFIG=${kubeconfig(first)} kubectl get senv ${sample.name} -n ${sample.namespace} -o yaml   # status.clusters: the other clusters' members`,
    '',
  ].join('\n');
}
