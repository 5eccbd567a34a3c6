// ioredis, loaded with String.prototype kept fast. ioredis 6.0.0 defines
// `class VerbatimString extends String` (its RESP3 decoder) when it loads.
// V8 then keeps String.prototype as a dictionary, and every String method an
// optimized function calls (charCodeAt, indexOf, slice, toLowerCase…) becomes
// a generic call in the whole process: 3–24× slower
// (bench/string-methods.bench.ts), 8–18 µs per HTTP claim in the profile.
// Adding a property to an object whose prototype is String.prototype makes V8
// turn String.prototype back into a fast prototype, and a subclass defined
// later leaves it fast. ioredis 6.1.0 does the same after its class, so with
// it this is a no-op; it stays so that no ioredis release that defines such a
// class without the fix can put the control plane back on that cliff.
// redis/connection.ts, which builds every Redis client of the control plane,
// imports this module; test/repo/string-prototype-fast.test.ts checks that
// the control plane's modules leave String.prototype fast.
import 'ioredis';

(Object.create(String.prototype) as Record<string, unknown>)['warmpoolFastStringPrototype'] = true;
