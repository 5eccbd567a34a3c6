// The TypeScript client and its CLI against the local stack (real
// kube-apiserver, Redis, control plane, node agents): claim, get, renew,
// release and list as a ServiceAccount; exit codes that say what failed; and a
// claim whose claim API is killed mid-claim and comes back, retried with the
// same claimRef, answers one sandbox — never a second.
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ClaimApiError,
  ClaimClient,
  readKubeContext,
  tokenFromFile,
  tokenFromKubeconfig,
  TransportError,
} from '../src/index.js';
import { EXIT } from '../src/cli-failure.js';
import { startClaimStack, type ClaimStack } from '../../test-support/claim-stack.js';

const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const run = promisify(execFile);

describe('@warmpool/client against the local stack', () => {
  let s: ClaimStack;
  let client: ClaimClient;

  beforeAll(async () => {
    s = await startClaimStack('127.0.59');
    client = new ClaimClient({ url: s.claimsUrl, namespace: s.namespace, token: tokenFromFile(s.tokenFile) });
  }, 240_000);
  afterAll(async () => s?.close());

  async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    const env = {
      ...process.env,
      WARMPOOL_CLAIMS_URL: s.claimsUrl,
      WARMPOOL_TOKEN_FILE: s.tokenFile,
      WARMPOOL_NAMESPACE: s.namespace,
    };
    try {
      const { stdout, stderr } = await run(process.execPath, [CLI, ...args], { env, timeout: 90_000 });
      return { code: 0, stdout, stderr };
    } catch (error) {
      const e = error as { code: number; stdout: string; stderr: string };
      return { code: e.code, stdout: e.stdout, stderr: e.stderr };
    }
  }

  it('claims, reads, renews and releases a sandbox', async () => {
    const claim = await client.claim({ warmPool: 'python', ttlSeconds: 60 });
    expect(claim).toMatchObject({ namespace: s.namespace, warmPool: 'python', tier: 'warm' });
    expect(claim.id).toMatch(/^sb_/);
    expect(claim.token).toBeTruthy();
    expect(claim.claimRef).toMatch(/^c-[0-9a-f]{24}$/);

    const read = await client.get(claim.claimRef);
    expect(read.id).toBe(claim.id);
    expect(read.token).toBeUndefined();

    const renewed = await client.renew(claim.id, 120);
    expect(Date.parse(renewed.deadline)).toBeGreaterThan(Date.parse(claim.deadline));

    await client.release(claim.id);
    await expect(client.get(claim.id)).rejects.toMatchObject({ status: 404, reason: 'ClaimNotFound' });
    await client.release(claim.id, { ignoreNotFound: true });
  });

  it('answers the same sandbox to the same claimRef, and fails with the API reason, unretried, on a 4xx', async () => {
    const first = await client.claim({ warmPool: 'python', claimRef: 'same-ref' });
    const again = await client.claim({ warmPool: 'python', claimRef: 'same-ref' });
    expect(again.id).toBe(first.id);
    let retries = 0;
    const counting = new ClaimClient({
      url: s.claimsUrl,
      namespace: s.namespace,
      token: tokenFromFile(s.tokenFile),
      onRetry: () => retries++,
    });
    await expect(counting.claim({ warmPool: 'no-such-pool' })).rejects.toMatchObject({
      status: 404,
      reason: 'PoolNotFound',
    });
    await expect(counting.claim({ env: 'python', warmPool: undefined, claimRef: 'same-ref' })).rejects.toBeInstanceOf(
      ClaimApiError,
    );
    expect(retries).toBe(0);
    await client.release('same-ref');
  });

  it('reads its token from a kubeconfig, and refuses a kubeconfig user without one', async () => {
    const withToken = join(s.dir, 'token.kubeconfig');
    writeFileSync(
      withToken,
      [
        'apiVersion: v1',
        'kind: Config',
        'current-context: claimer',
        'contexts: [{ name: claimer, context: { cluster: local, user: claimer, namespace: default } }]',
        `clusters: [{ name: local, cluster: { server: "${s.stack.description.server}" } }]`,
        'users: [{ name: claimer, user: { tokenFile: claimer-token } }]',
        '',
      ].join('\n'),
    );
    const viaKubeconfig = new ClaimClient({ url: s.claimsUrl, token: tokenFromKubeconfig(withToken) });
    const claim = await viaKubeconfig.claim({ warmPool: 'python', ttlSeconds: 30 });
    await viaKubeconfig.release(claim.id);
    // The stack's admin kubeconfig authenticates with a client certificate: usable to list, not to claim.
    expect(() => tokenFromKubeconfig(s.stack.cluster.kubeconfigPath)).toThrow(/no token/);
    expect(readKubeContext(s.stack.cluster.kubeconfigPath).clientCertificate).toBeDefined();
  });

  it('a connection that fails is a TransportError, retried and then thrown', async () => {
    let retries = 0;
    const nowhere = new ClaimClient({
      url: 'http://127.0.0.1:1',
      token: () => 'unused',
      retry: { attempts: 3, baseDelayMs: 10 },
      onRetry: () => retries++,
    });
    await expect(nowhere.get('x')).rejects.toBeInstanceOf(TransportError);
    expect(retries).toBe(2);
  });

  it('the CLI prints JSON, and its exit code says what failed', async () => {
    const claimed = await cli(['claim', '--pool', 'python', '--ttl', '60']);
    expect(claimed.code).toBe(EXIT.ok);
    const claim = JSON.parse(claimed.stdout) as { id: string; claimRef: string; token: string };
    expect(claim.token).toBeTruthy();

    const renewed = await cli(['renew', claim.id, '--ttl', '90']);
    expect(renewed.code).toBe(EXIT.ok);
    expect(JSON.parse(renewed.stdout)).toHaveProperty('deadline');

    const got = await cli(['get', claim.claimRef]);
    expect(JSON.parse(got.stdout)).toMatchObject({ id: claim.id });

    const listed = await cli(['list', '--kubeconfig', s.stack.cluster.kubeconfigPath, '-n', s.namespace]);
    expect(listed.code).toBe(EXIT.ok);
    const names = (JSON.parse(listed.stdout) as { sandboxes: Array<{ name: string; id: string }> }).sandboxes;
    expect(names).toContainEqual(expect.objectContaining({ name: claim.claimRef, id: claim.id }));

    expect((await cli(['release', claim.id])).code).toBe(EXIT.ok);
    const gone = await cli(['get', claim.id]);
    expect(gone.code).toBe(EXIT.notFound);
    expect(JSON.parse(gone.stderr)).toMatchObject({ reason: 'ClaimNotFound', status: 404 });

    expect((await cli(['claim', '--pool', 'python', '--env', 'python'])).code).toBe(EXIT.usage);
    expect((await cli(['claim', '--pool', 'no-such-pool'])).code).toBe(EXIT.notFound);
    const denied = await cli(['get', 'x', '--token-file', join(s.dir, 'bad-token')]);
    expect(denied.code).toBe(EXIT.usage); // an unreadable token file is the caller's setting
    writeFileSync(join(s.dir, 'bad-token'), 'not-a-token');
    expect((await cli(['get', 'x', '--token-file', join(s.dir, 'bad-token')])).code).toBe(EXIT.denied);
    const down = await cli(['get', 'x', '--url', 'http://127.0.0.1:1', '--attempts', '2']);
    expect(down.code).toBe(EXIT.unavailable);
  });

  it('a claim whose claim API is killed mid-claim and restarted, retried with the same claimRef, gets one sandbox', async () => {
    const retried: unknown[] = [];
    const patient = new ClaimClient({
      url: s.claimsUrl,
      namespace: s.namespace,
      token: tokenFromFile(s.tokenFile),
      retry: { attempts: 30, baseDelayMs: 250, maxDelayMs: 2_000 },
      onRetry: (_attempt, error) => retried.push(error),
    });
    // `slow` has no warm sandbox: the claim boots cold on a node for seconds, and the control plane dies meanwhile.
    const claiming = patient.claim({ warmPool: 'slow', ttlSeconds: 120, claimRef: 'killed-mid-claim' });
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const restart = await s.killControlPlane();
    await restart();
    const claim = await claiming;

    expect(retried.length).toBeGreaterThan(0);
    expect(retried[0]).toBeInstanceOf(TransportError);
    expect(claim).toMatchObject({ claimRef: 'killed-mid-claim', warmPool: 'slow' });
    expect(await s.sandboxesOnNodes('killed-mid-claim')).toBe(1);
    // Asked again, the same sandbox.
    expect((await patient.claim({ warmPool: 'slow', claimRef: 'killed-mid-claim' })).id).toBe(claim.id);
    await patient.release(claim.id);
    expect(await s.sandboxesOnNodes('killed-mid-claim')).toBe(0);
  }, 120_000);
});
