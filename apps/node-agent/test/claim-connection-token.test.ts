// The claim's token check over one keep-alive connection: a connection that
// presented the fleet token once is not hashed again for the same header
// (ConnectionTokenCheck), which must change no answer: a different header on
// that connection, a rotated token and an emptied one are judged as on a new
// connection.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from '@warmpool/harness';
import { afterEach, describe, expect, it } from 'vitest';
import { startNode, type Node } from './helpers.js';

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const thing of open.splice(0).reverse()) await thing.close();
});

/** One keep-alive connection to the agent: every claim goes on it; `ports` are the local ports the claims went from. */
function oneConnection(url: string): {
  claim(authorization: string | undefined): Promise<{ status: number }>;
  ports: Set<number | undefined>;
} {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  open.push({ close: async () => agent.destroy() });
  const ports = new Set<number | undefined>();
  const body = JSON.stringify({ template: 'img' });
  return {
    ports,
    claim: (authorization) =>
      new Promise((resolve, reject) => {
        const headers: Record<string, string> = { 'content-type': 'application/json' };
        if (authorization !== undefined) headers['authorization'] = authorization;
        const req = request(`${url}/v1/claim`, { method: 'POST', agent, headers }, (res) => {
          res.resume();
          res.on('end', () => {
            ports.add(req.socket?.localPort);
            resolve({ status: res.statusCode ?? 0 });
          });
        });
        req.on('error', reject);
        req.end(body);
      }),
  };
}

async function nodeWithTokenFile(graceMs: number): Promise<{ node: Node; rotate(token: string): void }> {
  const dir = mkdtempSync(join(tmpdir(), 'agent-connection-token-'));
  open.push({ close: async () => rmSync(dir, { recursive: true, force: true }) });
  const tokenFile = join(dir, 'token');
  writeFileSync(tokenFile, 'first-token\n');
  // This sandboxd takes any caller as root, so only the agent's own check is under test.
  const node = await startNode(
    { token: undefined, tokenFile, tokenReloadIntervalMs: 20, tokenGraceMs: graceMs },
    { apiToken: undefined, coldBootMs: 0 },
  );
  open.push(node);
  return { node, rotate: (token) => writeFileSync(tokenFile, `${token}\n`) };
}

describe('the claim token check on a keep-alive connection', () => {
  it('judges every header a connection sends on its own: a wrong or missing one after a good one is refused', async () => {
    const { node } = await nodeWithTokenFile(0);
    const connection = oneConnection(node.url);
    const statuses = [];
    for (const authorization of [
      'Bearer first-token',
      'Bearer first-token',
      'Bearer first-tokeN',
      'Bearer first-toke',
      undefined,
      'Bearer first-token',
      'Bearer wrong',
      'Bearer wrong',
    ])
      statuses.push((await connection.claim(authorization)).status);
    expect(statuses).toEqual([200, 200, 401, 401, 401, 200, 401, 401]);
    // All on one connection: the refusals did not close it.
    expect(connection.ports.size).toBe(1);
  });

  it('refuses the token a connection had admitted once it is rotated out and its grace is over', async () => {
    const { node, rotate } = await nodeWithTokenFile(300);
    const connection = oneConnection(node.url);
    expect((await connection.claim('Bearer first-token')).status).toBe(200);
    rotate('second-token');
    // Waited for on another connection, so the first one's last header stays the old token.
    const other = oneConnection(node.url);
    await eventually(async () => (await other.claim('Bearer second-token')).status === 200, {
      timeoutMs: 5_000,
      what: 'the new token admitted',
    });
    await eventually(async () => (await connection.claim('Bearer first-token')).status === 401, {
      timeoutMs: 5_000,
      what: 'the old token refused on the connection that had it admitted',
    });
    expect((await connection.claim('Bearer second-token')).status).toBe(200);
    rotate('');
    await eventually(async () => (await other.claim('Bearer second-token')).status === 503, {
      timeoutMs: 5_000,
      what: 'fail-closed on an emptied token',
    });
    expect((await connection.claim('Bearer second-token')).status).toBe(503);
    expect(connection.ports.size).toBe(1);
  });
});
