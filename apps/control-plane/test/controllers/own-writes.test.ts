import { describe, expect, it } from 'vitest';
import { OwnWrites } from '../../src/controllers/own-writes.js';

describe("a status writer's memory of its own writes", () => {
  it('knows nothing of an object it never wrote', () => {
    expect(new OwnWrites<string>().recall('u', '10')).toBeUndefined();
  });

  it('takes any version its chained writes passed through for the one the last of them left', () => {
    const own = new OwnWrites<string>();
    own.written('u', '10', '11', 'first');
    own.written('u', '11', '12', 'second');
    own.written('u', '12', '13', 'third');
    for (const cached of ['10', '11', '12', '13']) expect(own.recall('u', cached)).toEqual({ at: '13', last: 'third' });
  });

  it("knows nothing of a version someone else's write left", () => {
    const own = new OwnWrites<string>();
    own.written('u', '10', '11', 'first');
    expect(own.recall('u', '12')).toBeUndefined();
    expect(own.recall('u', undefined)).toBeUndefined();
  });

  it('starts a new chain at a write pinned to a version not at the end of the last one', () => {
    const own = new OwnWrites<string>();
    own.written('u', '10', '11', 'first');
    own.written('u', '20', '21', 'after someone else');
    expect(own.recall('u', '10')).toBeUndefined();
    expect(own.recall('u', '20')).toEqual({ at: '21', last: 'after someone else' });
  });

  it('forgets the versions before the one the cache shows (a cache never goes back)', () => {
    const own = new OwnWrites<string>();
    own.written('u', '10', '11', 'first');
    own.written('u', '11', '12', 'second');
    expect(own.recall('u', '11')).toEqual({ at: '12', last: 'second' });
    expect(own.recall('u', '10')).toBeUndefined();
  });

  it('keeps a bounded chain: a cache that far behind is not told apart', () => {
    const own = new OwnWrites<string>();
    for (let v = 0; v < 40; v++) own.written('u', String(v), String(v + 1), `write ${v}`);
    expect(own.recall('u', '0')).toBeUndefined();
    expect(own.recall('u', '30')).toEqual({ at: '40', last: 'write 39' });
  });

  it('remembers the version a write was refused at until a write goes through', () => {
    const own = new OwnWrites<string>();
    own.written('u', '10', '11', 'first');
    own.refused('u', '11');
    expect(own.refusedAt('u', '11')).toBe(true);
    expect(own.refusedAt('u', '12')).toBe(false);
    // The chain still tells a lagging cache's versions apart.
    expect(own.recall('u', '10')).toEqual({ at: '11', last: 'first' });
    own.written('u', '12', '13', 'second');
    expect(own.refusedAt('u', '11')).toBe(false);
  });

  it('forgets what it knows of objects gone or no longer listed', () => {
    const own = new OwnWrites<string>();
    own.written('a', '1', '2', 'a');
    own.written('b', '1', '2', 'b');
    own.refused('b', '2');
    own.written('c', '1', '2', 'c');
    own.forget('a');
    own.retain(new Set(['c']));
    expect(own.recall('a', '1')).toBeUndefined();
    expect(own.recall('b', '1')).toBeUndefined();
    expect(own.refusedAt('b', '2')).toBe(false);
    expect(own.recall('c', '1')).toEqual({ at: '2', last: 'c' });
  });
});
