// A remembered header matches exactly the same string, for well-formed
// strings: the bytes it compares (UTF-8) never make two different headers
// equal, a length that differs never matches, and a header with a lone
// surrogate (whose bytes another shares) matches none. It holds only its own
// bytes, never a block of Node's shared Buffer pool.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RememberedHeader } from '../src/same-header.js';

const loneSurrogates = fc.string({
  unit: fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c)),
});

describe('RememberedHeader', () => {
  it('matches string equality, for any two well-formed strings', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), fc.string({ unit: 'binary' }), (a, b) => {
        expect(new RememberedHeader(b).matches(a)).toBe(a === b);
        expect(new RememberedHeader(a).matches(a)).toBe(true);
      }),
    );
    // Any UTF-16 code units, lone surrogates included: a match only when equal and well formed.
    fc.assert(
      fc.property(fc.string({ unit: 'binary-ascii' }), loneSurrogates, (a, b) => {
        const presented = `${a}${b}`;
        expect(new RememberedHeader(`${a}${b}`).matches(presented)).toBe(presented.isWellFormed());
      }),
    );
  });

  it('tells apart headers that differ in one character anywhere, or only in length', () => {
    const header = `Bearer ${'eyJhbGciOiJSUzI1NiJ9'.repeat(30)}`;
    const remembered = new RememberedHeader(header);
    for (let i = 0; i < header.length; i++) {
      const changed = `${header.slice(0, i)}${header[i] === 'x' ? 'y' : 'x'}${header.slice(i + 1)}`;
      expect(remembered.matches(changed)).toBe(false);
    }
    expect(remembered.matches(header.slice(0, -1))).toBe(false);
    expect(remembered.matches(`${header}=`)).toBe(false);
    expect(remembered.matches('')).toBe(false);
    expect(new RememberedHeader('').matches('')).toBe(true);
  });

  it('never equates headers with lone surrogates, which share their UTF-8 bytes (U+FFFD)', () => {
    expect(new RememberedHeader('Bearer \uDC00').matches('Bearer \uD800')).toBe(false);
    expect(new RememberedHeader('Bearer \uD800').matches('Bearer \uD800')).toBe(false);
  });

  it('does not confuse characters past Latin-1 with the bytes of others', () => {
    // Latin-1 bytes would keep only the low byte of U+0100 and U+0141: these pairs would then compare equal.
    expect(new RememberedHeader('Bearer \u0000').matches('Bearer \u0100')).toBe(false);
    expect(new RememberedHeader('Bearer A').matches('Bearer \u0141')).toBe(false);
  });

  it('holds its own bytes, not a block of the shared Buffer pool', () => {
    const header = `Bearer ${'a'.repeat(670)}`;
    expect(new RememberedHeader(header).heldBytes).toBe(Buffer.byteLength(header));
  });
});
