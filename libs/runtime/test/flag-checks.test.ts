import { describe, expect, it } from 'vitest';
import {
  ConfigError,
  countsOfAtLeastOne,
  hostPortFlag,
  pairedFiles,
  positiveDurations,
  urlFlag,
} from '../src/index.js';

describe('flag checks', () => {
  it('parses HOST:PORT, and names the flag when it is not one', () => {
    expect(hostPortFlag('--listen', ':8080')).toEqual({ host: '0.0.0.0', port: 8080 });
    expect(() => hostPortFlag('--listen', 'nowhere')).toThrow(ConfigError);
    expect(() => hostPortFlag('--listen', 'nowhere')).toThrow(/^--listen: invalid address "nowhere"/);
  });

  it('takes a URL only with one of the given schemes', () => {
    expect(urlFlag('--redis-url', 'rediss://r:6380', ['redis:', 'rediss:']).port).toBe('6380');
    expect(() => urlFlag('--redis-url', 'http://r', ['redis:', 'rediss:'])).toThrow(
      '--redis-url: scheme http: is not redis: or rediss:',
    );
    expect(() => urlFlag('--redis-url', 'not a url', ['redis:'])).toThrow(/^--redis-url: /);
  });

  it('refuses a duration that is zero, negative or not a number', () => {
    expect(() => positiveDurations([['--interval', 1]])).not.toThrow();
    for (const ms of [0, -5, Number.NaN])
      expect(() => positiveDurations([['--interval', ms]])).toThrow(/^--interval must be positive/);
  });

  it('refuses a count below 1 or not whole', () => {
    expect(() => countsOfAtLeastOne([['--attempts', 3]])).not.toThrow();
    for (const n of [0, 1.5, Number.NaN])
      expect(() => countsOfAtLeastOne([['--attempts', n]])).toThrow(/^--attempts must be a whole number of at least 1/);
  });

  it('takes a certificate and its key together or not at all', () => {
    expect(pairedFiles(['--cert', undefined], ['--key', undefined])).toBeUndefined();
    expect(pairedFiles(['--cert', 'c.pem'], ['--key', 'k.pem'])).toEqual({ certFile: 'c.pem', keyFile: 'k.pem' });
    expect(() => pairedFiles(['--cert', 'c.pem'], ['--key', undefined])).toThrow('--cert and --key go together');
  });
});
