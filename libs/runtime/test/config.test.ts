import { describe, expect, it } from 'vitest';
import { ConfigError, flagName, helpText, parseConfig, type FlagsSpec } from '../src/index.js';

const spec = {
  listen: { kind: 'string', description: 'address to listen on', default: '127.0.0.1:8080' },
  apiToken: { kind: 'string', description: 'root token', env: 'TEST_TOKEN' },
  maxClaims: { kind: 'number', description: 'claim limit', default: 100 },
  interval: { kind: 'duration', description: 'period', default: 5_000 },
  verbose: { kind: 'boolean', description: 'chatty', default: false },
} satisfies FlagsSpec;

describe('parseConfig', () => {
  it('uses defaults when neither flag nor env is given', () => {
    const { config, help } = parseConfig(spec, [], {});
    expect(config).toEqual({ listen: '127.0.0.1:8080', apiToken: undefined, maxClaims: 100, interval: 5_000, verbose: false });
    expect(help).toBe(false);
  });

  it('prefers the flag over the environment, and the environment over the default', () => {
    expect(parseConfig(spec, ['--api-token', 'flag'], { TEST_TOKEN: 'env' }).config.apiToken).toBe('flag');
    expect(parseConfig(spec, [], { TEST_TOKEN: 'env' }).config.apiToken).toBe('env');
  });

  it('treats an empty environment variable as unset', () => {
    expect(parseConfig(spec, [], { TEST_TOKEN: '' }).config.apiToken).toBeUndefined();
  });

  it('converts numbers, durations and booleans', () => {
    const { config } = parseConfig(spec, ['--max-claims', '7', '--interval', '1m30s', '--verbose']);
    expect(config).toMatchObject({ maxClaims: 7, interval: 90_000, verbose: true });
  });

  it('rejects an unknown flag, a non-number and a bad duration with a message naming the flag', () => {
    expect(() => parseConfig(spec, ['--nope'])).toThrow(ConfigError);
    expect(() => parseConfig(spec, ['--max-claims', 'many'])).toThrow(/--max-claims.*not a number/);
    expect(() => parseConfig(spec, ['--interval', '5 parsecs'])).toThrow(/--interval.*invalid duration/);
  });

  it('reports --help', () => {
    expect(parseConfig(spec, ['--help']).help).toBe(true);
  });
});

describe('helpText', () => {
  it('lists every flag with its default and environment variable', () => {
    const text = helpText('demo', 'A demo.', spec);
    expect(text).toContain('--listen <string>');
    expect(text).toContain('(default "127.0.0.1:8080")');
    expect(text).toContain('[env TEST_TOKEN]');
    expect(text).toContain('(default 5s)');
  });

  it('derives kebab-case flag names from camelCase keys', () => {
    expect(flagName('sandboxdUrl')).toBe('sandboxd-url');
  });
});
