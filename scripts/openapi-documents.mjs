#!/usr/bin/env node
/* global URL, process, console, fetch, AbortSignal */
// The OpenAPI documents the servers serve, committed under docs/openapi/ so a
// user reads (or generates a client from) them without running anything:
// the claim API's (GET /openapi.json on the control plane's claims port) and
// the node agent's (GET /openapi.json on the agent). This script starts the
// local stack (`make build` first), fetches both from the running processes
// and writes them; test/repo/openapi-documents.test.ts fails when the
// committed copies differ from what the servers serve.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startStack } from '@warmpool/harness';

export const DOCUMENTS = {
  claimApi: fileURLToPath(new URL('../docs/openapi/claim-api.json', import.meta.url)),
  nodeAgent: fileURLToPath(new URL('../docs/openapi/node-agent.json', import.meta.url)),
};

/** A document as committed: pretty JSON with a final newline. */
export function asCommitted(document) {
  return `${JSON.stringify(document, null, 2)}\n`;
}

/** Fetches both documents from a running stack's claim API and first node agent. */
export async function servedDocuments(stack) {
  const get = async (url) => {
    const res = await fetch(`${url}/openapi.json`, { signal: AbortSignal.timeout(10_000) });
    if (res.status !== 200) throw new Error(`${url}/openapi.json answered ${res.status}`);
    return res.json();
  };
  return {
    claimApi: await get(new URL(stack.description.claimsUrl).origin),
    nodeAgent: await get(stack.description.nodes[0].agentUrl),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const dir = mkdtempSync(join(tmpdir(), 'warmpool-openapi-'));
  const stack = await startStack({
    dir,
    nodes: 1,
    loopbackPrefix: '127.0.61',
    controlPlanePort: 0,
    claimsPort: 0,
    sample: false,
  });
  try {
    const served = await servedDocuments(stack);
    for (const [name, path] of Object.entries(DOCUMENTS)) {
      writeFileSync(path, asCommitted(served[name]));
      console.log(`wrote ${path}`);
    }
  } finally {
    await stack.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
