// The bearer check that remembers, per connection, the header that connection
// had admitted: what it skips (the hash), and what it never skips.
import { describe, expect, it, vi } from 'vitest';
import { AcceptedToken, ConnectionTokenCheck } from '../src/index.js';

function check(
  token: string | undefined,
  graceMs = 0,
): {
  accepted: AcceptedToken;
  check: ConnectionTokenCheck;
  fullChecks: () => number;
  clock: { now: number };
} {
  const clock = { now: 0 };
  const accepted = new AcceptedToken(token, { graceMs, now: () => clock.now });
  const match = vi.spyOn(accepted, 'match');
  return { accepted, check: new ConnectionTokenCheck(accepted), fullChecks: () => match.mock.calls.length, clock };
}

describe('ConnectionTokenCheck', () => {
  it("checks a connection's first header in full, and the same header on that connection again without hashing", () => {
    const { check: c, fullChecks } = check('fleet');
    const connection = {};
    expect(c.admits(connection, 'Bearer fleet')).toBe(true);
    expect(c.admits(connection, 'Bearer fleet')).toBe(true);
    expect(c.admits(connection, 'Bearer fleet')).toBe(true);
    expect(fullChecks()).toBe(1);
  });

  it('remembers per connection: another connection presenting the same header is checked in full', () => {
    const { check: c, fullChecks } = check('fleet');
    expect(c.admits({}, 'Bearer fleet')).toBe(true);
    expect(c.admits({}, 'Bearer fleet')).toBe(true);
    expect(fullChecks()).toBe(2);
  });

  it('refuses a different header on an admitted connection, wrong tokens included, and never remembers a wrong one', () => {
    const { check: c, fullChecks } = check('fleet');
    const connection = {};
    expect(c.admits(connection, 'Bearer nope')).toBe(false);
    expect(c.admits(connection, 'Bearer nope')).toBe(false);
    expect(c.admits(connection, 'Bearer fleet')).toBe(true);
    for (const other of ['Bearer fleeT', 'Bearer flee', 'Bearer fleetX', 'Bearer fleetfleet', 'Bearer ', '', 'fleet'])
      expect(c.admits(connection, other), other).toBe(false);
    expect(c.admits(connection, undefined)).toBe(false);
    // Still remembered after the refusals: the valid header is admitted without a full check.
    const before = fullChecks();
    expect(c.admits(connection, 'Bearer fleet')).toBe(true);
    expect(fullChecks()).toBe(before);
  });

  it('admits another spelling of the token by a full check (and remembers that one instead)', () => {
    const { check: c, fullChecks } = check('fleet');
    const connection = {};
    expect(c.admits(connection, 'Bearer fleet')).toBe(true);
    expect(c.admits(connection, 'bearer  fleet')).toBe(true);
    expect(fullChecks()).toBe(2);
    expect(c.admits(connection, 'bearer  fleet')).toBe(true);
    expect(fullChecks()).toBe(2);
  });

  it('forgets every remembered header when the token rotates: the old one is then refused at once (no grace)', () => {
    const { accepted, check: c } = check('old');
    const connection = {};
    expect(c.admits(connection, 'Bearer old')).toBe(true);
    accepted.set('new');
    expect(c.admits(connection, 'Bearer old')).toBe(false);
    expect(c.admits(connection, 'Bearer new')).toBe(true);
  });

  it('never remembers the replaced token: it is admitted during its grace and refused after, on the same connection', () => {
    const { accepted, check: c, clock, fullChecks } = check('old', 1_000);
    const connection = {};
    expect(c.admits(connection, 'Bearer old')).toBe(true);
    accepted.set('new');
    const before = fullChecks();
    expect(c.admits(connection, 'Bearer old')).toBe(true);
    expect(c.admits(connection, 'Bearer old')).toBe(true);
    expect(fullChecks()).toBe(before + 2);
    clock.now = 1_000;
    expect(c.admits(connection, 'Bearer old')).toBe(false);
  });

  it('refuses everything once the token is emptied, a remembered header included', () => {
    const { accepted, check: c } = check('fleet');
    const connection = {};
    expect(c.admits(connection, 'Bearer fleet')).toBe(true);
    accepted.set('');
    expect(c.admits(connection, 'Bearer fleet')).toBe(false);
  });

  it('remembers again after a rotation rolled back: the token back is a new generation', () => {
    const { accepted, check: c } = check('one', 60_000);
    const connection = {};
    expect(c.admits(connection, 'Bearer one')).toBe(true);
    accepted.set('two');
    accepted.set('one');
    expect(c.admits(connection, 'Bearer one')).toBe(true);
    expect(c.admits(connection, 'Bearer two')).toBe(true);
  });
});
