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
    expect(config).toEqual({
      listen: '127.0.0.1:8080',
      apiToken: undefined,
      maxClaims: 100,
      interval: 5_000,
      verbose: false,
    });
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

  it('reports --help, -h and --version', () => {
    expect(parseConfig(spec, ['--help']).help).toBe(true);
    expect(parseConfig(spec, ['-h']).help).toBe(true);
    expect(parseConfig(spec, ['--version']).version).toBe(true);
    expect(parseConfig(spec, []).version).toBe(false);
  });

  it('reads WARMPOOL_-prefixed variables first, the unprefixed name and older aliases after', () => {
    const aliased = {
      token: { kind: 'string', description: 'token', env: 'API_TOKEN', envAliases: ['OLD_TOKEN'] },
    } satisfies FlagsSpec;
    expect(parseConfig(aliased, [], { WARMPOOL_API_TOKEN: 'a', API_TOKEN: 'b', OLD_TOKEN: 'c' }).config.token).toBe(
      'a',
    );
    expect(parseConfig(aliased, [], { API_TOKEN: 'b', OLD_TOKEN: 'c' }).config.token).toBe('b');
    expect(parseConfig(aliased, [], { OLD_TOKEN: 'c' }).config.token).toBe('c');
    expect(helpText('demo', 'A demo.', aliased)).toContain('[env WARMPOOL_API_TOKEN, API_TOKEN, OLD_TOKEN]');
  });

  it('accepts an old flag name as an alias, and a boolean written --flag=false', () => {
    const renamed = {
      leaderElectLeaseDuration: {
        kind: 'duration',
        description: 'lease',
        default: 15_000,
        aliases: ['lease-duration'],
      },
      leaderElect: { kind: 'boolean', description: 'elect', default: true },
    } satisfies FlagsSpec;
    expect(parseConfig(renamed, ['--lease-duration', '20s']).config.leaderElectLeaseDuration).toBe(20_000);
    expect(parseConfig(renamed, ['--leader-elect-lease-duration=30s']).config.leaderElectLeaseDuration).toBe(30_000);
    expect(parseConfig(renamed, ['--leader-elect=false']).config.leaderElect).toBe(false);
    expect(parseConfig(renamed, ['--leader-elect=true']).config.leaderElect).toBe(true);
    expect(parseConfig(renamed, ['--leader-elect']).config.leaderElect).toBe(true);
    expect(() => parseConfig(renamed, ['--leader-elect=maybe'])).toThrow(/--leader-elect.*not a boolean/);
    expect(helpText('demo', 'A demo.', renamed)).toContain('(was --lease-duration)');
  });
});

describe('helpText', () => {
  it('lists every flag with its default and environment variable', () => {
    const text = helpText('demo', 'A demo.', spec);
    expect(text).toContain('--listen <string>');
    expect(text).toContain('(default "127.0.0.1:8080")');
    expect(text).toContain('[env WARMPOOL_TEST_TOKEN, TEST_TOKEN]');
    expect(text).toContain('(default 5s)');
  });

  it('derives kebab-case flag names from camelCase keys', () => {
    expect(flagName('sandboxdUrl')).toBe('sandboxd-url');
  });
});
