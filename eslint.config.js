// ESLint for the whole repository: TypeScript (typescript-eslint) and Svelte 5 components (eslint-plugin-svelte),
// their recommended rules, and Prettier for layout (prettier --check runs beside it in `npm run lint`).
import js from '@eslint/js';
import svelte from 'eslint-plugin-svelte';
import globals from 'globals';
import ts from 'typescript-eslint';

export default ts.config(
  {
    ignores: ['node_modules/', 'dist/', 'public/', 'reports/', 'runs/', 'test-results/', 'playwright-report/', '.venv-hf/',
      '**/*.d.ts', '.*/'],
  },
  js.configs.recommended,
  ...ts.configs.recommended,
  ...svelte.configs['flat/recommended'],
  {
    languageOptions: { globals: { ...globals.browser, ...globals.node, ...globals.worker } },
    rules: {
      // `_name` marks a parameter or binding kept for its position (a callback's signature, a destructured rest).
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
    },
  },
  {
    files: ['**/*.svelte', '**/*.svelte.ts'],
    languageOptions: { parserOptions: { parser: ts.parser, extraFileExtensions: ['.svelte'] } },
  },
);
