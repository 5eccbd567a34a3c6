import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { defineConfig } from 'vitest/config';

// Tests run against each workspace package's TypeScript source, not its dist,
// so `vitest` never needs a build first for in-process tests. (Tests that spawn
// an app as a process use its dist; `make test` builds before it runs vitest.)
function workspaceSourceAliases(): Array<{ find: RegExp; replacement: string }> {
  const aliases: Array<{ find: RegExp; replacement: string }> = [];
  const roots = ['libs', 'apps'].flatMap((dir) => readdirSync(dir).map((name) => join(dir, name)));
  for (const dir of [...roots, 'test/harness']) {
    const manifest = join(dir, 'package.json');
    if (!existsSync(manifest)) continue;
    const { name, exports } = JSON.parse(readFileSync(manifest, 'utf8')) as {
      name: string;
      exports?: Record<string, { default?: string }>;
    };
    // Each export ('.', './arbitraries', …) to the source its dist file is compiled from.
    for (const [subpath, target] of Object.entries(exports ?? {})) {
      const source = target.default?.replace(/^\.\/dist\/(.*)\.js$/, 'src/$1.ts');
      if (source === undefined || !existsSync(join(dir, source))) continue;
      const specifier = `${name}${subpath.slice(1)}`.replace(/[/.@-]/g, '\\$&');
      aliases.push({ find: new RegExp(`^${specifier}$`), replacement: resolve(dir, source) });
    }
  }
  return aliases;
}

export default defineConfig({
  resolve: { alias: workspaceSourceAliases() },
  test: {
    include: [
      'libs/*/test/**/*.test.ts',
      'apps/*/test/**/*.test.ts',
      'test/harness/test/**/*.test.ts',
      'charts/*/test/**/*.test.ts',
      'test/e2e/**/*.test.ts',
      'images/test/**/*.test.ts',
      'test/repo/**/*.test.ts',
      'examples/test/**/*.test.ts',
      'clients/*/test/**/*.test.ts',
    ],
    pool: 'forks',
    // Two cores: integration files each start real processes (apiserver, etcd).
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 180_000,
    teardownTimeout: 30_000,
  },
});
