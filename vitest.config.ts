import * as os from 'node:os';
import { defineConfig } from 'vitest/config';
import SlowFirstSequencer from './tests/unit/slowFirstSequencer';

// Unit tests run in Node on the cpu / wasm backends (and webgpu through Dawn + SwiftShader where a test asks).
export default defineConfig({
  test: {
    include: ['tests/unit/**/*.test.ts'],
    environment: 'node',
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // Once per run: the scratch directory for fixtures shared by several test files (tests/unit/sharedFixtures.ts).
    globalSetup: ['tests/unit/globalSetup.ts'],
    // Files run in forked processes (tfjs's wasm and Dawn's WebGPU want a process of their own, not a worker thread),
    // and a fork runs file after file without a fresh module registry (isolate: false): a new process and a new
    // import of tfjs for each of 130-odd files cost about 100 s of a CI run. tfjs's engine is therefore shared by
    // the files a fork runs, so every file that uses tensors picks its backend in beforeAll (initBackend), counts
    // tensors relative to a count it took itself, and puts back any env variable it changes.
    pool: 'forks',
    isolate: false,
    // The slowest files start first, so that no fork is left running one of them alone at the end.
    sequence: { sequencer: SlowFirstSequencer },
    // At least two files at a time. Vitest's default (one fewer than the cores) runs one file at a time on a 2-core
    // machine, yet a test file keeps about one core busy (tfjs's cpu and wasm backends are single-threaded in Node)
    // and many spend seconds waiting on a `ragen` or Python child process: two side by side use the idle core.
    maxWorkers: Math.max(2, os.availableParallelism() - 1),
    // Dawn without its zero-fill of workgroup memory: SwiftShader compiles each WebGPU kernel several times faster, and
    // a kernel that reads workgroup memory it never wrote may read leftovers instead of zeros (`dawnFlagsFromEnv` in
    // src/model/backend.ts). Child processes (`ragen --backend webgpu`) inherit it. RAGEN_DAWN_FLAGS set outside
    // (even to '') replaces it, e.g. to test with Dawn's defaults.
    env: { RAGEN_DAWN_FLAGS: process.env.RAGEN_DAWN_FLAGS ?? 'enable-dawn-features=disable_workgroup_init' },
    // The JSON report feeds scripts/test-summary.mjs, which prints the suite's one-line total after `npm test`.
    reporters: ['default', ['json', { outputFile: 'reports/vitest.json' }]],
  },
});
