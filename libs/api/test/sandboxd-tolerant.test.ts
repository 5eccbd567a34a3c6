// What warmpool reads from a real sandboxd's answers: owner addresses in both
// forms, list rows with more or less than our contract names.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { normalizeOwnerAddr, parseSandboxRows, rowsOfClaimRef, tolerantClaimResponseSchema } from '../src/index.js';

describe('normalizeOwnerAddr', () => {
  it.each([
    ['10.0.0.5:7777', '10.0.0.5:7777'],
    ['https://sbx.example.com:8443', 'sbx.example.com:8443'],
    ['https://sbx.example.com:8443/', 'sbx.example.com:8443'],
    ['https://sbx.example.com', 'sbx.example.com:443'],
    ['http://10.0.0.5', '10.0.0.5:80'],
    ['http://[fd00::5]:7777', '[fd00::5]:7777'],
  ])('reads %s as %s', (raw, want) => expect(normalizeOwnerAddr(raw)).toBe(want));

  it.each([
    undefined,
    '',
    'no-port',
    'ftp://x:21',
    'https://u:p@x:1',
    'https://x:1/path',
    'https://x:1?q=1',
    'http://',
  ])('refuses %s', (raw) => expect(normalizeOwnerAddr(raw)).toBeUndefined());
});

describe("normalizeOwnerAddr's memo", () => {
  it('keeps no huge owner address a node answers: its memory is bounded, not just its count', () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const MiB = 1 << 20;
    gc();
    const before = process.memoryUsage().heapUsed;
    // 64 distinct 1 MiB owner addresses, none of them host:port, read off a node's JSON answer (on the heap).
    const padding = 'a'.repeat(MiB);
    for (let i = 0; i < 64; i++) {
      const raw = JSON.parse(`"${i}${padding}"`) as string;
      expect(normalizeOwnerAddr(raw)).toBeUndefined();
    }
    gc();
    expect(process.memoryUsage().heapUsed - before).toBeLessThan(16 * MiB);
  });
});

describe('tolerantClaimResponseSchema', () => {
  it('reads a claim with extra fields and without owner_addr', () => {
    const parsed = tolerantClaimResponseSchema.parse({
      id: 'sb_1',
      token: 't',
      deadline: '2030-01-01T00:00:00Z',
      template_digest: 'sha256:x',
      volumes: [{ name: 'v' }],
    });
    expect(parsed.owner_addr).toBeUndefined();
    expect(parsed.id).toBe('sb_1');
  });
});

describe('parseSandboxRows', () => {
  const key = { template: 'img', net: 'none', size: 'small' };
  it('reads rows one by one: extra fields and no claimed_at pass, a row without id or deadline is skipped and counted', () => {
    const result = parseSandboxRows({
      sandboxes: [
        { id: 'a', key, deadline: 'd', hibernated: true, volumes: [] },
        { key, deadline: 'd' },
        { id: 'b', key, deadline: 'd', claimed_at: 'c', claim_ref: 'r' },
        { id: 'c', key },
        'not a row',
      ],
    });
    expect(result.rows.map((r) => r.id)).toEqual(['a', 'b']);
    expect(result.skipped).toBe(3);
    expect(result.firstProblem).toMatch(/^sandboxes\.1\.id/);
  });

  it('throws only when the body is not a list', () => {
    expect(() => parseSandboxRows({ nope: [] })).toThrow();
  });

  it('rowsOfClaimRef keeps exactly the claim_ref asked for', () => {
    const rows = [{ claim_ref: 'a' }, { claim_ref: 'ab' }, {}, { claim_ref: 'a' }];
    expect(rowsOfClaimRef(rows, 'a')).toHaveLength(2);
  });
});
