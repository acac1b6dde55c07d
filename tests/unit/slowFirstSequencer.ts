// The order test files start in. Vitest starts the files it has timings for longest first, but a fresh clone (CI)
// has none, and then it starts the largest files first: a slow small file can start last and keep one fork busy
// for a minute after the other has finished. These files, each 20 s or more on the 2-core CI machine (hooks
// included; measured in CI runs of 2026-11-27), start first, slowest first; the rest follow in vitest's own order.
import { BaseSequencer, type TestSpecification } from 'vitest/node';

export const SLOW_FIRST = [
  'tests/unit/cli/train-qwen-shape.test.ts',
  'tests/unit/model/kernels-webgpu.test.ts',
  'tests/unit/cli/fuzz-cli.test.ts',
  'tests/unit/eval/cli.test.ts',
  // After train-qwen-shape: both read the 2-layer Qwen cut, which the first to start makes and the other waits for.
  'tests/unit/model/init-model.test.ts',
  'tests/unit/model/hf-interop.test.ts',
  'tests/unit/model/generate-webgpu.test.ts',
  'tests/unit/cli/bench-torch-step.test.ts',
  'tests/unit/experiments/record-lesson.test.ts',
  'tests/unit/model/policy.test.ts',
  'tests/unit/cli/bench-model.test.ts',
];

export default class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (spec: TestSpecification) => {
      const i = SLOW_FIRST.findIndex((file) => spec.moduleId.endsWith(file));
      return i < 0 ? SLOW_FIRST.length : i;
    };
    return sorted
      .map((spec, i) => ({ spec, i }))
      .sort((a, b) => rank(a.spec) - rank(b.spec) || a.i - b.i)
      .map(({ spec }) => spec);
  }
}
