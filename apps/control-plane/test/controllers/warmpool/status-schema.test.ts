import type { CustomResourceDefinition, JsonSchemaProps, SandboxWarmPoolStatus } from '@warmpool/api';
import { describe, expect, it } from 'vitest';
import { fitStatus, statusFieldsOf } from '../../../src/controllers/warmpool/status-schema.js';

function crd(status: JsonSchemaProps | undefined, version = 'v1beta1'): CustomResourceDefinition {
  return {
    spec: {
      versions: [
        {
          name: version,
          served: true,
          storage: true,
          schema: { openAPIV3Schema: { type: 'object', properties: status === undefined ? {} : { status } } },
        },
      ],
    },
  };
}

const full: SandboxWarmPoolStatus = {
  replicas: 3,
  readyReplicas: 2,
  selector: 'warmpool.dev/pool=p',
  observedGeneration: 4,
  conditions: [{ type: 'Ready', status: 'False', reason: 'Filling', message: '2 of 3 replicas are warm' }],
};

describe('what the installed SandboxWarmPool CRD lets us write into status', () => {
  it('keeps every field our own CRD declares', () => {
    const fields = statusFieldsOf(
      crd({
        type: 'object',
        properties: { replicas: {}, readyReplicas: {}, selector: {}, observedGeneration: {}, conditions: {} },
      }),
    );
    expect(fitStatus(full, fields)).toEqual(full);
  });

  it("drops what upstream's CRD does not declare (conditions, observedGeneration), keeping the counts and the selector", () => {
    const fields = statusFieldsOf(
      crd({ type: 'object', properties: { availableReplicas: {}, readyReplicas: {}, replicas: {}, selector: {} } }),
    );
    expect(fitStatus(full, fields)).toEqual({ replicas: 3, readyReplicas: 2, selector: 'warmpool.dev/pool=p' });
  });

  it('keeps everything where the schema keeps unknown fields, or cannot be read (the write then says why)', () => {
    expect(statusFieldsOf(crd({ type: 'object', 'x-kubernetes-preserve-unknown-fields': true }))).toBe('any');
    expect(statusFieldsOf(undefined)).toBe('any');
    expect(statusFieldsOf(crd({ type: 'object' }, 'v1alpha1'))).toBe('any');
    const keepsUnknown = crd(undefined);
    const root = keepsUnknown.spec?.versions?.[0]?.schema?.openAPIV3Schema;
    if (root !== undefined) root['x-kubernetes-preserve-unknown-fields'] = true;
    expect(statusFieldsOf(keepsUnknown)).toBe('any');
  });

  it('keeps nothing where the schema declares no status at all (the apiserver refuses even an empty one there)', () => {
    const fields = statusFieldsOf(crd(undefined));
    expect(fields).toEqual(new Set());
    expect(fitStatus(full, fields)).toEqual({});
  });
});
