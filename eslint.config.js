// ESLint for the whole repository: TypeScript (typescript-eslint) and Svelte 5 components (eslint-plugin-svelte),
// their recommended rules, and Prettier for layout (prettier --check runs beside it in `npm run lint`).
import js from '@eslint/js';
import svelte from 'eslint-plugin-svelte';
import globals from 'globals';
import ts from 'typescript-eslint';

export default ts.config(
  {
    ignores: [
      'node_modules/',
      'dist/',
      'public/',
      'reports/',
      'runs/',
      'test-results/',
      'playwright-report/',
      '.venv-hf/',
      '**/*.d.ts',
      '.*/',
    ],
  },
  js.configs.recommended,
  ...ts.configs.recommended,
  ...svelte.configs['flat/recommended'],
  {
    languageOptions: { globals: { ...globals.browser, ...globals.node, ...globals.worker } },
    rules: {
      // `_name` marks a parameter or binding kept for its position (a callback's signature, a destructured rest).
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
      // TypeScript's checker already finds undefined names, types included (ESLint's rule does not know DOM types).
      'no-undef': 'off',
    },
  },
  {
    files: ['**/*.svelte', '**/*.svelte.ts'],
    languageOptions: { parserOptions: { parser: ts.parser, extraFileExtensions: ['.svelte'] } },
    rules: {
      // The playground's lists are small and re-rendered whole (options, board cells, a step's turns); a key would
      // be the index, which is what Svelte does without one.
      'svelte/require-each-key': 'off',
      // It flags every Map, Set, Date and URLSearchParams in a component or rune module, reactive or not; here they are
      // local values and registries, and what is reactive is declared with $state.
      'svelte/prefer-svelte-reactivity': 'off',
    },
  },
);
