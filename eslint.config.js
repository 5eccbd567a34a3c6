import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const CONTROL_PLANE = ['@warmpool/control-plane', '**/apps/control-plane/**', '**/control-plane/src/**'];
const NODE_AGENT = ['@warmpool/node-agent', '**/apps/node-agent/**', '**/node-agent/src/**'];
const ROUTER = ['@warmpool/router', '**/apps/router/**', '**/router/src/**'];
const FAKE_SANDBOXD_FILES = ['**/apps/fake-sandboxd/**', '**/fake-sandboxd/src/**'];
const FAKE_SANDBOXD = ['@warmpool/fake-sandboxd', ...FAKE_SANDBOXD_FILES];
const HARNESS = ['@warmpool/harness', '**/test/harness/**', '**/harness/src/**'];

const restrict = (...groups) => ({ 'no-restricted-imports': ['error', { patterns: groups.flat() }] });

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', '.local/**', 'charts/*/templates/**', 'charts/*/files/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-console': 'off',
      eqeqeq: ['error', 'always', { null: 'ignore' }],
    },
  },
  // Boundaries (production and tests alike): libs never import apps; apps never
  // import each other's code; only tests and benchmarks use the test harness.
  // An app's tests may start the apps it talks to through their packages
  // (node-agent's: @warmpool/fake-sandboxd), never reach into their files.
  // ESLint keeps one no-restricted-imports per file (the last matching block), so
  // every block below lists all that its files may not import.
  { files: ['libs/*/src/**/*.ts'], rules: restrict(CONTROL_PLANE, NODE_AGENT, FAKE_SANDBOXD, HARNESS, ROUTER) },
  { files: ['libs/*/test/**/*.ts'], rules: restrict(CONTROL_PLANE, NODE_AGENT, FAKE_SANDBOXD, ROUTER) },
  { files: ['apps/control-plane/src/**/*.ts'], rules: restrict(NODE_AGENT, FAKE_SANDBOXD, HARNESS, ROUTER) },
  { files: ['apps/control-plane/test/**/*.ts'], rules: restrict(NODE_AGENT, FAKE_SANDBOXD, ROUTER) },
  { files: ['apps/node-agent/src/**/*.ts'], rules: restrict(CONTROL_PLANE, FAKE_SANDBOXD, HARNESS, ROUTER) },
  { files: ['apps/node-agent/test/**/*.ts'], rules: restrict(CONTROL_PLANE, FAKE_SANDBOXD_FILES, ROUTER) },
  { files: ['apps/fake-sandboxd/src/**/*.ts'], rules: restrict(CONTROL_PLANE, NODE_AGENT, HARNESS, ROUTER) },
  { files: ['apps/fake-sandboxd/test/**/*.ts'], rules: restrict(CONTROL_PLANE, NODE_AGENT, ROUTER) },
  { files: ['apps/router/src/**/*.ts'], rules: restrict(CONTROL_PLANE, NODE_AGENT, FAKE_SANDBOXD, HARNESS) },
  { files: ['apps/router/test/**/*.ts'], rules: restrict(CONTROL_PLANE, NODE_AGENT, FAKE_SANDBOXD_FILES) },
  // The harness starts apps by their dist paths; the e2e spec only uses what a user has.
  {
    files: ['test/harness/**/*.ts', 'test/e2e/**/*.ts'],
    rules: restrict(CONTROL_PLANE, NODE_AGENT, FAKE_SANDBOXD, ROUTER),
  },
);
