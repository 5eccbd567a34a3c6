// fast-check arbitraries for the property specs that hold a quick check to its
// zod schema: JSON values as a route or a worker sees them after JSON.parse.
// Each spec brings its own strings and numbers (the limits of its schema); the
// shapes around them are shared here.
import fc from 'fast-check';

/**
 * Any value a JSON field can hold, with `text` and `number` the spec's own:
 * booleans, null, small arrays and small objects besides.
 */
export function anyJsonField(text: fc.Arbitrary<string>, number: fc.Arbitrary<number>): fc.Arbitrary<unknown> {
  return fc.oneof(
    text,
    number,
    fc.boolean(),
    fc.constant(null),
    fc.array(fc.integer(), { maxLength: 2 }),
    fc.dictionary(fc.string({ maxLength: 3 }), fc.integer(), { maxKeys: 2 }),
  );
}

export interface ParsedJsonOptions {
  /** Values near the schema's, each with its weight; sent through JSON as a client would send them. */
  near: ReadonlyArray<{ weight: number; arbitrary: fc.Arbitrary<unknown> }>;
  /**
   * JSON texts whose parse matters: `__proto__` and `constructor` keys, a key twice, -0, 1e400 (JSON.parse gives
   * Infinity), and whatever else the schema is known to meet.
   */
  edgeCases?: readonly string[];
}

/** What a caller can hand over once JSON.parse has run: mostly values near the schema's, now and then any JSON. */
export function parsedJson(options: ParsedJsonOptions): fc.Arbitrary<unknown> {
  const edgeCases = options.edgeCases ?? [];
  return fc.oneof(
    ...options.near.map(({ weight, arbitrary }) => ({ weight, arbitrary: arbitrary.map(throughJson) })),
    { weight: 1, arbitrary: fc.jsonValue() },
    ...(edgeCases.length > 0
      ? [{ weight: 1, arbitrary: fc.constantFrom(...edgeCases).map((raw) => JSON.parse(raw) as unknown) }]
      : []),
  );
}

function throughJson(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value)) as unknown;
}
