import { isDnsLabel } from '@warmpool/api';
import { describe, expect, it } from 'vitest';
import { generateClaimRef } from '../../src/provisioning/claim-ref.js';

describe('a generated claimRef', () => {
  it('is a DNS label of 24 random hex digits, never the same twice (across many refills of its pool)', () => {
    const refs = Array.from({ length: 10_000 }, generateClaimRef);
    for (const ref of refs) {
      expect(ref).toMatch(/^c-[0-9a-f]{24}$/);
      expect(isDnsLabel(ref)).toBe(true);
    }
    expect(new Set(refs).size).toBe(refs.length);
    // Every digit position varies: nothing is a counter or a fixed prefix.
    for (let i = 2; i < 26; i++) expect(new Set(refs.map((ref) => ref[i])).size).toBe(16);
  });
});
