// `kubectl explain` is useful for warmpool's own kinds: every field of
// NodeInventory and SandboxEnv, and every status field warmpool writes on
// upstream's kinds, carries a description in the CRD schemas the chart installs.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadYaml } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { CHART } from './support.js';

interface Schema {
  description?: string;
  properties?: Record<string, Schema>;
  items?: Schema;
}
interface Crd {
  spec: { versions: Array<{ name: string; schema: { openAPIV3Schema: Schema } }> };
}

const CRDS = join(CHART, 'files/crds');
/** Kubernetes documents these itself (`kubectl explain` shows its own text). */
const STANDARD = new Set(['.apiVersion', '.kind', '.metadata']);

interface Field {
  path: string;
  description: string | undefined;
}

/** Every field under `schema`, depth first, with the path `kubectl explain` takes (`[]` for a list's items). */
function fieldsOf(schema: Schema, path = ''): Field[] {
  const found: Field[] = [];
  for (const [name, field] of Object.entries(schema.properties ?? {})) {
    const at = `${path}.${name}`;
    if (!STANDARD.has(at)) found.push({ path: at, description: field.description });
    found.push(...fieldsOf(field, at));
  }
  if (schema.items) found.push(...fieldsOf(schema.items, `${path}[]`));
  return found;
}

function isStatus(field: Field): boolean {
  return field.path === '.status' || field.path.startsWith('.status.') || field.path.startsWith('.status[');
}

function load(file: string): Crd {
  return loadYaml<Crd>(readFileSync(join(CRDS, file), 'utf8'));
}

describe('CRD field descriptions', () => {
  const files = readdirSync(CRDS).filter((file) => file.endsWith('.yaml'));

  it.each(files)('%s: no field that counts lacks a description', (file) => {
    // Our own kinds: every field. Upstream's: the status warmpool writes (their spec is upstream's text).
    const ours = file.startsWith('warmpool.dev_');
    for (const version of load(file).spec.versions) {
      const counted = fieldsOf(version.schema.openAPIV3Schema).filter((field) => ours || isStatus(field));
      const undocumented = counted.filter((field) => !field.description?.trim()).map((field) => field.path);
      expect({ version: version.name, undocumented }).toEqual({ version: version.name, undocumented: [] });
    }
  });

  it('reads every field of a schema (so a schema it cannot read does not pass by counting nothing)', () => {
    const paths = fieldsOf(load('warmpool.dev_sandboxenvs.yaml').spec.versions[0]!.schema.openAPIV3Schema).map(
      (field) => field.path,
    );
    expect(paths).toEqual(
      expect.arrayContaining([
        '.spec.members[].pool',
        '.status.scalingGroups[].saturatedFor',
        '.status.clusters[].capacity',
      ]),
    );
    expect(paths.length).toBeGreaterThan(30);
  });
});
