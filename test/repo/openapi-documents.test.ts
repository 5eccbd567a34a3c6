// The committed OpenAPI documents (docs/openapi/) are what the running
// servers serve: the claim API of a control plane and a node agent, started
// as the local stack runs them.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type LocalStack } from '@warmpool/harness';
// @ts-expect-error: a plain ESM script without types.
import { asCommitted, DOCUMENTS, servedDocuments } from '../../scripts/openapi-documents.mjs';

type Documents = Record<'claimApi' | 'nodeAgent', unknown>;

describe('docs/openapi/', () => {
  let stack: LocalStack;
  let dir: string;
  let served: Documents;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'warmpool-openapi-'));
    stack = await startStack({
      dir,
      nodes: 1,
      loopbackPrefix: '127.0.62',
      controlPlanePort: 0,
      claimsPort: 0,
      sample: false,
    });
    served = await (servedDocuments as (stack: LocalStack) => Promise<Documents>)(stack);
  }, 180_000);
  afterAll(async () => {
    await stack?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it.each(['claimApi', 'nodeAgent'] as const)(
    '%s: the committed document is the one served (node scripts/openapi-documents.mjs rewrites it)',
    (name) => {
      const committed = readFileSync((DOCUMENTS as Record<string, string>)[name]!, 'utf8');
      expect(committed).toBe((asCommitted as (document: unknown) => string)(served[name]));
      expect(JSON.parse(committed)).toHaveProperty('openapi');
    },
  );
});
