// Talking to a node agent the way a client of warmpool does: at the address
// its NodeInventory advertises, with the fleet token.
import {
  claimResponseSchema,
  nodeInfoSchema,
  sandboxRowSchema,
  type ClaimResponse,
  type NodeInfo,
  type SandboxRow,
} from '@warmpool/api';
import { httpCall } from '@warmpool/harness';

export interface AgentAnswer<T> {
  status: number;
  body: T | undefined;
}

/** One call to the agent at `address`, bounded in time. */
function call(
  address: string,
  method: string,
  path: string,
  token: string,
  body?: unknown,
): Promise<{ status: number; text: string }> {
  return httpCall(`http://${address}`, method, path, {
    token,
    ...(body === undefined ? {} : { body }),
    timeoutMs: 10_000,
  });
}

export async function claim(
  address: string,
  token: string,
  request: { template: string; ttl_seconds?: number; claim_ref?: string },
): Promise<AgentAnswer<ClaimResponse>> {
  const res = await call(address, 'POST', '/v1/claim', token, request);
  return { status: res.status, body: res.status === 200 ? claimResponseSchema.parse(JSON.parse(res.text)) : undefined };
}

export async function getSandbox(address: string, token: string, id: string): Promise<AgentAnswer<SandboxRow>> {
  const res = await call(address, 'GET', `/v1/sandboxes/${encodeURIComponent(id)}`, token);
  return { status: res.status, body: res.status === 200 ? sandboxRowSchema.parse(JSON.parse(res.text)) : undefined };
}

/** Released with the sandbox's own token, as the client that claimed it would. */
export async function release(address: string, sandboxToken: string, id: string): Promise<number> {
  return (await call(address, 'POST', `/v1/sandboxes/${encodeURIComponent(id)}/release`, sandboxToken)).status;
}

export async function info(address: string, token: string): Promise<NodeInfo> {
  const res = await call(address, 'GET', '/v1/info', token);
  if (res.status !== 200) throw new Error(`GET /v1/info on ${address}: ${res.status} ${res.text}`);
  return nodeInfoSchema.parse(JSON.parse(res.text));
}
