// The create route's quick body check must be createClaimRequestSchema, only
// faster: same verdict and same value on any JSON a client can send, and the
// same refusal (zod's words) for what it leaves to zod.
import { createClaimRequestSchema, isDnsLabel, claimRefSchema } from '@warmpool/api';
import { anyJsonField, parsedJson } from '@warmpool/harness/arbitraries';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createClaimBodySchema, quickCreateClaimRequest } from '../../src/http/claims/create-body.js';

const text: fc.Arbitrary<string> = fc.oneof(
  fc.string({ maxLength: 6 }),
  fc.string({ unit: 'grapheme', maxLength: 4 }),
  // DNS labels and near misses (a claimRef's rules).
  fc.stringMatching(/^[a-z0-9-]{0,5}$/),
  fc.constantFrom('-a', 'a-', 'A', 'a_b', 'a.b', 'claim-1', '0'),
  // Around the length limits (63 for a claimRef, 253 for names, 512 for target), in UTF-16 units and surrogate pairs.
  fc.constantFrom(62, 63, 64, 252, 253, 254, 511, 512, 513).map((n) => 'a'.repeat(n)),
  fc.constantFrom(126, 127, 255, 256).map((n) => '😀'.repeat(n)),
  fc.constant(''),
);

const number: fc.Arbitrary<number> = fc.oneof(
  fc.integer({ min: -5, max: 100_000 }),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(0, -0, 0.5, 1, 86_400, 86_401, 1e21, 2 ** 53, Number.MIN_VALUE),
);

const anyField = anyJsonField(text, number);

const createLike: fc.Arbitrary<unknown> = fc.record(
  {
    warmPool: fc.oneof(text, anyField),
    env: fc.oneof(text, anyField),
    scalingGroup: fc.oneof(text, anyField),
    target: fc.oneof(text, anyField),
    ttlSeconds: fc.oneof(number, anyField),
    claimRef: fc.oneof(text, anyField),
    extra: anyField,
  },
  { requiredKeys: [] },
);

/** Bodies near valid ones: a pool or an Env, with each optional field at or around its limits. */
const nearValid: fc.Arbitrary<unknown> = fc.oneof(
  fc.record(
    { warmPool: fc.constantFrom('p', 'pool-a'), ttlSeconds: number, claimRef: text },
    { requiredKeys: ['warmPool'] },
  ),
  fc.record(
    { env: fc.constantFrom('e', 'env-a'), scalingGroup: text, target: text, ttlSeconds: number, claimRef: text },
    { requiredKeys: ['env'] },
  ),
);

/** What a client can send, as the route sees it after JSON.parse. */
const body = parsedJson({
  near: [
    { weight: 6, arbitrary: createLike },
    { weight: 4, arbitrary: nearValid },
  ],
  edgeCases: [
    '{"warmPool":"p","ttlSeconds":-0}',
    '{"warmPool":"p","ttlSeconds":1e400}',
    '{"__proto__":{"warmPool":"p"}}',
    '{"__proto__":{"warmPool":"p"},"warmPool":"q"}',
    '{"warmPool":"a","warmPool":"b"}',
    '{"constructor":"x","warmPool":"p"}',
    '{"warmPool":"p","claimRef":null}',
    '{"env":"e","scalingGroup":""}',
    '[{"warmPool":"p"}]',
  ],
});

/** The quick check counts UTF-16 units; zod's count may be smaller, so astral strings near a limit are zod's. */
const fitsInUnits = (json: unknown): boolean =>
  typeof json === 'object' &&
  json !== null &&
  Object.values(json).every((value) => typeof value !== 'string' || value.length <= 253);

describe('the create route’s quick body check', () => {
  it('accepts only what createClaimRequestSchema accepts, with the same value', () => {
    let accepted = 0;
    fc.assert(
      fc.property(body, (json) => {
        const quick = quickCreateClaimRequest(json);
        if (quick === undefined) return;
        accepted++;
        const zod = createClaimRequestSchema.safeParse(json);
        expect(zod.success).toBe(true);
        expect(quick).toStrictEqual(zod.data);
      }),
      { numRuns: 20_000 },
    );
    // The generator must reach valid bodies often enough for the property to say something.
    expect(accepted).toBeGreaterThan(300);
  });

  it('takes every valid body whose strings fit the limits in UTF-16 units', () => {
    fc.assert(
      fc.property(body, (json) => {
        if (createClaimRequestSchema.safeParse(json).success && fitsInUnits(json))
          expect(quickCreateClaimRequest(json)).toBeDefined();
      }),
      { numRuns: 20_000 },
    );
  });

  it('answers like createClaimRequestSchema, refusals and their messages included', () => {
    fc.assert(
      fc.property(body, (json) => {
        expect(createClaimBodySchema.safeParse(json)).toStrictEqual(createClaimRequestSchema.safeParse(json));
      }),
      { numRuns: 5_000 },
    );
  });

  it('leaves a refusal to zod, whose words the 400 carries', () => {
    expect(quickCreateClaimRequest({ warmPool: 'p', env: 'e' })).toBeUndefined();
    expect(createClaimBodySchema.safeParse({ warmPool: 'p', env: 'e' }).error?.issues[0]?.message).toBe(
      'give exactly one of warmPool and env',
    );
    expect(
      createClaimBodySchema.safeParse({ warmPool: 'p', claimRef: 'Not_A_Label' }).error?.issues[0]?.message,
    ).toMatch(/^must be a DNS label/);
  });
});

describe('isDnsLabel', () => {
  it('is claimRefSchema’s verdict', () => {
    fc.assert(
      fc.property(fc.oneof(text, anyField), (value) => {
        expect(isDnsLabel(value)).toBe(claimRefSchema.safeParse(value).success);
      }),
      { numRuns: 20_000 },
    );
  });
});
