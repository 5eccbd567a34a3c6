#!/usr/bin/env node
/* global URL, process, console */
// Copies the claim API's wire schemas from libs/api (the one place they are
// written) into this package, so the published package carries them without
// depending on the repository's private workspace packages. `npm run
// sync-api` rewrites the copy; test/api-copy.test.ts fails when it is stale.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const SOURCE = fileURLToPath(new URL('../../../libs/api/src/claims.ts', import.meta.url));
export const COPY = fileURLToPath(new URL('../src/api/claims.ts', import.meta.url));
export const HEADER =
  '// Generated from libs/api/src/claims.ts by scripts/sync-api.mjs (npm run sync-api): do not edit here.\n';

export function expectedCopy() {
  return HEADER + readFileSync(SOURCE, 'utf8');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(COPY, expectedCopy());
  console.log(`wrote ${COPY}`);
}
