// Where a tiny-model training update's time goes: tf.profile of forward + backward + clipping + AdamW, kernel count
// and kernel time summed by kernel name, then the mean wall time of 5 more updates.
//   npx tsx tools/bench/profile-update.ts [tiny|sokoban-tiny] [wasm|webgpu|cpu]
import * as tf from '@tensorflow/tfjs';
import { benchShape } from '../../src/bench/model';
import { AdamW } from '../../src/model/adamw';
import { initBackend } from '../../src/model/backend';
import { Qwen2Model, initQwen2Weights } from '../../src/model/qwen2';
import { namedVariableGrads, tokenLogProbs } from '../../src/model/scoring';
import { printKernelRows, profileKernels } from './kernelProfile';

await initBackend((process.argv[3] ?? 'wasm') as 'wasm' | 'webgpu' | 'cpu');
const shape = benchShape(process.argv[2] ?? 'tiny');
const w = shape.workload;
const model = new Qwen2Model(shape.config, initQwen2Weights(shape.config, 0));
const ids = tf.randomUniformInt([w.trainBatch, w.trainSeq], 0, shape.config.vocab_size) as tf.Tensor2D;
const opt = new AdamW(model.variables, { lr: 1e-6 });
const update = async () => {
  const { value, grads } = namedVariableGrads(model.variables, () =>
    tf.tidy(() => {
      const { logProbs, entropy } = tokenLogProbs(model, ids);
      return logProbs.mean().neg().sub(entropy.mean().mul(0.001)) as tf.Scalar;
    }),
  );
  await opt.stepClipped(grads, 1.0);
  tf.dispose([value, ...Object.values(grads)]);
};
await update();
const prof = await profileKernels(update);
console.log(
  `${shape.name}: ${prof.kernels} kernels per update, kernel time ${prof.totalMs.toFixed(0)} ms, wall ${prof.wallMs.toFixed(0)} ms (profiled)`,
);
printKernelRows(prof, 40, 22, 5);

const probe = model.variables['model.norm.weight'];
const t1 = performance.now();
for (let i = 0; i < 5; i++) await update();
await probe.data();
console.log(`  mean wall time of 5 updates: ${((performance.now() - t1) / 5).toFixed(0)} ms`);
