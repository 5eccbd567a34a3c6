// The published package carries a copy of libs/api's claim schemas (it cannot
// depend on the repository's private packages): the copy is current.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain ESM script without types.
import { COPY, expectedCopy } from '../scripts/sync-api.mjs';

describe("the client's copy of the claim API schemas", () => {
  it('is libs/api/src/claims.ts as it is now (npm run sync-api -w clients/typescript rewrites it)', () => {
    expect(readFileSync(COPY as string, 'utf8')).toBe((expectedCopy as () => string)());
  });
});
