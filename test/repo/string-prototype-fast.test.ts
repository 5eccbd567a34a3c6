// No app's code leaves String.prototype in V8's dictionary mode. A module
// that makes String.prototype the prototype of another object (ioredis
// 6.0.0's `class VerbatimString extends String`, loaded with the control
// plane) turns it into a dictionary, and from then on every string method
// an optimized function calls (charCodeAt, indexOf, slice, toLowerCase…) is
// a generic call, in the whole process: 3–24× slower
// (bench/string-methods.bench.ts), 8–18 µs per HTTP claim in the claim
// path's profile (docs/benchmarks.md). The control plane makes it fast again right
// after loading ioredis (src/redis/fast-string-prototype.ts); this keeps that
// in place and any other dependency from bringing the cliff back unnoticed.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { REPO_ROOT } from '@warmpool/harness';
import { describe, expect, it } from 'vitest';

const APPS = ['control-plane', 'node-agent', 'router', 'fake-sandboxd'] as const;

/** Whether String.prototype has fast properties after `source` ran (a module, so it may import). */
function stringPrototypeFastAfter(source: string): boolean {
  const probe = `${source}\nconsole.log(%HasFastProperties(String.prototype));\nprocess.exit(0);`;
  const out = execFileSync(process.execPath, ['--allow-natives-syntax', '--input-type=module', '-e', probe], {
    encoding: 'utf8',
    // Two probes fit the test's 30 s budget: a failure names the probe, not the budget.
    timeout: 12_000,
  });
  return out.trim().split('\n').at(-1) === 'true';
}

describe("String.prototype stays in fast mode with every app's modules loaded", () => {
  it('the probe sees the cliff: a String subclass leaves String.prototype a dictionary', () => {
    expect(stringPrototypeFastAfter('')).toBe(true);
    expect(stringPrototypeFastAfter('class Verbatim extends String {}')).toBe(false);
  });

  it.each(APPS)('%s: its modules (nothing started) leave String.prototype fast', (app) => {
    const index = `${REPO_ROOT}apps/${app}/dist/index.js`;
    expect(existsSync(index), `${index} is built (make build)`).toBe(true);
    expect(stringPrototypeFastAfter(`await import(${JSON.stringify(pathToFileURL(index).href)});`)).toBe(true);
  });
});
