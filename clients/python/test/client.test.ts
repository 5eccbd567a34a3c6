// The Python client (standard library only) against the local stack (real
// kube-apiserver, Redis, control plane, node agents), run by the machine's
// python3: claim, get, renew and release as a ServiceAccount; the CLI's exit
// codes; and a claim whose claim API is killed mid-claim and comes back,
// retried with the same claimRef, answers one sandbox — never a second.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLAIM_FAILURE_REASONS } from '@warmpool/api';
import { startClaimStack, type ClaimStack } from '../../test-support/claim-stack.js';

const SRC = fileURLToPath(new URL('../src', import.meta.url));
const execFileAsync = promisify(execFile);

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

async function python(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Run> {
  try {
    const { stdout, stderr } = await execFileAsync('python3', args, {
      env: { ...process.env, PYTHONPATH: SRC, PYTHONDONTWRITEBYTECODE: '1', ...env },
      timeout: 90_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/**
 * Runs `body` (Python, with `client` a ClaimClient of the stack as the claimer, made with the extra keyword arguments
 * `kwargs`, and `retries` the list its retries are appended to) and parses what it prints.
 */
async function script<T>(s: ClaimStack, body: string, kwargs = ''): Promise<T> {
  const program = [
    'import json',
    'from warmpool_client import *',
    'retries = []',
    `client = ClaimClient(${JSON.stringify(s.claimsUrl)}, namespace=${JSON.stringify(s.namespace)}, token=token_from_file(${JSON.stringify(s.tokenFile)}), on_retry=lambda *a: retries.append(a)${kwargs})`,
    body,
  ].join('\n');
  const run = await python(['-c', program]);
  if (run.code !== 0) throw new Error(`python3 exited ${run.code}: ${run.stderr}`);
  return JSON.parse(run.stdout) as T;
}

describe('warmpool-client (Python) against the local stack', () => {
  let s: ClaimStack;

  beforeAll(async () => {
    s = await startClaimStack('127.0.60');
  }, 240_000);
  afterAll(async () => s?.close());

  it("knows exactly libs/api's failure reasons", async () => {
    const run = await python(['-c', 'from warmpool_client import CLAIM_FAILURE_REASONS as r; print(sorted(r))']);
    expect(run.stdout.trim()).toBe(
      `[${[...CLAIM_FAILURE_REASONS]
        .sort()
        .map((r) => `'${r}'`)
        .join(', ')}]`,
    );
  });

  it('claims, reads, renews and releases a sandbox, as typed dataclasses', async () => {
    const out = await script<Record<string, unknown>>(
      s,
      [
        'c = client.claim("python", ttl_seconds=60)',
        'g = client.get(c.claim_ref)',
        'r = client.renew(c.id, 120)',
        'client.release(c.id)',
        'try:',
        '    client.get(c.id); gone = None',
        'except ClaimApiError as e:',
        '    gone = [e.status, e.reason]',
        'client.release(c.id, ignore_not_found=True)',
        'print(json.dumps({"id": c.id, "ref": c.claim_ref, "token": bool(c.token), "tier": c.tier, "pool": c.warm_pool,',
        '    "get_id": g.id, "get_token": g.token, "renewed": r.deadline > c.deadline, "gone": gone}))',
      ].join('\n'),
    );
    expect(out).toMatchObject({ token: true, tier: 'warm', pool: 'python', get_token: null, renewed: true });
    expect(out['get_id']).toBe(out['id']);
    expect(out['ref']).toMatch(/^c-[0-9a-f]{24}$/);
    expect(out['gone']).toEqual([404, 'ClaimNotFound']);
  });

  it('answers the same sandbox to the same claimRef, and does not retry a 4xx', async () => {
    const out = await script<{ same: boolean; error: [number, string]; retries: number }>(
      s,
      [
        'a = client.claim("python", claim_ref="py-same")',
        'b = client.claim("python", claim_ref="py-same")',
        'try:',
        '    client.claim("no-such-pool")',
        'except ClaimApiError as e:',
        '    error = [e.status, e.reason]',
        'client.release("py-same")',
        'print(json.dumps({"same": a.id == b.id, "error": error, "retries": len(retries)}))',
      ].join('\n'),
    );
    expect(out).toEqual({ same: true, error: [404, 'PoolNotFound'], retries: 0 });
  });

  it('the CLI prints JSON, and its exit code says what failed', async () => {
    const env = { WARMPOOL_CLAIMS_URL: s.claimsUrl, WARMPOOL_TOKEN_FILE: s.tokenFile, WARMPOOL_NAMESPACE: s.namespace };
    const claimed = await python(['-m', 'warmpool_client', 'claim', '--pool', 'python', '--ttl', '60'], env);
    expect(claimed.code).toBe(0);
    const claim = JSON.parse(claimed.stdout) as { id: string; token: string; claim_ref: string };
    expect(claim.token).toBeTruthy();
    expect((await python(['-m', 'warmpool_client', 'renew', claim.id, '--ttl', '90'], env)).code).toBe(0);
    expect((await python(['-m', 'warmpool_client', 'release', claim.claim_ref], env)).code).toBe(0);
    const gone = await python(['-m', 'warmpool_client', 'get', claim.id], env);
    expect(gone.code).toBe(4);
    expect(JSON.parse(gone.stderr)).toMatchObject({ reason: 'ClaimNotFound', status: 404 });
    expect((await python(['-m', 'warmpool_client', 'claim', '--pool', 'no-such-pool'], env)).code).toBe(4);
    expect((await python(['-m', 'warmpool_client', 'claim', '--pool', 'a', '--env', 'b'], env)).code).toBe(2);
    expect(
      (await python(['-m', 'warmpool_client', 'get', 'x'], { ...env, WARMPOOL_TOKEN_FILE: '', WARMPOOL_TOKEN: 'nope' }))
        .code,
    ).toBe(3);
    expect(
      (await python(['-m', 'warmpool_client', '--url', 'http://127.0.0.1:1', '--attempts', '2', 'get', 'x'], env)).code,
    ).toBe(7);
  });

  it('a claim whose claim API is killed mid-claim and restarted, retried with the same claimRef, gets one sandbox', async () => {
    // `slow` has no warm sandbox: the claim boots cold on a node for seconds, and the control plane dies meanwhile.
    const claiming = script<{ id: string; ref: string; retries: string[] }>(
      s,
      [
        'c = client.claim("slow", ttl_seconds=120, claim_ref="py-killed-mid-claim")',
        'print(json.dumps({"id": c.id, "ref": c.claim_ref, "retries": [type(e).__name__ for _, e, _ in retries]}))',
      ].join('\n'),
      ', retry=RetryPolicy(attempts=30, base_delay=0.25, max_delay=2.0)',
    );
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const restart = await s.killControlPlane();
    await restart();
    const claim = await claiming;
    expect(claim.ref).toBe('py-killed-mid-claim');
    expect(claim.retries[0]).toBe('TransportError');
    expect(await s.sandboxesOnNodes('py-killed-mid-claim')).toBe(1);
    const again = await script<{ id: string }>(
      s,
      'print(json.dumps({"id": client.claim("slow", claim_ref="py-killed-mid-claim").id}))\nclient.release("py-killed-mid-claim")',
    );
    expect(again.id).toBe(claim.id);
    expect(await s.sandboxesOnNodes('py-killed-mid-claim')).toBe(0);
  }, 120_000);
});
