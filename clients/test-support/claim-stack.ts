// What the clients' specs share: the local stack (real kube-apiserver, Redis,
// control plane, node agents over fake-sandboxd) with two pools — `python`,
// warm, and `slow`, kept empty so that each claim boots cold for seconds —, a
// ServiceAccount allowed to claim and its token in a file, and a way to kill
// the control plane (the claim API) mid-claim and start it again.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SandboxWarmPool } from '@warmpool/api';
import { eventually, ManagedChild, sampleManifest, startStack, type LocalStack } from '@warmpool/harness';

/** A cold boot lasts this long on every node (a refill boot is quick): time enough to kill the claim API meanwhile. */
export const COLD_BOOT_MS = 4_000;

export interface ClaimStack {
  readonly stack: LocalStack;
  readonly namespace: string;
  /** The claim API origin. */
  readonly claimsUrl: string;
  /** A token of the ServiceAccount allowed to claim in `namespace`. */
  readonly tokenFile: string;
  readonly dir: string;
  /** SIGKILLs the control plane (the claim API with it), and returns how to start it again as it was. */
  killControlPlane(): Promise<() => Promise<void>>;
  /** How many sandboxes the nodes hold under `claimRef` (an HTTP claim's). */
  sandboxesOnNodes(claimRef: string): Promise<number>;
  close(): Promise<void>;
}

export async function startClaimStack(loopbackPrefix: string): Promise<ClaimStack> {
  const dir = mkdtempSync(join(tmpdir(), 'warmpool-client-'));
  const restarted: ManagedChild[] = [];
  let stack: LocalStack | undefined;
  const close = async (): Promise<void> => {
    for (const child of restarted) await child.stop();
    await stack?.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    stack = await startStack({
      dir,
      nodes: 2,
      loopbackPrefix,
      controlPlanePort: 0,
      claimsPort: 0,
      interval: '1s',
      sample: { replicas: 4 },
      sandboxdArgs: [`--cold-boot-ms=${COLD_BOOT_MS}`, '--boot-ms=20ms'],
    });
    const started = stack;
    const { namespace } = started.description;
    const apply = await started.cluster.kubectl(['apply', '-f', '-'], {
      input: sampleManifest({ namespace, name: 'slow', image: 'slow:1', replicas: 0 }),
    });
    if (apply.code !== 0) throw new Error(`applying the slow pool: ${apply.stderr}`);
    await eventually(
      async () => {
        const got = await started.cluster.kubectl(['get', 'swp', 'python', '-n', namespace, '-o', 'json']);
        return got.code === 0 && ((JSON.parse(got.stdout) as SandboxWarmPool).status?.readyReplicas ?? 0) >= 4;
      },
      { timeoutMs: 60_000, what: 'the python pool ready' },
    );
    // The ServiceAccount the stack makes for trying claims (its Role: every verb on sandboxclaims in the namespace).
    const account = started.description.claims?.account;
    if (account === undefined) throw new Error('the stack made no claimer account');
    const token = await started.cluster.kubectl(['create', 'token', account, '-n', namespace, '--duration=1h']);
    if (token.code !== 0) throw new Error(`kubectl create token: ${token.stderr}`);
    const tokenFile = join(dir, 'claimer-token');
    writeFileSync(tokenFile, token.stdout.trim());
    const claimsUrl = new URL(started.description.claimsUrl as string).origin;

    return {
      stack: started,
      namespace,
      claimsUrl,
      tokenFile,
      dir,
      close,
      async killControlPlane() {
        const pid = started.description.pids['control-plane'];
        if (pid === undefined) throw new Error('the stack has no control plane');
        const target = restarted.at(-1)?.pid ?? pid;
        const argv = readFileSync(`/proc/${target}/cmdline`, 'utf8').split('\0').filter(Boolean);
        const env = Object.fromEntries(
          readFileSync(`/proc/${target}/environ`, 'utf8')
            .split('\0')
            .filter(Boolean)
            .map((entry) => [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)]),
        );
        process.kill(-target, 'SIGKILL');
        return async () => {
          const child = new ManagedChild({
            name: 'control-plane (restarted)',
            command: argv[0] as string,
            args: argv.slice(1),
            logFile: join(dir, 'logs', `control-plane-restarted-${restarted.length + 1}.log`),
            env,
          });
          restarted.push(child);
          await eventually(
            async () => {
              const res = await fetch(`${claimsUrl}/openapi.json`).catch(() => undefined);
              return res?.status === 200;
            },
            {
              timeoutMs: 60_000,
              what: () => `the restarted claim API; log:\n${child.logTail()}`,
              abort: () => (child.running ? undefined : `the restarted control plane exited:\n${child.logTail()}`),
            },
          );
        };
      },
      async sandboxesOnNodes(claimRef) {
        let count = 0;
        for (const node of started.description.nodes) {
          const res = await fetch(`${node.agentUrl}/v1/sandboxes`, {
            headers: { authorization: `Bearer ${started.token}` },
          });
          const body = (await res.json()) as { sandboxes: Array<{ claim_ref?: string }> };
          count += body.sandboxes.filter((row) => row.claim_ref?.includes(`/${claimRef}/`) === true).length;
        }
        return count;
      },
    };
  } catch (error) {
    await close();
    throw error;
  }
}
