// The worker's quick read of a batch job must be batchJobSchema.parse, only
// faster: on any JSON a replica (or whatever wrote to Redis) can leave as a
// job's data, the same verdict, the same value, and zod's own error for what
// it leaves to zod.
import { anyJsonField, parsedJson } from '@warmpool/harness/arbitraries';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { batchJobSchema, quickBatchJob, readBatchJob } from '../src/index.js';

const text: fc.Arbitrary<string> = fc.oneof(
  fc.string({ maxLength: 5 }),
  fc.constantFrom('', 'a', 'replica-1', 'default', 'pool-a', 'python:3.13', 'a b', '\u200b', '\ud800', 'x\n'),
  fc.constantFrom(252, 253, 254).map((n) => 'a'.repeat(n)),
  fc.constantFrom(126, 127, 254).map((n) => '😀'.repeat(n)),
);

const number: fc.Arbitrary<number> = fc.oneof(
  fc.integer({ min: -3, max: 100_000 }),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(0, -0, 0.5, 1, 1e21, 2 ** 53, 2 ** 53 + 2, Number.MIN_VALUE, 1_764_000_000_000.25),
);

const anyValue = anyJsonField(text, number);

/** Mostly `valid`, sometimes anything: jobs near a valid one, so both checks see many valid jobs and many near misses. */
const mostly = <T>(valid: fc.Arbitrary<T>, other: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> =>
  fc.oneof({ weight: 12, arbitrary: valid }, { weight: 1, arbitrary: other });

/** Now and then a field no schema names (zod strips it). */
const stray: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 20, arbitrary: fc.constant(undefined) },
  { weight: 1, arbitrary: anyValue },
);

const claimLike: fc.Arbitrary<unknown> = mostly(
  fc.record({
    claimRef: mostly(fc.constantFrom('c-1', 'ref'), text),
    ttlSeconds: mostly(fc.constantFrom(1, 3600), number),
    door: mostly(fc.constantFrom('crd', 'http', 'fed'), text),
    owner: mostly(fc.constantFrom('uid-1', 'peer-a'), text),
    generated: mostly(fc.boolean(), anyValue),
    extra: stray,
  }),
  anyValue,
);

const keyLike: fc.Arbitrary<unknown> = mostly(
  fc.record(
    {
      template: mostly(fc.constantFrom('python:3.13', 'bench'), text),
      net: mostly(fc.constantFrom('none', 'internet', 'odd'), text),
      size: mostly(fc.constantFrom('small', 'large'), text),
      extra: stray,
    },
    { requiredKeys: ['template'] },
  ),
  anyValue,
);

const jobLike: fc.Arbitrary<unknown> = fc.record(
  {
    replyTo: mostly(fc.constant('replica-1'), fc.oneof(text, anyValue)),
    namespace: mostly(fc.constant('default'), text),
    warmPool: mostly(fc.constant('pool-a'), text),
    key: keyLike,
    deadline: mostly(fc.constant(1_764_000_030_000), fc.oneof(number, anyValue)),
    queuedAt: fc.oneof(number, anyValue),
    claims: mostly(fc.array(claimLike, { minLength: 1, maxLength: 4 }), fc.oneof(fc.constant([]), anyValue)),
    extra: stray,
  },
  { requiredKeys: ['replyTo', 'namespace', 'warmPool', 'key', 'deadline', 'claims'] },
);

/** What a job's data can be once BullMQ has JSON-parsed it. */
const data = parsedJson({
  near: [{ weight: 8, arbitrary: jobLike }],
  edgeCases: [
    '{"__proto__":{"replyTo":"r"},"replyTo":"r","namespace":"n","warmPool":"p","key":{"template":"t","net":"none","size":"small"},"deadline":1,"claims":[{"claimRef":"c","ttlSeconds":1,"door":"http","owner":"o","generated":false}]}',
    '{"replyTo":"r","namespace":"n","warmPool":"p","key":{"template":"t"},"deadline":1,"claims":[{"claimRef":"c","ttlSeconds":1,"door":"http","owner":"o","generated":false}]}',
    '{"replyTo":"r","namespace":"n","warmPool":"p","key":{"template":"t","net":"none","size":"small"},"deadline":1e400,"claims":[{"claimRef":"c","ttlSeconds":1,"door":"http","owner":"o","generated":false}]}',
    '{"replyTo":"r","namespace":"n","warmPool":"p","key":{"template":"t","net":"none","size":"small"},"deadline":1,"claims":[]}',
  ],
});

const VALID = {
  replyTo: 'replica-1',
  namespace: 'default',
  warmPool: 'pool-a',
  key: { template: 'python:3.13', net: 'none', size: 'small' },
  deadline: 1_764_000_030_000,
  queuedAt: 1_764_000_000_000.5,
  claims: [
    { claimRef: 'c-0123456789abcdef01234567', ttlSeconds: 3600, door: 'http', owner: 'digest', generated: true },
    { claimRef: 'mine', ttlSeconds: 60, door: 'crd', owner: 'uid-1', generated: false },
  ],
};

describe('reading a batch job', () => {
  it('takes the common job by the quick check, unchanged', () => {
    expect(quickBatchJob(VALID)).toBe(VALID);
    expect(readBatchJob(VALID)).toEqual(batchJobSchema.parse(VALID));
  });

  it('is tested on jobs of every kind: taken quickly, left to zod and accepted, refused', () => {
    const sample = fc.sample(data, { numRuns: 2_000, seed: 21 });
    const quick = sample.filter((job) => quickBatchJob(job) !== undefined).length;
    const valid = sample.filter((job) => batchJobSchema.safeParse(job).success).length;
    expect(quick).toBeGreaterThan(100);
    expect(valid - quick).toBeGreaterThan(100);
    expect(sample.length - valid).toBeGreaterThan(100);
  });

  it('accepts only what zod accepts, with the same value', () => {
    fc.assert(
      fc.property(data, (job) => {
        const quick = quickBatchJob(job);
        if (quick !== undefined) expect(batchJobSchema.parse(job)).toEqual(quick);
      }),
      { numRuns: 5_000 },
    );
  });

  it('answers as zod does on any job: the same value, or zod’s own error', () => {
    fc.assert(
      fc.property(data, (job) => {
        const expected = batchJobSchema.safeParse(job);
        if (expected.success) expect(readBatchJob(job)).toEqual(expected.data);
        else expect(() => readBatchJob(job)).toThrow(expected.error.message);
      }),
      { numRuns: 5_000 },
    );
  });

  it('leaves to zod what zod would change: a key part to default, a field to strip', () => {
    expect(quickBatchJob({ ...VALID, key: { template: 'python:3.13' } })).toBeUndefined();
    expect(readBatchJob({ ...VALID, key: { template: 'python:3.13' } }).key).toEqual({
      template: 'python:3.13',
      net: 'none',
      size: 'small',
    });
    expect(quickBatchJob({ ...VALID, stray: 1 })).toBeUndefined();
    expect(readBatchJob({ ...VALID, stray: 1 })).not.toHaveProperty('stray');
  });
});
