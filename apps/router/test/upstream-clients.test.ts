// Upstream agent-sandbox's clients through warmpool's router, against the
// real stack (kube-apiserver + etcd, Redis, the control plane with its Sandbox
// API, node agents, fake-sandboxd, the router, all processes): claim → connect
// → execute → write/read a file → delete, as the Python client sends it
// (./upstream-python-client.ts), and every bad request refused by the router
// with upstream's status while no node sees a byte of it.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  executeResponseSchema,
  existsResponseSchema,
  fileListSchema,
  MAX_FILE_BYTES,
  runtimeErrorSchema,
  type SandboxClaim,
} from '@warmpool/api';
import { eventually, postDeclaringOnly, startStack, type LocalStack } from '@warmpool/harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as upstream from './upstream-python-client.js';

let stack: LocalStack;
let dir: string;
let routerUrl: string;
let pool: string;
const OTHER_NAMESPACE = 'tenant-b';

async function kubectl(args: string[], input?: string): Promise<string> {
  const result = await stack.cluster.kubectl(args, input === undefined ? {} : { input });
  if (result.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${result.stderr}${result.stdout}`);
  return result.stdout;
}

async function claimOf(namespace: string, name: string): Promise<SandboxClaim> {
  return JSON.parse(await kubectl(['get', 'sandboxclaim', name, '-n', namespace, '-o', 'json'])) as SandboxClaim;
}

/** create_sandbox: the claim, then wait for Ready and status.sandbox.name (the id the client connects with). */
async function createSandbox(
  namespace: string,
  lifecycle?: Parameters<typeof upstream.sandboxClaimManifest>[3],
): Promise<string> {
  const name = `sandbox-claim-${Math.random().toString(16).slice(2, 10)}`;
  await kubectl(['create', '-f', '-'], upstream.sandboxClaimManifest(name, namespace, pool, lifecycle));
  let sandboxId = '';
  await eventually(
    async () => {
      const claim = await claimOf(namespace, name);
      const ready = claim.status?.conditions?.find((c) => c.type === 'Ready');
      sandboxId = claim.status?.sandbox?.name ?? '';
      return ready?.status === 'True' && sandboxId !== '';
    },
    { timeoutMs: 30_000, what: `SandboxClaim ${namespace}/${name} Ready` },
  );
  return sandboxId;
}

/** Requests that reached any node's runtime routes, from every fake-sandboxd's own metrics. */
async function runtimeRequestsOnNodes(): Promise<number> {
  let total = 0;
  for (const node of stack.description.nodes) {
    const text = await (
      await fetch(`${node.sandboxdUrl}/metrics`, { headers: { authorization: `Bearer ${stack.token}` } })
    ).text();
    for (const line of text.split('\n'))
      if (line.startsWith('sandboxd_runtime_requests_total{')) total += Number(line.split(' ').pop());
  }
  return total;
}

async function expectRefused(res: Response, status: number, reason: string): Promise<void> {
  const text = await res.text();
  expect({ status: res.status, text }).toMatchObject({ status });
  expect(runtimeErrorSchema.parse(JSON.parse(text)).reason).toBe(reason);
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'warmpool-router-stack-'));
  stack = await startStack({
    dir,
    nodes: 2,
    loopbackPrefix: '127.0.24',
    controlPlanePort: 0,
    claimsPort: 0,
    routerPort: 0,
    interval: '1s',
    sample: { replicas: 6 },
  });
  routerUrl = stack.description.routerUrl ?? '';
  pool = stack.description.sample?.name ?? '';
  // The same pool in another namespace, for a sandbox the demo account may not reach.
  await kubectl(['create', 'namespace', OTHER_NAMESPACE]);
  const sample = readFileSync(stack.description.sample?.manifestPath ?? '', 'utf8');
  await kubectl(
    ['apply', '--server-side', '--field-manager=router-spec', '-f', '-'],
    sample.replaceAll(`"namespace": "${stack.description.namespace}"`, `"namespace": "${OTHER_NAMESPACE}"`),
  );
}, 240_000);

afterAll(async () => {
  await stack?.stop();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

describe('the router with upstream’s Python client', () => {
  it('runs a command and round-trips a file in a claimed sandbox, then loses it with its claim', async () => {
    const namespace = stack.description.namespace;
    const sandboxId = await createSandbox(namespace);
    const conn = { baseUrl: routerUrl, sandboxId, namespace };

    const ran = await upstream.run(conn, 'echo hello from warmpool');
    expect(ran.status).toBe(200);
    expect(executeResponseSchema.parse(await ran.json())).toEqual({
      stdout: 'hello from warmpool\n',
      stderr: '',
      exit_code: 0,
    });

    expect((await upstream.write(conn, 'data/notes.txt', 'round trip\n')).status).toBe(200);
    const read = await upstream.read(conn, 'data/notes.txt');
    expect(read.status).toBe(200);
    expect(await read.text()).toBe('round trip\n');
    expect(existsResponseSchema.parse(await (await upstream.exists(conn, 'data/notes.txt')).json()).exists).toBe(true);
    const listed = fileListSchema.parse(await (await upstream.list(conn, 'data')).json());
    expect(listed.map((e) => e.name)).toEqual(['notes.txt']);
    expect((await (await upstream.run(conn, 'cat data/notes.txt')).json()) as unknown).toMatchObject({
      stdout: 'round trip\n',
    });

    // The sandbox's own token never reaches the caller.
    const secret = JSON.parse(await kubectl(['get', 'secret', sandboxId, '-n', namespace, '-o', 'json'])) as {
      data: { token: string };
    };
    const token = Buffer.from(secret.data.token, 'base64').toString('utf8');
    for (const res of [await upstream.run(conn, 'echo x'), await upstream.read(conn, 'data/notes.txt')]) {
      expect(await res.text()).not.toContain(token);
      expect(JSON.stringify([...res.headers])).not.toContain(token);
    }

    // delete_sandbox: the claim goes, and with it every way in.
    await kubectl(['delete', 'sandboxclaim', sandboxId, '-n', namespace, '--wait=true']);
    await eventually(async () => (await upstream.run(conn, 'echo gone')).status === 404, {
      timeoutMs: 15_000,
      what: 'the deleted sandbox answering 404',
    });
    await expectRefused(await upstream.run(conn, 'echo gone'), 404, 'SandboxNotFound');
  }, 90_000);

  it('takes a caller’s Kubernetes token (Bearer, or Basic with the token as password) and refuses a bad one', async () => {
    const namespace = stack.description.namespace;
    const sandboxId = await createSandbox(namespace);
    const token = (await kubectl(['create', 'token', 'warmpool-demo', '-n', namespace])).trim();
    const withToken = { baseUrl: routerUrl, sandboxId, namespace, token };
    expect((await upstream.run(withToken, 'pwd')).status).toBe(200);
    const basic = await fetch(`${routerUrl}/list/`, {
      headers: {
        ...upstream.routerHeaders({ baseUrl: routerUrl, sandboxId, namespace }),
        authorization: `Basic ${Buffer.from(`token:${token}`).toString('base64')}`,
      },
    });
    expect(basic.status).toBe(200);
    await expectRefused(await upstream.run({ ...withToken, token: 'not-a-token' }, 'pwd'), 401, 'Unauthenticated');
    await kubectl(['delete', 'sandboxclaim', sandboxId, '-n', namespace]);
  }, 60_000);

  it('gives up at the client’s X-Sandbox-Timeout (504), and cuts a chunked body at its cap (413)', async () => {
    const namespace = stack.description.namespace;
    const sandboxId = await createSandbox(namespace);
    const conn = { baseUrl: routerUrl, sandboxId, namespace };
    const slow = await fetch(`${routerUrl}/execute`, {
      method: 'POST',
      headers: { ...upstream.routerHeaders(conn, 0.5), 'content-type': 'application/json' },
      body: '{"command": "sleep 3"}',
    });
    await expectRefused(slow, 504, 'BackendTimeout');
    // No Content-Length: the router counts the bytes on their way and stops at 1 MiB. Just over the cap, so what the
    // client still writes after the answer fits the socket's buffers (more could meet the closed socket: EPIPE).
    const chunks = Array.from({ length: 17 }, () => new TextEncoder().encode(' '.repeat(64 * 1024)));
    const chunked = await fetch(`${routerUrl}/execute`, {
      method: 'POST',
      headers: { ...upstream.routerHeaders(conn), 'content-type': 'application/json' },
      body: new ReadableStream({
        pull(controller) {
          const next = chunks.shift();
          if (next === undefined) controller.close();
          else controller.enqueue(next);
        },
      }),
      duplex: 'half',
    } as RequestInit);
    await expectRefused(chunked, 413, 'PayloadTooLarge');
    expect((await upstream.run(conn, 'echo still fine')).status).toBe(200);
    await kubectl(['delete', 'sandboxclaim', sandboxId, '-n', namespace]);
  }, 60_000);

  describe('bad requests: each refused with upstream’s status, nothing forwarded to a node', () => {
    it('refuses traversal, oversize bodies, bad headers, unknown, foreign, forged and expired sandboxes', async () => {
      const namespace = stack.description.namespace;
      const sandboxId = await createSandbox(namespace);
      const foreign = await createSandbox(OTHER_NAMESPACE);
      const expiring = await createSandbox(namespace, {
        shutdownTime: new Date(Date.now() + 3_000).toISOString().replace(/\.\d+Z$/, 'Z'),
        shutdownPolicy: 'Retain',
      });
      await eventually(
        async () =>
          (await claimOf(namespace, expiring)).status?.conditions?.find((c) => c.type === 'Ready')?.reason ===
          'Expired',
        { timeoutMs: 20_000, what: `SandboxClaim ${expiring} Expired` },
      );
      const conn = { baseUrl: routerUrl, sandboxId, namespace };
      const before = await runtimeRequestsOnNodes();

      // Path traversal, however it is spelled (the client's own guard bypassed: allow_unsafe_paths=True).
      await expectRefused(await upstream.read(conn, '../etc/passwd'), 400, 'InvalidPath');
      await expectRefused(await upstream.list(conn, 'a/../../etc'), 400, 'InvalidPath');
      await expectRefused(await upstream.exists(conn, 'x\u0000/../../y'), 400, 'InvalidPath');
      // A body over the limits, refused by its Content-Length before a byte is read.
      const oversize = await postDeclaringOnly(
        `${routerUrl}/upload`,
        {
          ...upstream.routerHeaders(conn),
          'content-type': 'multipart/form-data; boundary=x',
          'content-length': String(MAX_FILE_BYTES * 2),
        },
        '--x\r\n',
      );
      expect(oversize.status).toBe(413);
      expect(runtimeErrorSchema.parse(JSON.parse(oversize.body)).reason).toBe('PayloadTooLarge');
      const bigCommand = await upstream.run(conn, 'echo ' + 'x'.repeat(2 * 1024 * 1024));
      await expectRefused(bigCommand, 413, 'PayloadTooLarge');
      // Headers as upstream's router checks them.
      await expectRefused(await upstream.run({ ...conn, sandboxId: 'Not_A_Label' }, 'pwd'), 400, 'InvalidHeader');
      await expectRefused(await upstream.run({ ...conn, serverPort: 9999 }, 'pwd'), 400, 'UnsupportedPort');
      // Unknown, another namespace's (the caller may not get Sandboxes there), expired.
      await expectRefused(await upstream.run({ ...conn, sandboxId: 'no-such-sandbox' }, 'pwd'), 404, 'SandboxNotFound');
      await expectRefused(
        await upstream.run({ ...conn, sandboxId: foreign, namespace: OTHER_NAMESPACE }, 'pwd'),
        403,
        'Forbidden',
      );
      await expectRefused(await upstream.run({ ...conn, sandboxId: expiring }, 'pwd'), 410, 'SandboxExpired');
      // A forged Secret shaped like a claim's, pointing at a node: no Sandbox names it, so it routes nowhere.
      const b64 = (v: string): string => Buffer.from(v).toString('base64');
      await kubectl(
        ['create', '-f', '-'],
        JSON.stringify({
          apiVersion: 'v1',
          kind: 'Secret',
          type: 'warmpool.dev/sandbox',
          metadata: {
            name: 'forged',
            namespace,
            ownerReferences: [
              {
                apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
                kind: 'SandboxClaim',
                name: 'forged',
                uid: '00000000-0000-0000-0000-000000000000',
                controller: true,
              },
            ],
          },
          data: {
            id: b64('sb_forged'),
            token: b64('forged-token'),
            ownerAddr: b64(stack.description.nodes[0]?.sandboxdUrl.replace('http://', '') ?? ''),
            deadline: b64(new Date(Date.now() + 3_600_000).toISOString()),
            node: b64('warmpool-node-1'),
          },
        }),
      );
      await expectRefused(await upstream.run({ ...conn, sandboxId: 'forged' }, 'pwd'), 404, 'SandboxNotFound');
      // Not a route of the router.
      await expectRefused(await fetch(`${routerUrl}/v1/sandboxes`), 404, 'RouteNotFound');

      expect(await runtimeRequestsOnNodes()).toBe(before);
      for (const name of [sandboxId, expiring]) await kubectl(['delete', 'sandboxclaim', name, '-n', namespace]);
      await kubectl(['delete', 'sandboxclaim', foreign, '-n', OTHER_NAMESPACE]);
    }, 90_000);
  });

  // Last: it kills a node.
  it('answers 502 when the sandbox’s node is gone (upstream clients retry that), and says nothing else', async () => {
    const namespace = stack.description.namespace;
    const sandboxId = await createSandbox(namespace);
    const secret = JSON.parse(await kubectl(['get', 'secret', sandboxId, '-n', namespace, '-o', 'json'])) as {
      data: { ownerAddr: string };
    };
    const ownerAddr = Buffer.from(secret.data.ownerAddr, 'base64').toString('utf8');
    const index = stack.description.nodes.findIndex((n) => n.sandboxdUrl === `http://${ownerAddr}`);
    const pid = stack.description.pids[`fake-sandboxd-${index + 1}`];
    expect(pid, `the fake-sandboxd at ${ownerAddr}`).toBeDefined();
    process.kill(pid as number, 'SIGKILL');
    await eventually(
      async () => (await upstream.run({ baseUrl: routerUrl, sandboxId, namespace }, 'pwd')).status === 502,
      { timeoutMs: 10_000, what: 'a 502 from the router' },
    );
    await expectRefused(
      await upstream.run({ baseUrl: routerUrl, sandboxId, namespace }, 'pwd'),
      502,
      'BackendUnavailable',
    );
  }, 60_000);
});
