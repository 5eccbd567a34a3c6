// The repository stands alone: no tracked file points at a path outside it
// (a private spec next to a checkout, a developer's machine), and every
// relative link in the documentation lands on a file of the repository.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

function trackedFiles(): string[] {
  return execFileSync('git', ['ls-files', '-z'], { cwd: root, encoding: 'utf8' })
    .split('\0')
    .filter((file) => file !== '' && existsSync(resolve(root, file)));
}

function isText(content: Buffer): boolean {
  return !content.subarray(0, 8000).includes(0);
}

// Spelled in pieces so that this file does not match itself.
const OUTSIDE = [['..', 'shared'].join('/'), ['shared', 'specs'].join('/'), ['', 'work', 'shared'].join('/')];

describe('the repository refers to nothing outside it', () => {
  const files = trackedFiles();

  it('finds the tracked files', () => {
    expect(files).toContain('README.md');
  });

  it('no tracked file names a path outside the repository', () => {
    const offenders: string[] = [];
    for (const file of files) {
      const content = readFileSync(resolve(root, file));
      if (!isText(content)) continue;
      const text = content.toString('utf8');
      for (const needle of OUTSIDE) if (text.includes(needle)) offenders.push(`${file}: ${needle}`);
    }
    expect(offenders).toEqual([]);
  });

  it('every relative link in the Markdown files lands on a file of the repository', () => {
    const broken: string[] = [];
    for (const file of files.filter((name) => name.endsWith('.md'))) {
      const text = readFileSync(resolve(root, file), 'utf8');
      for (const match of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = match[1]!;
        if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('#')) continue;
        const path = resolve(root, dirname(file), decodeURIComponent(target.split('#')[0]!));
        const inside = !relative(root, path).startsWith('..');
        if (!inside || !existsSync(path)) broken.push(`${file}: ${target}`);
      }
    }
    expect(broken).toEqual([]);
  });
});
