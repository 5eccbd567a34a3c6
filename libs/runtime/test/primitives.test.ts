import { describe, expect, it } from 'vitest';
import { createLogger, formatDuration, messageOf, parseDuration, parseHostPort } from '../src/index.js';

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
