// The claim body's quick check must be claimRequestSchema, only faster: same
// verdict and same value (down to the bytes forwarded to sandboxd) on any JSON
// a client can send.
import { agentClaimRequestSchema as claimRequestSchema } from '@warmpool/api';
import { anyJsonField, parsedJson } from '@warmpool/harness/arbitraries';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  claimBodySchema,
  forwardedClaimJson,
  quickClaimRequest,
  quickForwardedClaimJson,
} from '../src/api/claim-body.js';

// Every character JavaScript's \s matches, and a few that only look like whitespace.
const WHITESPACE = [
  ' ',
  '\t',
  '\n',
  '\v',
  '\f',
  '\r',
  '\u00a0',
  '\u1680',
  '\u2000',
  '\u2005',
  '\u200a',
  '\u2028',
  '\u2029',
  '\u202f',
  '\u205f',
  '\u3000',
  '\ufeff',
];
const NOT_WHITESPACE = ['\u200b', '\u180e', '\u0085', '\u00ad', '\0'];

const text: fc.Arbitrary<string> = fc.oneof(
  fc.string({ maxLength: 6 }),
  fc.string({ unit: 'grapheme', maxLength: 4 }),
  fc
    .tuple(fc.string({ maxLength: 3 }), fc.constantFrom(...WHITESPACE, ...NOT_WHITESPACE), fc.string({ maxLength: 3 }))
    .map((parts) => parts.join('')),
  // Around the length limits (253 for key parts, 512 for claim_ref), in UTF-16 units and in surrogate pairs.
  fc.constantFrom(252, 253, 254, 511, 512, 513).map((n) => 'x'.repeat(n)),
  fc.constantFrom(126, 127).map((n) => '😀'.repeat(n)),
  fc.constant(''),
);

const number: fc.Arbitrary<number> = fc.oneof(
  fc.integer({ min: -5, max: 100_000 }),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(0, -0, 0.5, 1e21, 2 ** 53 - 1, 2 ** 53, -(2 ** 53), Number.MAX_VALUE, Number.MIN_VALUE),
);

const anyField = anyJsonField(text, number);

const claimLike: fc.Arbitrary<unknown> = fc.record(
  {
    template: fc.oneof(text, anyField),
    net: fc.oneof(text, anyField),
    size: fc.oneof(text, anyField),
    ttl_seconds: fc.oneof(number, anyField),
    claim_ref: fc.oneof(text, anyField),
    no_redirect: fc.oneof(fc.constant(true), anyField),
    require_promoted: fc.oneof(fc.boolean(), anyField),
    extra: anyField,
  },
  { requiredKeys: [] },
);

/** What a client can send, as the agent sees it after JSON.parse. */
const body = parsedJson({
  near: [{ weight: 6, arbitrary: claimLike }],
  edgeCases: [
    '{"template":"img","ttl_seconds":-0}',
    '{"template":"img","ttl_seconds":1e400}',
    '{"__proto__":{"template":"img"}}',
    '{"__proto__":{"template":"img"},"template":"b"}',
    '{"template":"a","template":"b"}',
    '{"constructor":"x","template":"img"}',
    '{"template":"img","net":null}',
  ],
});

/**
 * zod measures strings in code points; the quick check in UTF-16 units, so it leaves astral-heavy strings near a limit
 * to zod.
 */
const fitsInUnits = (json: unknown): boolean =>
  typeof json === 'object' &&
  json !== null &&
  Object.entries(json).every(
    ([key, value]) => typeof value !== 'string' || value.length <= (key === 'claim_ref' ? 512 : 253),
  );

describe('the quick claim check', () => {
  it('accepts only what claimRequestSchema accepts, with the same value and the same encoding', () => {
    let accepted = 0;
    fc.assert(
      fc.property(body, (json) => {
        const quick = quickClaimRequest(json);
        const zod = claimRequestSchema.safeParse(json);
        if (quick !== undefined) {
          accepted++;
          expect(zod.success).toBe(true);
          expect(quick).toStrictEqual(zod.data);
          expect(JSON.stringify(quick)).toBe(JSON.stringify(zod.data));
          // The direct path's one-step body: the bytes sandboxd would get from zod's value.
          expect(quickForwardedClaimJson(json)).toBe(forwardedClaimJson(zod.data as NonNullable<typeof zod.data>));
        } else expect(quickForwardedClaimJson(json)).toBeUndefined();
      }),
      { numRuns: 20_000 },
    );
    // The generator must reach valid claims often enough for the property to say something.
    expect(accepted).toBeGreaterThan(500);
  });

  it('takes every valid claim whose strings fit the limits in UTF-16 units', () => {
    fc.assert(
      fc.property(body, (json) => {
        if (claimRequestSchema.safeParse(json).success && fitsInUnits(json))
          expect(quickClaimRequest(json)).toBeDefined();
      }),
      { numRuns: 20_000 },
    );
  });

  it('answers like claimRequestSchema, refusals and their messages included', () => {
    fc.assert(
      fc.property(body, (json) => {
        expect(claimBodySchema.safeParse(json)).toStrictEqual(claimRequestSchema.safeParse(json));
      }),
      { numRuns: 5_000 },
    );
  });

  it('fills in net and size as the schema does, and leaves a key the schema does not know to zod, which refuses it', () => {
    expect(quickClaimRequest({ template: 'img', ttl_seconds: 60, no_redirect: true })).toStrictEqual({
      template: 'img',
      net: 'none',
      size: 'small',
      ttl_seconds: 60,
      no_redirect: true,
    });
    expect(quickClaimRequest({ template: 'img', volumes: [{ name: 'v' }] })).toBeUndefined();
    const refused = claimBodySchema.safeParse({ template: 'img', volumes: [{ name: 'v' }] });
    expect(refused.error?.issues[0]).toMatchObject({ code: 'unrecognized_keys', keys: ['volumes'] });
  });

  it('leaves a body it does not accept to zod, whose words the 400 carries', () => {
    expect(quickClaimRequest({ template: 'a b' })).toBeUndefined();
    const refused = claimBodySchema.safeParse({ template: 'a b' });
    expect(refused.success).toBe(false);
    expect(refused.error?.issues[0]?.message).toMatch(/^must be printable: no whitespace/);
  });
});
