// sameHeader answers string equality for well-formed strings: the bytes it
// compares (UTF-8) never make two different headers equal, a length that
// differs is never equal, and a header with a lone surrogate (whose bytes
// another shares) equals none.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { rememberHeader, sameHeader } from '../src/same-header.js';

describe('sameHeader', () => {
  it('is string equality, for any two well-formed strings', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), fc.string({ unit: 'binary' }), (a, b) => {
        expect(sameHeader(a, rememberHeader(b))).toBe(a === b);
        expect(sameHeader(a, rememberHeader(a))).toBe(true);
      }),
    );
    // Any UTF-16 code units, lone surrogates included: equal only when equal and well formed.
    fc.assert(
      fc.property(
        fc.string({ unit: 'binary-ascii' }),
        fc.string({ unit: fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c)) }),
        (a, b) => {
          const presented = `${a}${b}`;
          expect(sameHeader(presented, rememberHeader(`${a}${b}`))).toBe(presented.isWellFormed());
        },
      ),
    );
  });

  it('tells apart headers that differ in one character anywhere, or only in length', () => {
    const header = `Bearer ${'eyJhbGciOiJSUzI1NiJ9'.repeat(30)}`;
    const remembered = rememberHeader(header);
    for (let i = 0; i < header.length; i++) {
      const changed = `${header.slice(0, i)}${header[i] === 'x' ? 'y' : 'x'}${header.slice(i + 1)}`;
      expect(sameHeader(changed, remembered)).toBe(false);
    }
    expect(sameHeader(header.slice(0, -1), remembered)).toBe(false);
    expect(sameHeader(`${header}=`, remembered)).toBe(false);
    expect(sameHeader('', remembered)).toBe(false);
    expect(sameHeader('', rememberHeader(''))).toBe(true);
  });

  it('never equates headers with lone surrogates, which share their UTF-8 bytes (U+FFFD)', () => {
    expect(sameHeader('Bearer \uD800', rememberHeader('Bearer \uDC00'))).toBe(false);
    expect(sameHeader('Bearer \uD800', rememberHeader('Bearer \uD800'))).toBe(false);
  });

  it('does not confuse characters past Latin-1 with the bytes of others', () => {
    // Latin-1 bytes would keep only the low byte of U+0100 and U+0141: these pairs would then compare equal.
    expect(sameHeader('Bearer \u0100', rememberHeader('Bearer \u0000'))).toBe(false);
    expect(sameHeader('Bearer \u0141', rememberHeader('Bearer A'))).toBe(false);
  });
});
