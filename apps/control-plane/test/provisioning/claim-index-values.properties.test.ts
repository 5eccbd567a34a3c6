// What the index writes for a served claim: the record (with its token) and
// its claimed event (without it), both made from one serialisation. For any
// record the schema accepts, each reads back as exactly what it stands for.
import { claimEventSchema, claimRecordSchema, type ClaimRecord } from '@warmpool/api';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { recordAndEventJson } from '../../src/provisioning/claim-index-values.js';

const text = fc.string({ unit: 'binary', minLength: 1, maxLength: 12 });
/** A pool key's part: printable, no whitespace (poolKeySchema). */
const keyPart = fc.stringMatching(/^[a-z0-9.:/_-]{1,12}$/);
const maybe = <T>(arb: fc.Arbitrary<T>): fc.Arbitrary<T | undefined> => fc.option(arb, { nil: undefined });

const records: fc.Arbitrary<ClaimRecord> = fc
  .record({
    id: text,
    token: fc.string({ unit: 'binary', maxLength: 40 }),
    deadline: fc.string(),
    ownerAddr: fc.string(),
    node: text,
    namespace: text,
    warmPool: fc.string(),
    claimRef: text,
    tier: fc.constantFrom('warm', 'cold'),
    door: fc.constantFrom('crd', 'http', 'fed'),
    owner: text,
    peer: maybe(text),
    cluster: maybe(text),
    key: maybe(fc.record({ template: keyPart, net: keyPart, size: keyPart })),
  })
  // Optional fields absent rather than undefined, as a parsed record has them.
  .map((r) => JSON.parse(JSON.stringify(r)) as unknown)
  .map((r) => claimRecordSchema.parse(r));

describe('recordAndEventJson', () => {
  it('writes the record, token included, and its claimed event without the token', () => {
    fc.assert(
      fc.property(records, (record) => {
        const { recordJson, eventJson } = recordAndEventJson(record);
        expect(JSON.parse(recordJson)).toEqual(record);
        const { token: _token, ...shown } = record;
        const event = JSON.parse(eventJson) as { record: object };
        expect(event).toEqual({ op: 'claimed', record: shown });
        expect(claimEventSchema.parse(event)).toEqual(event);
        expect('token' in event.record).toBe(false);
      }),
    );
  });
});
