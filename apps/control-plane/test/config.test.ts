import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ConfigError, parseConfig } from '@warmpool/runtime';
import { describe, expect, it } from 'vitest';
import { FLAGS, validateConfig } from './support/internals.js';

const noNamespaceFile = (): undefined => undefined;

describe('control plane flags', () => {
  it('has the documented defaults', () => {
    const { config } = parseConfig(FLAGS, [], {});
    expect(config).toMatchObject({
      listen: '0.0.0.0:8080', interval: 5_000, staleAfter: 90_000, setPoolsTimeout: 2_000, setPoolsConcurrency: 256,
      leaseDuration: 15_000, renewDeadline: 10_000, retryPeriod: 2_000, leaseName: 'warmpool-control-plane', logLevel: 'info',
    });
    expect(validateConfig(config, noNamespaceFile)).toEqual({ listen: { host: '0.0.0.0', port: 8080 }, namespace: 'default' });
  });

  it('accepts every flag the Helm chart passes', () => {
    const chart = readFileSync(fileURLToPath(new URL('../../../charts/warmpool/templates/control-plane.yaml', import.meta.url)), 'utf8');
    const flags = [...chart.matchAll(/- --([a-z-]+)=/g)].map((m) => m[1] as string);
    expect(flags.length).toBeGreaterThan(10);
    const argv = flags.map((flag) => `--${flag}=${flag.endsWith('concurrency') ? '8' : /timeout|interval|after|duration|deadline|period|grace/.test(flag) ? '1s' : 'x'}`);
    expect(() => parseConfig(FLAGS, argv, {})).not.toThrow();
  });

  it('reads the pod\'s namespace and name from the downward API env', () => {
    const { config } = parseConfig(FLAGS, [], { POD_NAMESPACE: 'warmpool', POD_NAME: 'cp-7f9' });
    expect(config.identity).toBe('cp-7f9');
    expect(validateConfig(config, noNamespaceFile).namespace).toBe('warmpool');
  });

  it('refuses lease timings client-go would refuse', () => {
    const parse = (...argv: string[]) => validateConfig(parseConfig(FLAGS, argv, {}).config, noNamespaceFile);
    expect(() => parse('--lease-duration=5s', '--renew-deadline=5s')).toThrow(ConfigError);
    expect(() => parse('--renew-deadline=2s', '--retry-period=2s', '--lease-duration=3s')).toThrow(/1.2/);
    expect(() => parse('--interval=0s')).toThrow(/--interval must be positive/);
    expect(() => parse('--set-pools-concurrency=0')).toThrow(/--set-pools-concurrency/);
    expect(() => parse('--listen=nope')).toThrow(/--listen/);
  });
});
