// What one SandboxClaim Ready write costs the kube-apiserver, as a JSON merge
// patch of /status (with the resourceVersion) and as a PUT of /status (the
// whole status, the resourceVersion in the body), side by side in alternating
// blocks on one real apiserver + etcd: the apiserver's CPU (Linux /proc) per
// write, nothing else running against it. The client authenticates with a
// ServiceAccount token, as the control plane does when deployed; a third
// variant sends the PUT with the admin client certificate instead, which the
// apiserver verifies on every request.
//   make build && node bench/claim-status-write.bench.ts
// APISERVER_PROF=<dir>: each measured block also runs inside a CPU profile of the apiserver (<dir>/<variant>-<n>.pb.gz).
// Bounded: BLOCKS (default 6) blocks of CLAIMS (default 200) writes per variant, 20 in flight (well under a minute).
import { SandboxClaimType, type Condition, type SandboxClaim } from '@warmpool/api';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { sleep, startCluster } from '@warmpool/harness';
import { ResourceClient } from '@warmpool/kube';
import { profileApiserver } from './lib/apiserver-pprof.ts';
import { cpuMsOf } from './lib/proc.ts';
import { clusterAdminServiceAccount } from './lib/service-account.ts';
import { machineNote, printTable, quantile } from './lib/table.ts';

const CLAIMS = Number(process.env['CLAIMS'] ?? 200);
const BLOCKS = Number(process.env['BLOCKS'] ?? 6);
const IN_FLIGHT = 20;
const NAMESPACE = 'default';

const profDir = process.env['APISERVER_PROF'];
if (profDir !== undefined) mkdirSync(profDir, { recursive: true });
const cluster = await startCluster({ name: 'bench-status-write', apiserverProfiling: profDir !== undefined });
const VARIANTS = ['merge patch', 'PUT', 'PUT, client certificate'] as const;
type Variant = (typeof VARIANTS)[number];
const perWrite: Record<Variant, number[]> = { 'merge patch': [], PUT: [], 'PUT, client certificate': [] };
try {
  const token = await clusterAdminServiceAccount(cluster, NAMESPACE, 'writer');
  const claims = new ResourceClient<SandboxClaim>(cluster.kubeConfigForToken(token), SandboxClaimType);
  const claimsByCert = new ResourceClient<SandboxClaim>(cluster.kubeConfig, SandboxClaimType);
  let current = await Promise.all(
    Array.from({ length: CLAIMS }, (_, i) =>
      claims.create({ metadata: { name: `c${i}`, namespace: NAMESPACE }, spec: { warmPoolRef: { name: 'pool' } } }),
    ),
  );
  let round = 0;
  const ready = (claim: SandboxClaim): Condition[] => [
    {
      type: 'Ready',
      status: 'True',
      reason: 'Claimed',
      // A new message each round, so every write changes the claim.
      message: `sandbox sb_${round} on node node-0 (warm) until 2030-01-01T01:00:00Z`,
      lastTransitionTime: '2030-01-01T00:00:00Z',
      observedGeneration: claim.metadata.generation ?? 1,
    },
  ];
  const write = async (variant: Variant, claim: SandboxClaim): Promise<SandboxClaim> => {
    const ref = { namespace: NAMESPACE, name: claim.metadata.name ?? '' };
    const sandbox = { name: ref.name, podIPs: ['10.0.0.7'] };
    if (variant === 'merge patch')
      return claims.patchStatus(
        ref,
        { conditions: ready(claim), sandbox },
        {
          fieldManager: 'bench',
          resourceVersion: claim.metadata.resourceVersion ?? '',
        },
      );
    return (variant === 'PUT' ? claims : claimsByCert).replaceStatus(
      {
        metadata: { ...ref, resourceVersion: claim.metadata.resourceVersion ?? '' },
        spec: claim.spec,
        status: { ...claim.status, conditions: ready(claim), sandbox },
      },
      { fieldManager: 'bench' },
    );
  };
  const block = async (variant: Variant, measured = true): Promise<number> => {
    round += 1;
    const file = join(profDir ?? '', `${variant.replace(/\W+/g, '-')}-${round}.pb.gz`);
    const profile =
      profDir !== undefined && measured ? profileApiserver(cluster.server, cluster.adminTls, 2, file) : undefined;
    if (profile !== undefined) await sleep(20);
    const pid = cluster.pids().apiserver;
    const before = cpuMsOf(pid);
    const next: SandboxClaim[] = new Array<SandboxClaim>(current.length);
    let i = 0;
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (i < current.length) {
          const k = i++;
          next[k] = await write(variant, current[k] as SandboxClaim);
        }
      }),
    );
    current = next;
    const cpu = (cpuMsOf(pid) - before) / current.length;
    await profile;
    return cpu;
  };
  for (const variant of VARIANTS) await block(variant, false);
  for (let b = 0; b < BLOCKS; b++)
    for (const variant of b % 2 === 0 ? VARIANTS : [...VARIANTS].reverse())
      perWrite[variant].push(await block(variant));
} finally {
  await cluster.stop();
}
const fmt = (xs: number[]): string =>
  `${quantile(xs, 0.5).toFixed(2)} ms (blocks: ${xs.map((x) => x.toFixed(2)).join(', ')})`;
printTable(
  `A SandboxClaim's Ready write, kube-apiserver CPU per write — ${machineNote()}`,
  [
    `${CLAIMS} SandboxClaims on a real kube-apiserver v1.37.2 + etcd; ${BLOCKS} alternating blocks per variant (after one warm-up each),`,
    `each block one status write to every claim, ${IN_FLIGHT} in flight, carrying the resourceVersion it was computed from; a ServiceAccount token (the third: the admin client certificate).`,
  ],
  [
    ['merge patch of /status, per write (median of blocks)', fmt(perWrite['merge patch']), 'info', '', ''],
    ['PUT of /status, per write (median of blocks)', fmt(perWrite.PUT), 'info', '', ''],
    ['PUT with the admin client certificate, per write', fmt(perWrite['PUT, client certificate']), 'info', '', ''],
    [
      'PUT / merge patch',
      (quantile(perWrite.PUT, 0.5) / quantile(perWrite['merge patch'], 0.5)).toFixed(2),
      'info',
      '',
      '',
    ],
  ],
);
process.exit(0);
