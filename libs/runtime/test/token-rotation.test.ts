import { describe, expect, it } from 'vitest';
import { TokenRotation } from '../src/index.js';

function rotation(
  token: string | undefined,
  graceMs = 1_000,
): { tokens: TokenRotation<string>; clock: { now: number } } {
  const clock = { now: 0 };
  const tokens = new TokenRotation(token, { graceMs, derive: (value) => `derived:${value}`, now: () => clock.now });
  return { tokens, clock };
}

describe('TokenRotation', () => {
  it('holds what derive made of the token, once; a blank token is none', () => {
    expect(rotation('a').tokens.current).toBe('derived:a');
    expect(rotation(' a\n').tokens.token).toBe('a');
    expect(rotation('  ').tokens.configured).toBe(false);
    expect(rotation(undefined).tokens.accepted()).toEqual([]);
  });

  it('accepts the replaced token until its grace is over, and then only the new one', () => {
    const { tokens, clock } = rotation('old', 1_000);
    clock.now = 10_000;
    expect(tokens.set('new')).toBe(true);
    expect(tokens.accepted()).toEqual(['derived:new', 'derived:old']);
    clock.now = 10_999;
    expect(tokens.previous).toBe('derived:old');
    clock.now = 11_000;
    expect(tokens.previous).toBeUndefined();
    expect(tokens.accepted()).toEqual(['derived:new']);
  });

  it('does not count reading the same token again as a rotation', () => {
    const { tokens } = rotation('same');
    expect(tokens.set('same\n')).toBe(false);
    expect(tokens.previous).toBeUndefined();
  });

  it('keeps only the last replaced token: two rotations in a row refuse the first', () => {
    const { tokens } = rotation('one');
    tokens.set('two');
    tokens.set('three');
    expect(tokens.accepted()).toEqual(['derived:three', 'derived:two']);
  });

  it('takes a rotation rolled back during the grace as the same token, not a third', () => {
    const { tokens } = rotation('old');
    tokens.set('new');
    tokens.set('old');
    expect(tokens.accepted()).toEqual(['derived:old', 'derived:new']);
  });

  it('presents the new token first, and whichever the other side took since', () => {
    const { tokens } = rotation('old');
    tokens.set('new');
    expect(tokens.preferred).toBe('derived:new');
    // The other side has not read the new token yet: it refused it and took the old one.
    expect(tokens.alternateTo('derived:new')).toBe('derived:old');
    tokens.worked('derived:old');
    expect(tokens.preferred).toBe('derived:old');
    // Now it has, and its own grace for the old one ended first.
    expect(tokens.alternateTo('derived:old')).toBe('derived:new');
    tokens.worked('derived:new');
    expect(tokens.preferred).toBe('derived:new');
  });

  it('falls back to the new token once the old one it preferred is out of grace', () => {
    const { tokens, clock } = rotation('old', 1_000);
    tokens.set('new');
    tokens.worked('derived:old');
    clock.now = 1_000;
    expect(tokens.preferred).toBe('derived:new');
    expect(tokens.alternateTo('derived:new')).toBeUndefined();
  });

  it('has nothing to fall back to without a rotation, and offers the current token for one replaced mid-call', () => {
    const { tokens } = rotation('only');
    expect(tokens.alternateTo('derived:only')).toBeUndefined();
    tokens.set('two');
    tokens.set('three');
    expect(tokens.alternateTo('derived:only')).toBe('derived:three');
  });

  it('keeps the replaced token in grace when the file is emptied, but has no current one', () => {
    const { tokens } = rotation('old');
    tokens.set('');
    expect(tokens.configured).toBe(false);
    expect(tokens.previous).toBe('derived:old');
  });
});
