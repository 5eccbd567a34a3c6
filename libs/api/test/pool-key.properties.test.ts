// Pool key components (image references, nets, sizes) hold printable
// characters only, wherever a key enters: SetPools, a claim, a template read.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { claimRequestSchema, poolKeySchema, PRINTABLE_KEY_PART, setPoolsRequestSchema } from '../src/index.js';

/** One of every kind of character a key part must not hold. */
const NOT_PRINTABLE = {
  NUL: '\0',
  'C0 control (BEL)': '\x07',
  'C0 control (ESC)': '\x1b',
  DEL: '\x7f',
  'C1 control (U+0080)': '\x80',
  'C1 control (NEL)': '\x85',
  'C1 control (CSI)': '\x9b',
  'lone high surrogate': '\ud800',
  'lone low surrogate': '\udfff',
  'line separator U+2028': '\u2028',
  'paragraph separator U+2029': '\u2029',
  'no-break space': '\u00a0',
  'zero-width space': '\u200b',
  'right-to-left override': '\u202e',
  'byte order mark': '\ufeff',
  'soft hyphen': '\u00ad',
  'private use': '\ue000',
  space: ' ',
  tab: '\t',
  newline: '\n',
} as const;

const REAL_IMAGES = [
  'python:3.13',
  'ghcr.io/acme/agent-runtime:v1.2.3',
  'registry.example.com:5000/team/sandbox@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef',
  'ghcr.io/acme/agent-runtime:v1.2.3@sha256:fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210',
  'docker.io/library/busybox:latest',
  'localhost/ünïcödé-räpo:1', // printable beyond ASCII is printable
];

/** A key part with `bad` somewhere inside printable text. */
const withBad = (bad: string): fc.Arbitrary<string> =>
  fc
    .tuple(fc.stringMatching(/^[a-z0-9./:@-]{0,20}$/), fc.stringMatching(/^[a-z0-9./:@-]{0,20}$/))
    .map(([before, after]) => `${before}${bad}${after}`);

const everyKeyEntry = {
  'a SetPools target': (part: string) =>
    setPoolsRequestSchema.safeParse({ pools: [{ template: part, warm: 1 }] }).success,
  'a claim': (part: string) => claimRequestSchema.safeParse({ template: part }).success,
  // A claim's net and size are closed sets (sandboxd-wire.test.ts); a key as read from a template is not.
  "a pool key's net": (part: string) => poolKeySchema.safeParse({ template: 'python:3.13', net: part }).success,
  "a pool key's size": (part: string) => poolKeySchema.safeParse({ template: 'python:3.13', size: part }).success,
};

describe('pool key components', () => {
  for (const [where, accepts] of Object.entries(everyKeyEntry)) {
    describe(`in ${where}`, () => {
      it.each(Object.entries(NOT_PRINTABLE))('refuse %s anywhere in the value', (_name, bad) => {
        fc.assert(fc.property(withBad(bad), (part) => !accepts(part)));
      });

      it.each(REAL_IMAGES)('accept %s', (image) => {
        expect(accepts(image)).toBe(true);
      });
    });
  }

  it('refuse any string holding a control, format, private-use, separator or surrogate code unit', () => {
    const category = /[\p{Cc}\p{Cf}\p{Co}\p{Z}\s]/u;
    const unit = fc.integer({ min: 0, max: 0xffff }).map((code) => String.fromCharCode(code));
    const ascii = fc.string({ unit: 'grapheme-ascii', maxLength: 8 });
    fc.assert(
      fc.property(ascii, unit, ascii, (before, char, after) => {
        const code = char.charCodeAt(0);
        const surrogate = code >= 0xd800 && code <= 0xdfff;
        if (!surrogate && !category.test(char)) return true;
        // Printable ASCII on both sides, so a surrogate here is always a lone one.
        return !PRINTABLE_KEY_PART.test(`a${before}${char}${after}z`);
      }),
      { numRuns: 2_000 },
    );
  });

  it('two distinct lone surrogates can no longer become two pools that print alike', () => {
    const pools = [
      { template: 'img\ud800', warm: 1 },
      { template: 'img\ud801', warm: 1 },
    ];
    expect(setPoolsRequestSchema.safeParse({ pools }).success).toBe(false);
  });

  it('explain the refusal', () => {
    const result = claimRequestSchema.safeParse({ template: 'python\0:3.13' });
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.message).toMatch(/must be printable/);
  });
});
