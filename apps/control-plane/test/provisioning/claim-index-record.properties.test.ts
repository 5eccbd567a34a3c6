// What the index writes for a served claim, on a real Redis: the record script
// is given the record without its token and the token apart, and writes the
// record (token included) and its claimed event (without it). For any record
// the schema accepts, each reads back as exactly what it stands for.
import { claimEventSchema, claimRecordSchema, type ClaimRecord } from '@warmpool/api';
import { startRedis, type TestRedis } from '@warmpool/harness';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClaimIndex } from '../../src/provisioning/claim-index.js';
import { scopeOf } from '../../src/provisioning/claim-index-values.js';

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

  it('writes the record, token included, and its claimed event without the token', async () => {
    let serial = 0;
    await fc.assert(
      fc.asyncProperty(records, async (generated) => {
        // Each record a claimRef of its own: a second record of one claimRef and another sandbox is refused.
        const record = { ...generated, claimRef: `${generated.claimRef}~${++serial}` };
        expect(await index.record(record, '')).toEqual({ ok: true });
        expect(JSON.parse((await redis.get(index.refKey(scopeOf(record), record.claimRef))) ?? 'null')).toEqual(record);
        const [[, fields] = ['', []]] = (await redis.xrevrange(index.eventsKey, '+', '-', 'COUNT', 1)) as Array<
          [string, string[]]
        >;
        const event = JSON.parse(fields[1] ?? 'null') as { record: object };
        const { token: _token, ...shown } = record;
        expect(event).toEqual({ op: 'claimed', record: shown });
        expect(claimEventSchema.parse(event)).toEqual(event);
        expect('token' in event.record).toBe(false);
      }),
      { numRuns: 200 },
    );
  });
});
