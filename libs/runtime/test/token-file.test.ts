import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { bearerToken, normalizeToken, readTokenFile, watchTokenFile } from '../src/index.js';

const dirs: string[] = [];
function tokenFile(content: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'warmpool-token-'));
  dirs.push(dir);
  const path = join(dir, 'token');
  writeFileSync(path, content);
  return path;
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const until = async (check: () => boolean): Promise<void> => {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
};

describe('readTokenFile', () => {
  it('drops surrounding whitespace, and reads an empty file as no token', () => {
    expect(readTokenFile(tokenFile('s3cret\n'))).toBe('s3cret');
    expect(readTokenFile(tokenFile(' \n'))).toBeUndefined();
  });
});

describe('watchTokenFile', () => {
  it('has the token at once and hears a rotation', async () => {
    const path = tokenFile('one\n');
    const onChange = vi.fn();
    const watch = watchTokenFile(path, 10, { onChange, onError: () => {} });
    try {
      expect(watch.current).toBe('one');
      expect(onChange).not.toHaveBeenCalled();
      writeFileSync(path, 'two-longer\n');
      await until(() => watch.current === 'two-longer');
      expect(watch.current).toBe('two-longer');
      expect(onChange).toHaveBeenCalledWith('two-longer');
    } finally {
      watch.close();
    }
  });

  it('keeps the last good token when the file disappears, and reports the error', async () => {
    const path = tokenFile('kept');
    const onError = vi.fn();
    const watch = watchTokenFile(path, 10, { onChange: () => {}, onError });
    try {
      rmSync(path);
      await until(() => onError.mock.calls.length > 0);
      expect(onError).toHaveBeenCalled();
      expect(watch.current).toBe('kept');
    } finally {
      watch.close();
    }
  });

  it('starts with no token (fail-closed) when the file cannot be read', () => {
    const onError = vi.fn();
    const watch = watchTokenFile('/nonexistent/warmpool/token', 1_000, { onChange: () => {}, onError });
    watch.close();
    expect(watch.current).toBeUndefined();
    expect(onError).toHaveBeenCalledOnce();
  });
});

describe('normalizeToken and bearerToken', () => {
  it('drops surrounding whitespace and counts empty or blank as none', () => {
    expect([normalizeToken(' abc\n'), normalizeToken(''), normalizeToken(' \n'), normalizeToken(undefined)]).toEqual([
      'abc',
      undefined,
      undefined,
      undefined,
    ]);
  });

  it('reads the token of a Bearer header, any case, and nothing else', () => {
    expect([
      bearerToken('Bearer abc'),
      bearerToken('bearer\tabc '),
      bearerToken('Basic abc'),
      bearerToken('Bearer a b'),
      bearerToken(undefined),
    ]).toEqual(['abc', 'abc', undefined, undefined, undefined]);
  });
});
