import type { SandboxTemplate } from '@warmpool/api';
import { describe, expect, it } from 'vitest';
import { isDriven, poolKeyOf, TemplateKeyError } from '../src/index.js';

function template(
  options: {
    annotations?: Record<string, string>;
    podAnnotations?: Record<string, string>;
    containers?: Array<{ name: string; image?: string }>;
  } = {},
): SandboxTemplate {
  return {
    apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
    kind: 'SandboxTemplate',
    metadata: {
      name: 'python',
      namespace: 'team-a',
      ...(options.annotations ? { annotations: options.annotations } : {}),
    },
    spec: {
      podTemplate: {
        ...(options.podAnnotations ? { metadata: { annotations: options.podAnnotations } } : {}),
        spec: {
          containers: options.containers ?? [
            { name: 'main', image: 'python:3.13' },
            { name: 'sidecar', image: 'envoy:1' },
          ],
        },
      },
    },
  };
}

describe('poolKeyOf', () => {
  it("names the pool by the first container's image with net none and size small by default", () => {
    expect(poolKeyOf(template())).toEqual({ template: 'python:3.13', net: 'none', size: 'small' });
  });

  it("reads net and size from the template's own annotations", () => {
    const key = poolKeyOf(template({ annotations: { 'warmpool.dev/net': 'egress', 'warmpool.dev/size': 'large' } }));
    expect(key).toEqual({ template: 'python:3.13', net: 'egress', size: 'large' });
  });

  it("falls back to the pod template's annotations, the template's own winning", () => {
    const key = poolKeyOf(
      template({
        annotations: { 'warmpool.dev/size': 'medium' },
        podAnnotations: { 'warmpool.dev/net': 'egress', 'warmpool.dev/size': 'large' },
      }),
    );
    expect(key).toEqual({ template: 'python:3.13', net: 'egress', size: 'medium' });
  });

  it("accepts only sandboxd's closed sets for net and size, and says which annotation is wrong", () => {
    for (const net of ['none', 'egress'])
      for (const size of ['small', 'medium', 'large', 'xlarge', '2xlarge'])
        expect(poolKeyOf(template({ annotations: { 'warmpool.dev/net': net, 'warmpool.dev/size': size } }))).toEqual({
          template: 'python:3.13',
          net,
          size,
        });
    const bad = template({ annotations: { 'warmpool.dev/net': 'gpu', 'warmpool.dev/size': 'huge' } });
    expect(() => poolKeyOf(bad)).toThrow(TemplateKeyError);
    expect(() => poolKeyOf(bad)).toThrow(
      'SandboxTemplate team-a/python: annotation warmpool.dev/net "gpu": must be one of none, egress; ' +
        'annotation warmpool.dev/size "huge": must be one of small, medium, large, xlarge, 2xlarge',
    );
    expect(() => poolKeyOf(template({ podAnnotations: { 'warmpool.dev/size': 'Small' } }))).toThrow(/size "Small"/);
  });

  it('treats an empty annotation as absent', () => {
    expect(poolKeyOf(template({ annotations: { 'warmpool.dev/net': '' } })).net).toBe('none');
  });

  it('says which template has no containers', () => {
    expect(() => poolKeyOf(template({ containers: [] }))).toThrow(TemplateKeyError);
    expect(() => poolKeyOf(template({ containers: [] }))).toThrow(
      /SandboxTemplate team-a\/python: .*containers is empty/,
    );
  });

  it('says which container has no image', () => {
    const error = (() => {
      try {
        poolKeyOf(template({ containers: [{ name: 'main' }] }));
      } catch (caught) {
        return caught;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(TemplateKeyError);
    expect((error as TemplateKeyError).template).toBe('team-a/python');
    expect((error as Error).message).toMatch(/container "main" .* has no image/);
  });

  it('rejects a blank image', () => {
    expect(() => poolKeyOf(template({ containers: [{ name: 'main', image: '  ' }] }))).toThrow(/has no image/);
  });

  it('rejects an annotation that cannot be a key part, naming the annotation', () => {
    expect(() => poolKeyOf(template({ annotations: { 'warmpool.dev/size': 'very large' } }))).toThrow(
      /annotation warmpool\.dev\/size "very large": must be printable/,
    );
  });

  it.each([
    ['NUL', 'python\0:3.13'],
    ['DEL', 'python\x7f:3.13'],
    ['a C1 control', 'python\x9b:3.13'],
    ['a lone surrogate', 'python\ud800:3.13'],
    ['a line separator', 'python\u2028:3.13'],
    ['a bidi override', 'python\u202e:3.13'],
    ['a private-use character beyond the BMP', 'python\u{f0000}:3.13'],
  ])('does not drive a template whose image holds %s, and says why with the character escaped', (_name, image) => {
    const read = () => poolKeyOf(template({ containers: [{ name: 'main', image }] }));
    expect(read).toThrow(TemplateKeyError);
    expect(read).toThrow(/SandboxTemplate team-a\/python: image ".*": must be printable/);
    // The reason lands in a status condition and the logs: it must not carry the character itself.
    expect(() => read()).toThrow(
      expect.objectContaining({ message: expect.not.stringMatching(/[\0\x7f\x9b\u2028\u202e\u{f0000}]|\p{Cs}/u) }),
    );
  });

  it('drives a template whose image is pinned by digest', () => {
    const image =
      'ghcr.io/acme/agent-runtime:v1.2.3@sha256:fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210';
    expect(poolKeyOf(template({ containers: [{ name: 'main', image }] })).template).toBe(image);
  });

  it('copes with a template missing its spec altogether', () => {
    const broken = { metadata: { name: 'x' } } as unknown as SandboxTemplate;
    expect(() => poolKeyOf(broken)).toThrow(/SandboxTemplate x: .*containers is empty/);
  });
});

describe('isDriven', () => {
  it('is true only for warmpool.dev/driver: sandboxd', () => {
    expect(isDriven(template({ annotations: { 'warmpool.dev/driver': 'sandboxd' } }))).toBe(true);
    expect(isDriven(template({ annotations: { 'warmpool.dev/driver': 'upstream' } }))).toBe(false);
    expect(isDriven(template())).toBe(false);
  });

  it('accepts the opt-in on the pod template too', () => {
    expect(isDriven(template({ podAnnotations: { 'warmpool.dev/driver': 'sandboxd' } }))).toBe(true);
  });

  it("lets the template's own annotation override the pod template's", () => {
    expect(
      isDriven(
        template({
          annotations: { 'warmpool.dev/driver': 'none' },
          podAnnotations: { 'warmpool.dev/driver': 'sandboxd' },
        }),
      ),
    ).toBe(false);
  });
});
