import { describe, expect, it } from 'vitest';
import { AcceptedToken, tokensEqual } from '../src/index.js';

describe('tokensEqual', () => {
  it('tells equal tokens from different ones, whatever their lengths', () => {
    expect(tokensEqual('s3cret', 's3cret')).toBe(true);
    expect(tokensEqual('s3cret', 's3cre')).toBe(false);
    expect(tokensEqual('', 's3cret')).toBe(false);
    expect(tokensEqual('x'.repeat(10_000), 's3cret')).toBe(false);
  });
});

describe('AcceptedToken', () => {
  it('accepts only the configured token, with its whitespace trimmed as when read from a file', () => {
    const token = new AcceptedToken('fleet\n');
    expect([token.configured, token.value]).toEqual([true, 'fleet']);
    expect(token.matches('fleet')).toBe(true);
    expect(token.matches('fleet2')).toBe(false);
    expect(token.matches(undefined)).toBe(false);
  });

  it('accepts nothing when none is configured (a blank one counts as none)', () => {
    for (const value of [undefined, '', '  \n']) {
      const token = new AcceptedToken(value);
      expect(token.configured).toBe(false);
      expect(token.matches('')).toBe(false);
      expect(token.matches('anything')).toBe(false);
    }
  });

  it('after a rotation, accepts the replaced token for the grace period only', () => {
    let now = 1_000;
    const token = new AcceptedToken('old', { graceMs: 5_000, now: () => now });
    token.set('new');
    expect([token.matches('new'), token.matches('old')]).toEqual([true, true]);
    now += 5_000;
    expect([token.matches('new'), token.matches('old')]).toEqual([true, false]);
  });

  it('with no grace, refuses the replaced token at once', () => {
    const token = new AcceptedToken('old');
    token.set('new');
    expect([token.matches('new'), token.matches('old')]).toEqual([true, false]);
  });

  it('accepts nothing once the token is emptied, not even the replaced one in its grace', () => {
    const token = new AcceptedToken('old', { graceMs: 60_000 });
    token.set('');
    expect([token.configured, token.matches('old'), token.matches('')]).toEqual([false, false, false]);
  });
});
