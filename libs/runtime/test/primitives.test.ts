import { describe, expect, it } from 'vitest';
import {
  createLogger,
  formatDuration,
  messageOf,
  parseDuration,
  parseHostPort,
  parseLogFormat,
  parseLogLevelFlag,
} from '../src/index.js';

describe('parseDuration', () => {
  it.each([
    ['250ms', 250],
    ['5s', 5_000],
    ['1m30s', 90_000],
    ['2h', 7_200_000],
    ['1.5s', 1_500],
    ['40', 40],
  ])('reads %s as %d ms', (text, ms) => expect(parseDuration(text)).toBe(ms));

  it.each(['', 's', '5x', '5s garbage', '-1s'])('rejects %j', (text) => {
    expect(() => parseDuration(text)).toThrow(/invalid duration/);
  });

  it('formats whole units compactly', () => {
    expect([formatDuration(30_000), formatDuration(120_000), formatDuration(1_500)]).toEqual(['30s', '2m', '1500ms']);
  });
});

describe('parseHostPort', () => {
  it('reads host:port, [v6]:port and :port', () => {
    expect(parseHostPort('127.0.1.2:7070')).toEqual({ host: '127.0.1.2', port: 7070 });
    expect(parseHostPort('[::1]:80')).toEqual({ host: '::1', port: 80 });
    expect(parseHostPort(':9090')).toEqual({ host: '0.0.0.0', port: 9090 });
  });

  it.each(['localhost', '1.2.3.4:99999', 'a:b'])('rejects %j', (text) => {
    expect(() => parseHostPort(text)).toThrow(/invalid address/);
  });
});

describe('createLogger', () => {
  it('writes one JSON object per line with level, component, message and fields', () => {
    const lines: string[] = [];
    const log = createLogger('agent', { level: 'info', write: (l) => lines.push(l) }).child({ node: 'n1' });
    log.debug('hidden');
    log.warn('sandboxd slow', { ms: 12, err: new Error('boom') });
    expect(lines).toHaveLength(1);
    const record = JSON.parse(lines[0] as string) as Record<string, unknown>;
    expect(record).toMatchObject({
      level: 'warn',
      component: 'agent',
      msg: 'sandboxd slow',
      node: 'n1',
      ms: 12,
      err: { message: 'boom', name: 'Error' },
    });
    expect(typeof record['ts']).toBe('string');
  });
});

describe('createLogger with errors', () => {
  const failure = (): Error => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6379'), { code: 'ECONNREFUSED' });
    return new Error('claim failed', { cause: new AggregateError([refused], 'fetch failed') });
  };

  it('logs an error with its stack, code and whole cause chain (an AggregateError with its errors), as JSON', () => {
    const lines: string[] = [];
    createLogger('cp', { write: (l) => lines.push(l) }).error('request failed', { err: failure() });
    const { err } = JSON.parse(lines[0] as string) as { err: Record<string, unknown> };
    expect(err).toMatchObject({
      name: 'Error',
      message: 'claim failed',
      stack: expect.stringMatching(/^Error: claim failed\n\s+at /),
      cause: {
        name: 'AggregateError',
        message: 'fetch failed',
        errors: [{ message: 'connect ECONNREFUSED 127.0.0.1:6379', code: 'ECONNREFUSED', stack: expect.any(String) }],
      },
    });
  });

  it('writes the text format as one readable line, the stack and causes indented below', () => {
    const lines: string[] = [];
    createLogger('cp', { format: 'text', write: (l) => lines.push(l) }).warn('slow node', {
      node: 'n 1',
      ms: 12,
      err: failure(),
    });
    const [head, ...below] = (lines[0] as string).split('\n');
    expect(head).toMatch(/^\S+Z WARN {2}cp slow node node="n 1" ms=12 err="Error: claim failed"$/);
    expect(below[0]).toBe('    Error: claim failed');
    expect(below).toContain('    caused by:');
    expect(below.some((line) => line.includes('connect ECONNREFUSED 127.0.0.1:6379 [ECONNREFUSED]'))).toBe(true);
  });

  it('takes json or text for --log-format, and refuses anything else', () => {
    expect([parseLogFormat(undefined), parseLogFormat('json'), parseLogFormat('text')]).toEqual([
      'json',
      'json',
      'text',
    ]);
    expect(() => parseLogFormat('yaml')).toThrow(/--log-format must be one of json, text/);
  });

  it('takes the four levels for --log-level, and refuses anything else (no silent fallback to info)', () => {
    expect(['debug', 'info', 'warn', 'error', undefined].map(parseLogLevelFlag)).toEqual([
      'debug',
      'info',
      'warn',
      'error',
      'info',
    ]);
    for (const bad of ['degub', 'INFO', 'constructor', 'toString'])
      expect(() => parseLogLevelFlag(bad)).toThrow(/--log-level must be one of debug, info, warn, error/);
  });

  it('follows a cause chain that loops only so deep', () => {
    const a = new Error('a');
    const b = new Error('b', { cause: a });
    (a as { cause?: unknown }).cause = b;
    const lines: string[] = [];
    createLogger('cp', { write: (l) => lines.push(l) }).error('loop', { err: a });
    expect(lines[0]?.length).toBeLessThan(20_000);
  });

  it('writes a line for fields JSON refuses (a cycle, a BigInt, a throwing toJSON), in both formats, and never throws', () => {
    const cycle: Record<string, unknown> = { name: 'a' };
    cycle['self'] = cycle;
    const failure = new Error('close failed', { cause: cycle });
    const refuses = {
      toJSON: (): never => {
        throw new Error('no');
      },
    };
    for (const format of ['json', 'text'] as const) {
      const lines: string[] = [];
      const log = createLogger('cp', { format, write: (l) => lines.push(l) });
      expect(() => log.warn('a step failed', { err: failure, bytes: 12n, refuses })).not.toThrow();
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain('a step failed');
      expect(lines[0]).toContain('[unserializable]');
    }
    const json: string[] = [];
    createLogger('cp', { write: (l) => json.push(l) }).warn('sizes', { bytes: 12n, nested: { cycle } });
    expect(JSON.parse(json[0] ?? '')).toMatchObject({
      msg: 'sizes',
      bytes: '12',
      nested: { cycle: { name: 'a', self: '[Circular]' } },
    });
  });
});

describe('messageOf', () => {
  it("gives an Error's message, and the string form of anything else thrown", () => {
    expect([messageOf(new TypeError('bad')), messageOf('plain'), messageOf(42), messageOf(undefined)]).toEqual([
      'bad',
      'plain',
      '42',
      'undefined',
    ]);
  });
});
