import { defineConfig } from 'vitest/config';

// Unit tests run in Node on the cpu / wasm backends (and webgpu through Dawn + SwiftShader where a test asks).
export default defineConfig({
  test: {
    include: ['tests/unit/**/*.test.ts'],
    environment: 'node',
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // tfjs keeps one global engine per process: isolate test files in forks so backends do not leak between them.
    pool: 'forks',
    // The JSON report feeds scripts/test-summary.mjs, which prints the suite's one-line total after `npm test`.
    reporters: ['default', ['json', { outputFile: 'reports/vitest.json' }]],
  },
});
