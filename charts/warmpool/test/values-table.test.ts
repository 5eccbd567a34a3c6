// The chart README's values table is what scripts/values-table.mjs writes
// from values.yaml's comments today, and lists every value there is.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CHART } from './support.js';
// @ts-expect-error: a plain ESM script without types.
import { expectedReadme, valuesTable } from '../scripts/values-table.mjs';

describe("the chart README's values table", () => {
  it('is current (node charts/warmpool/scripts/values-table.mjs rewrites it)', () => {
    expect(readFileSync(join(CHART, 'README.md'), 'utf8')).toBe((expectedReadme as () => string)());
  });

  it('has a row, with its default, for every value a user may set', () => {
    const table = (valuesTable as (text: string) => string)(readFileSync(join(CHART, 'values.yaml'), 'utf8'));
    for (const row of [
      '| `global.imageRegistry` | `""` |',
      '| `controlPlane.serviceAccount.annotations` | `{}` |',
      '| `controlPlane.podDisruptionBudget.minAvailable` | `null` |',
      '| `nodeAgent.extraVolumeMounts` | `[]` |',
      '| `sandboxApi.certManager.enabled` | `false` |',
      '| `monitoring.serviceMonitor.metricRelabelings` | `[]` |',
      '| `rbac.aggregateClusterRoles` | `true` |',
    ])
      expect(table).toContain(row);
  });
});
