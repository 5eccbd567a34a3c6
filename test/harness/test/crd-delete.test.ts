// deleteCrd (what registerAggregatedApi runs before an APIService replaces a
// CRD): a CRD is gone when it returns, even one whose finalizer never
// finishes, as long as no object of it is left.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteCrd, startCluster, type TestCluster } from '../src/index.js';

const GROUP = 'crd-delete.warmpool.test';

/** A namespaced CRD `<plural>.<GROUP>`, with `finalizers` on the CRD object itself. */
function crd(plural: string, finalizers: string[]): object {
  const kind = `${plural[0]?.toUpperCase() ?? ''}${plural.slice(1, -1)}`;
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.${GROUP}`, finalizers },
    spec: {
      group: GROUP,
      scope: 'Namespaced',
      names: { plural, singular: plural.slice(0, -1), kind, listKind: `${kind}List` },
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
        },
      ],
    },
  };
}

describe('deleteCrd', () => {
  let cluster: TestCluster;

  beforeAll(async () => {
    cluster = await startCluster({ name: 'harness-crd-delete' });
  });
  afterAll(() => cluster?.stop());

  const exists = async (name: string): Promise<boolean> =>
    (await cluster.kubectl(['get', 'crd', name, '--ignore-not-found', '-o', 'name'])).stdout.trim() !== '';

  it('deletes a CRD and returns once it is gone; a CRD that is not there is fine', async () => {
    const name = `widgets.${GROUP}`;
    expect((await cluster.kubectl(['create', '-f', '-'], { input: JSON.stringify(crd('widgets', [])) })).code).toBe(0);
    await deleteCrd(cluster, name);
    expect(await exists(name)).toBe(false);
    await deleteCrd(cluster, name);
  });

  it('removes the finalizer of an empty CRD that stays Terminating past the grace', async () => {
    const name = `gadgets.${GROUP}`;
    // A finalizer nobody removes stands in for a cleanup controller that is backing off.
    const held = crd('gadgets', ['crd-delete.warmpool.test/held']);
    expect((await cluster.kubectl(['create', '-f', '-'], { input: JSON.stringify(held) })).code).toBe(0);
    await deleteCrd(cluster, name, 2_000);
    expect(await exists(name)).toBe(false);
  });
});
