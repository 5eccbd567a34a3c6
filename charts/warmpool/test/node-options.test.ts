// Every `nodeOptions` default is something Node accepts in NODE_OPTIONS, which
// allows only some V8 flags (`--min-semi-space-size`, for one, makes Node exit
// at once): a refused value would leave the pod crash-looping.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CHART } from './support.js';

const defaults = [...readFileSync(join(CHART, 'values.yaml'), 'utf8').matchAll(/^ {2}nodeOptions:\s*"([^"]*)"/gm)].map(
  (match) => match[1] ?? '',
);

describe("the chart's nodeOptions defaults", () => {
  it('are found (one per Node component)', () => {
    expect(defaults.length).toBeGreaterThanOrEqual(3);
  });

  it.each(defaults)('Node starts with NODE_OPTIONS="%s"', (options) => {
    const run = spawnSync(process.execPath, ['-e', ''], {
      env: { ...process.env, NODE_OPTIONS: options },
      encoding: 'utf8',
    });
    expect({ status: run.status, stderr: run.stderr }).toEqual({ status: 0, stderr: '' });
  });

  it('refuses what Node refuses (the check itself bites)', () => {
    const run = spawnSync(process.execPath, ['-e', ''], {
      env: { ...process.env, NODE_OPTIONS: '--min-semi-space-size=32' },
      encoding: 'utf8',
    });
    expect(run.status).not.toBe(0);
  });
});
