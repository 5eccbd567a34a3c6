// What the index writes for served claims, on a real Redis: the record script
// is given each record without its token and the token apart, and writes the
// record (token included) and its claimed event (without it); the records of
// one turn go in one call. For any records the schema accepts, each reads
// back as exactly what it stands for.
import { claimEventSchema, claimRecordSchema, federationPeerIdSchema, type ClaimRecord } from '@warmpool/api';
import { startRedis, type TestRedis } from '@warmpool/harness';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClaimIndex } from '../../src/provisioning/claim-index.js';
import { scopeOf } from '../../src/provisioning/claim-index-values.js';

/** Any code point, lone surrogates included (the schema takes any string; 'binary' alone leaves them out). */
const unit = fc.oneof(fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }), fc.constantFrom('\ud800', '\udfff'));
const text = fc.string({ unit, minLength: 1, maxLength: 12 });
/** A pool key's part: printable, no whitespace (poolKeySchema). */
const keyPart = fc.stringMatching(/^[a-z0-9.:/_-]{1,12}$/);
const maybe = <T>(arb: fc.Arbitrary<T>): fc.Arbitrary<T | undefined> => fc.option(arb, { nil: undefined });

const records: fc.Arbitrary<ClaimRecord> = fc
  .record({
    id: text,
    token: fc.string({ unit, maxLength: 40 }),
    deadline: fc.string(),
    ownerAddr: fc.string(),
    node: text,
    namespace: text,
    warmPool: fc.string(),
    claimRef: text,
    tier: fc.constantFrom('warm', 'cold'),
    door: fc.constantFrom('crd', 'http', 'fed'),
    owner: text,
    // A peer is a federation peer id (its key space percent-encodes it); every other field any string.
    peer: maybe(
      fc
        .stringMatching(/^[a-z0-9]([-a-z0-9.]{0,10}[a-z0-9])?$/)
        .filter((p) => federationPeerIdSchema.safeParse(p).success),
    ),
    cluster: maybe(text),
    key: maybe(fc.record({ template: keyPart, net: keyPart, size: keyPart })),
  })
  // Optional fields absent rather than undefined, as a parsed record has them.
  .map((r) => JSON.parse(JSON.stringify(r)) as unknown)
  .map((r) => claimRecordSchema.parse(r));

describe('the record script (real Redis)', () => {
  let server: TestRedis;
  let redis: Redis;
  let index: ClaimIndex;

  beforeAll(async () => {
    server = await startRedis();
    redis = new Redis(server.url);
    index = new ClaimIndex(redis, { prefix: 'test:' });
  });
  afterAll(async () => {
    index?.close();
    redis?.disconnect();
    await server?.stop();
  });

  it('writes each record of a turn, token included, and its claimed event without the token, in order', async () => {
    let serial = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(records, { minLength: 1, maxLength: 5 }), async (generated) => {
        // Each record a claimRef of its own: a second record of one claimRef and another sandbox is refused.
        const turn = generated.map((r) => ({ ...r, claimRef: `${r.claimRef}~${++serial}` }));
        // Added in one turn, so one script call writes them all (each at its own place in the arguments).
        expect(await Promise.all(turn.map((record) => index.record(record, '')))).toEqual(
          turn.map(() => ({ ok: true })),
        );
        for (const record of turn)
          expect(JSON.parse((await redis.get(index.refKey(scopeOf(record), record.claimRef))) ?? 'null')).toEqual(
            record,
          );
        const entries = (await redis.xrevrange(index.eventsKey, '+', '-', 'COUNT', turn.length)) as Array<
          [string, string[]]
        >;
        const events = entries.reverse().map(([, fields]) => JSON.parse(fields[1] ?? 'null') as { record: object });
        expect(events).toEqual(turn.map(({ token: _token, ...shown }) => ({ op: 'claimed', record: shown })));
        for (const event of events) {
          expect(claimEventSchema.parse(event)).toEqual(event);
          expect('token' in event.record).toBe(false);
        }
      }),
      { numRuns: 150 },
    );
  });
});
