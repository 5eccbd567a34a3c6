// Talking to a node agent the way a client of warmpool does: at the address
// its NodeInventory advertises, with the fleet token.
import { claimResponseSchema, nodeInfoSchema, sandboxRowSchema, type ClaimResponse, type NodeInfo, type SandboxRow } from '@warmpool/api';

export interface HttpAnswer<T> {
  status: number;
  body: T | undefined;
}

function url(address: string, path: string): string {
  return `http://${address}${path}`;
}

async function call(address: string, path: string, init: RequestInit): Promise<{ status: number; text: string }> {
  const res = await fetch(url(address, path), { ...init, signal: AbortSignal.timeout(10_000) });
  return { status: res.status, text: await res.text() };
}

export async function claim(address: string, token: string, request: { template: string; ttl_seconds?: number; claim_ref?: string }): Promise<HttpAnswer<ClaimResponse>> {
  const res = await call(address, '/v1/claim', {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(request),
  });
  return { status: res.status, body: res.status === 200 ? claimResponseSchema.parse(JSON.parse(res.text)) : undefined };
}

export async function getSandbox(address: string, token: string, id: string): Promise<HttpAnswer<SandboxRow>> {
  const res = await call(address, `/v1/sandboxes/${encodeURIComponent(id)}`, { headers: { authorization: `Bearer ${token}` } });
  return { status: res.status, body: res.status === 200 ? sandboxRowSchema.parse(JSON.parse(res.text)) : undefined };
}

/** Released with the sandbox's own token, as the client that claimed it would. */
export async function release(address: string, sandboxToken: string, id: string): Promise<number> {
  const res = await call(address, `/v1/sandboxes/${encodeURIComponent(id)}/release`, { method: 'POST', headers: { authorization: `Bearer ${sandboxToken}` } });
  return res.status;
}

export async function info(address: string, token: string): Promise<NodeInfo> {
  const res = await call(address, '/v1/info', { headers: { authorization: `Bearer ${token}` } });
  if (res.status !== 200) throw new Error(`GET /v1/info on ${address}: ${res.status} ${res.text}`);
  return nodeInfoSchema.parse(JSON.parse(res.text));
}
