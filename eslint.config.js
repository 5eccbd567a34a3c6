import js from '@eslint/js';
import tseslint from 'typescript-eslint';

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
  {
    // Boundaries: libs never import apps; apps never import each other.
    files: ['libs/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: ['@warmpool/control-plane', '@warmpool/node-agent', '@warmpool/fake-sandboxd', '**/apps/**'] }],
    },
  },
  {
    files: ['apps/control-plane/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: ['@warmpool/node-agent', '@warmpool/fake-sandboxd', '**/apps/node-agent/**', '**/apps/fake-sandboxd/**'] }] },
  },
  {
    files: ['apps/node-agent/src/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: ['@warmpool/control-plane', '@warmpool/fake-sandboxd', '**/apps/control-plane/**', '**/apps/fake-sandboxd/**'] }] },
  },
  {
    files: ['apps/fake-sandboxd/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: ['@warmpool/control-plane', '@warmpool/node-agent', '**/apps/control-plane/**', '**/apps/node-agent/**'] }] },
  },
);
