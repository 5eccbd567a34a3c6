// A node's grant is read by hand for the common answer; what it reads must be
// what tolerantClaimResponseSchema reads, on any JSON a node can answer.
import { normalizeOwnerAddr, tolerantClaimResponseSchema } from '@warmpool/api';
import { parsedJson } from '@warmpool/harness/arbitraries';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { claimAnswerOfJson, grantOf } from '../../src/agents/answers.js';

const text: fc.Arbitrary<string> = fc.oneof(
  fc.string({ maxLength: 6 }),
  fc.constantFrom('', 'sb_1', '2026-12-02T16:00:00Z', '10.0.0.7:9090', 'http://10.0.0.7:9090', 'ftp://x:1'),
);

const anyField: fc.Arbitrary<unknown> = fc.oneof(
  text,
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.oneof(text, fc.dictionary(fc.constantFrom('name', 'path'), text, { maxKeys: 2 })), { maxLength: 2 }),
  fc.dictionary(fc.string({ maxLength: 3 }), fc.integer(), { maxKeys: 2 }),
);

const grantLike: fc.Arbitrary<unknown> = fc.record(
  {
    id: fc.oneof({ weight: 3, arbitrary: text }, anyField),
    token: fc.oneof({ weight: 3, arbitrary: text }, anyField),
    deadline: fc.oneof({ weight: 3, arbitrary: text }, anyField),
    owner_addr: fc.oneof({ weight: 3, arbitrary: text }, anyField),
    template_digest: anyField,
    from_checkpoint: anyField,
    net_route: anyField,
    volumes: anyField,
    extra: anyField,
  },
  { requiredKeys: [] },
);

/** Grants as nodes send them: the four fields warmpool reads, now and then one it does not. */
const nearGrant: fc.Arbitrary<unknown> = fc
  .tuple(
    fc.record(
      { id: text, token: text, deadline: text, owner_addr: text },
      { requiredKeys: ['id', 'token', 'deadline'] },
    ),
    fc.option(fc.record({ net_route: anyField, volumes: anyField }, { requiredKeys: [] }), { freq: 4 }),
  )
  .map(([grant, more]) => ({ ...grant, ...more }));

/** What a node can answer, after JSON.parse. */
const answer = parsedJson({
  near: [
    { weight: 6, arbitrary: grantLike },
    { weight: 6, arbitrary: nearGrant },
  ],
});

/** What warmpool reads of a grant. */
const readOf = ({ id, token, deadline, owner_addr: ownerAddr }: ReturnType<typeof grantOf> & object): unknown => ({
  id,
  token,
  deadline,
  ownerAddr,
});

describe("reading a node's grant", () => {
  it('reads what tolerantClaimResponseSchema reads, and refuses what it refuses', () => {
    let read = 0;
    fc.assert(
      fc.property(answer, (json) => {
        const grant = grantOf(json);
        const zod = tolerantClaimResponseSchema.safeParse(json);
        expect(grant !== undefined).toBe(zod.success);
        if (grant === undefined || !zod.success) return;
        read++;
        expect(readOf(grant)).toStrictEqual(readOf(zod.data));
      }),
      { numRuns: 20_000 },
    );
    expect(read).toBeGreaterThan(300);
  });

  it('hands on the owner address normalized, answer after answer', () => {
    const grant = (ownerAddr: string): unknown => ({ id: 'sb_1', token: 't', deadline: 'd', owner_addr: ownerAddr });
    for (let i = 0; i < 3; i++) {
      expect(claimAnswerOfJson(200, grant('http://10.0.0.7:9090'))).toMatchObject({
        ok: true,
        claim: { ownerAddr: '10.0.0.7:9090' },
      });
      expect(claimAnswerOfJson(200, grant('10.0.0.8:9090'))).toMatchObject({
        ok: true,
        claim: { ownerAddr: '10.0.0.8:9090' },
      });
      expect(claimAnswerOfJson(200, grant('ftp://10.0.0.7:9090'))).toMatchObject({
        ok: true,
        claim: { ownerAddr: undefined },
      });
    }
    expect(normalizeOwnerAddr('10.0.0.7')).toBeUndefined();
    expect(normalizeOwnerAddr('10.0.0.7')).toBeUndefined();
  });

  it("leaves every field of the schema it does not read to zod, whichever the schema's fields are", () => {
    const read = new Set(['id', 'token', 'deadline', 'owner_addr']);
    const unread = Object.keys(tolerantClaimResponseSchema.shape).filter((field) => !read.has(field));
    expect(unread.length).toBeGreaterThan(0);
    for (const field of unread)
      for (const value of [5, 'x', '', null, true, [], [{}], {}]) {
        const json = { id: 'sb_1', token: 't', deadline: 'd', [field]: value };
        expect(grantOf(json) !== undefined, `${field}: ${JSON.stringify(value)}`).toBe(
          tolerantClaimResponseSchema.safeParse(json).success,
        );
      }
  });

  it('reads a grant with fields warmpool does not use through the schema', () => {
    expect(grantOf({ id: 'sb_1', token: 't', deadline: 'd', net_route: 'relay' })).toMatchObject({
      id: 'sb_1',
      token: 't',
      deadline: 'd',
    });
    expect(grantOf({ id: 'sb_1', token: 't', deadline: 'd', volumes: 'not a list' })).toBeUndefined();
  });
});
