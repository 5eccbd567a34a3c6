// The Sandbox API's pure parts: selectors, Accept negotiation, the front
// proxy's settings, the Table, a watch's parameters and the flags.
import { ConfigError, parseConfig } from '@warmpool/runtime';
import { describe, expect, it } from 'vitest';
import { FLAGS } from '../../src/config/flags.js';
import { validateConfig } from '../../src/config/validate.js';
import { requestHeaderConfigOf } from '../../src/http/access/front-proxy.js';
import { ApiError, representationOf, tableOf } from '../../src/sandbox-api/responses.js';
import { sandboxObject, hostOf, humanDuration, ServedSandbox } from '../../src/sandbox-api/sandbox-object.js';
import { fieldMatcher, labelMatcher, SelectorError } from '../../src/sandbox-api/selectors.js';
import { watchStartOf, watchTimeoutMs } from '../../src/sandbox-api/watch-params.js';

const sandbox = sandboxObject(
  {
    namespace: 'team',
    name: 'job-1',
    id: 'sb_1',
    node: 'node-a',
    deadline: '2026-12-01T10:05:00.000Z',
    pool: 'python',
    tier: 'warm',
    ownerAddr: '[fd00::1]:9000',
    claimedAt: '2026-12-01T10:00:00.000Z',
  },
  '42',
);

describe('selectors', () => {
  it('matches labels with =, ==, !=, exists, !exists, in and notin', () => {
    for (const [selector, expected] of [
      ['warmpool.dev/pool=python', true],
      ['warmpool.dev/pool==python', true],
      ['warmpool.dev/pool!=python', false],
      ['warmpool.dev/pool', true],
      ['!warmpool.dev/pool', false],
      ['warmpool.dev/pool in (go, python)', true],
      ['warmpool.dev/pool notin (python)', false],
      ['warmpool.dev/pool=python,missing', false],
      ['', true],
    ] as const) {
      expect(labelMatcher(selector)(sandbox), selector).toBe(expected);
    }
  });

  it('matches the supported fields, spec.nodeName and status.nodeName alike, and refuses others', () => {
    expect(fieldMatcher('spec.nodeName=node-a')(sandbox)).toBe(true);
    expect(fieldMatcher('status.nodeName!=node-a')(sandbox)).toBe(false);
    expect(fieldMatcher('metadata.name=job-1,metadata.namespace=team,spec.warmPoolRef.name=python')(sandbox)).toBe(
      true,
    );
    expect(() => fieldMatcher('status.phase=Running')).toThrow(SelectorError);
    expect(() => labelMatcher('a b c')).toThrow(SelectorError);
  });
});

describe('Accept negotiation', () => {
  it('serves JSON objects, Tables and PartialObjectMetadata, and refuses what it cannot', () => {
    expect(representationOf(undefined, undefined)).toEqual({ as: 'object' });
    expect(
      representationOf(
        'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json',
        undefined,
      ),
    ).toEqual({ as: 'table', include: 'Metadata' });
    expect(representationOf('application/json;as=Table;v=v1;g=meta.k8s.io', 'Object')).toEqual({
      as: 'table',
      include: 'Object',
    });
    expect(
      representationOf(
        'application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1',
        undefined,
      ),
    ).toEqual({ as: 'metadata' });
    expect(() => representationOf('application/vnd.kubernetes.protobuf', undefined)).toThrow(ApiError);
  });

  it('prints the columns kubectl shows, with the owner host as podIPs', () => {
    const table = tableOf(
      [
        new ServedSandbox(
          {
            namespace: 'team',
            name: 'job-1',
            id: 'sb_1',
            node: 'node-a',
            deadline: 'D',
            pool: 'python',
            tier: 'warm',
            claimedAt: new Date(Date.now() - 75_000).toISOString(),
          },
          '42',
        ),
      ],
      '42',
      'None',
      Date.now(),
    );
    expect(table.columnDefinitions.filter((c) => c.priority === 0).map((c) => c.name)).toEqual([
      'Name',
      'Node',
      'Pool',
      'Tier',
      'Deadline',
      'Age',
    ]);
    expect(table.rows[0]?.cells.slice(0, 6)).toEqual(['job-1', 'node-a', 'python', 'warm', 'D', '75s']);
    expect(sandbox.status?.podIPs).toEqual(['fd00::1']);
    expect(hostOf('10.0.0.1:80')).toBe('10.0.0.1');
    expect(humanDuration(3 * 3600_000)).toBe('3h');
  });
});

describe('the front proxy settings', () => {
  it('reads the requestheader keys of extension-apiserver-authentication', () => {
    const config = requestHeaderConfigOf({
      data: {
        'requestheader-client-ca-file': 'PEM',
        'requestheader-allowed-names': '["front-proxy-client"]',
        'requestheader-username-headers': '["X-Remote-User"]',
        'requestheader-group-headers': '["X-Remote-Group"]',
        'requestheader-extra-headers-prefix': '["X-Remote-Extra-"]',
      },
    });
    expect(config).toEqual({
      clientCa: 'PEM',
      allowedNames: ['front-proxy-client'],
      usernameHeaders: ['X-Remote-User'],
      uidHeaders: [],
      groupHeaders: ['X-Remote-Group'],
      extraHeaderPrefixes: ['X-Remote-Extra-'],
    });
  });

  it('refuses a ConfigMap without the requestheader CA (no aggregation layer)', () => {
    expect(() => requestHeaderConfigOf({ data: { 'client-ca-file': 'PEM' } })).toThrow(/aggregation layer/);
    expect(() =>
      requestHeaderConfigOf({
        data: { 'requestheader-client-ca-file': 'PEM', 'requestheader-allowed-names': 'front-proxy-client' },
      }),
    ).toThrow(/JSON array/);
  });
});

describe('the Sandbox API flags', () => {
  const parse = (...argv: string[]): ReturnType<typeof validateConfig> =>
    validateConfig(parseConfig(FLAGS, argv, {}).config, () => undefined);

  it('serves it only with --aggregated-listen, self-signed unless given a certificate and key', () => {
    expect(parse().sandboxApi).toBeUndefined();
    expect(parse('--aggregated-listen=0.0.0.0:8443', '--aggregated-tls-sans=svc.ns.svc, other').sandboxApi).toEqual({
      listen: { host: '0.0.0.0', port: 8443 },
      selfSignedNames: ['svc.ns.svc', 'other'],
    });
    expect(
      parse('--aggregated-listen=0.0.0.0:8443', '--aggregated-tls-cert-file=/c', '--aggregated-tls-key-file=/k')
        .sandboxApi?.tls,
    ).toEqual({ certFile: '/c', keyFile: '/k' });
  });

  it('refuses a certificate without its key, TLS flags without --aggregated-listen, and a bad address', () => {
    expect(() => parse('--aggregated-listen=0.0.0.0:8443', '--aggregated-tls-cert-file=/c')).toThrow(ConfigError);
    expect(() => parse('--aggregated-tls-cert-file=/c', '--aggregated-tls-key-file=/k')).toThrow(/--aggregated-listen/);
    expect(() => parse('--aggregated-listen=nonsense')).toThrow(/--aggregated-listen/);
  });
});

describe("a watch's parameters", () => {
  const minutes = 60_000;
  const timeouts = { defaultMs: 30 * minutes, random: () => 0.5 };

  it('starts with the current objects for resourceVersion "" or "0" or sendInitialEvents, else after a decimal one', () => {
    expect(watchStartOf(null, false)).toEqual({ initial: true });
    expect(watchStartOf('0', false)).toEqual({ initial: true });
    expect(watchStartOf('42', true)).toEqual({ initial: true });
    expect(watchStartOf('42', false)).toEqual({ initial: false, since: 42 });
  });

  it('refuses a resourceVersion that is not a decimal integer with 400 BadRequest', () => {
    for (const text of ['abc', '-1', '1.5', '1e3', ' 1', '0x10', '99999999999999999999']) {
      expect(() => watchStartOf(text, false), text).toThrow(ApiError);
      expect(() => watchStartOf(text, true), text).toThrow(expect.objectContaining({ reason: 'BadRequest' }));
    }
  });

  it('lasts timeoutSeconds, at most twice the default, and between once and twice the default without one', () => {
    expect(watchTimeoutMs('5', timeouts)).toBe(5_000);
    expect(watchTimeoutMs('2147484', timeouts)).toBe(60 * minutes);
    expect(watchTimeoutMs(String(Number.MAX_SAFE_INTEGER), timeouts)).toBe(60 * minutes);
    expect(watchTimeoutMs(null, timeouts)).toBe(45 * minutes);
    expect(watchTimeoutMs('0', timeouts)).toBe(45 * minutes);
    expect(watchTimeoutMs(null, { ...timeouts, random: () => 0 })).toBe(30 * minutes);
  });

  it('refuses a timeoutSeconds that is not an integer with 400 BadRequest', () => {
    for (const text of ['abc', '1.5', '1e3', ' 5'])
      expect(() => watchTimeoutMs(text, timeouts), text).toThrow(expect.objectContaining({ reason: 'BadRequest' }));
  });
});
