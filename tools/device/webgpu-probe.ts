// What limits tfjs-webgpu on a real GPU for the tiny presets' model: kernels per update, the command batch size
// (WEBGPU_DEFERRED_SUBMIT_BATCH_SIZE, tfjs's default 15 dispatches per submit) and how often generation reads the
// sampled ids back. Run on the GPU server:  npx tsx tools/device/webgpu-probe.ts [shape]   (shape: tiny by default)
import * as tf from '@tensorflow/tfjs';
import { benchModel, benchShape } from '../../src/bench/model';
import { initBackend } from '../../src/model/backend';
import { generate } from '../../src/model/generate';
import { Qwen2Model } from '../../src/model/qwen2';
import { initQwen2WeightsParallel } from '../../src/model/parallelNormal';
import { namedVariableGrads, tokenLogProbs } from '../../src/model/scoring';

const shapeName = process.argv[2] ?? 'tiny';
const info = await initBackend('webgpu');
console.log(`webgpu adapter: ${info.adapter}`);
const shape = benchShape(shapeName);
const w = shape.workload;

// Kernels per training forward + backward (no optimizer), counted by tf.profile.
{
  const model = new Qwen2Model(shape.config, await initQwen2WeightsParallel(shape.config, 0));
  const ids = tf.randomUniformInt([w.trainBatch, w.trainSeq], 0, shape.config.vocab_size) as tf.Tensor2D;
  const prof = await tf.profile(() => {
    const { value, grads } = namedVariableGrads(model.variables, () =>
      tf.tidy(() => tokenLogProbs(model, ids).logProbs.mean().neg() as tf.Scalar),
    );
    tf.dispose([value, ...Object.values(grads)]);
  });
  const byName = new Map<string, number>();
  for (const k of prof.kernels) byName.set(k.name, (byName.get(k.name) ?? 0) + 1);
  console.log(
    `${shapeName}: ${prof.kernels.length} kernels per forward+backward; top: ` +
      [...byName]
        .sort((a, b) => b[1] - a[1])
        .slice(0, 8)
        .map(([n, c]) => `${n} ${c}`)
        .join(', '),
  );
  ids.dispose();
  model.dispose();
}

// Command batching: train and generate tokens/s at several submit batch sizes.
for (const batch of [15, 64, 256, 1024]) {
  tf.env().set('WEBGPU_DEFERRED_SUBMIT_BATCH_SIZE', batch);
  const r = await benchModel({ backend: 'webgpu', shapes: [shapeName], seconds: 2 });
  console.log(
    `submit batch ${batch}: ` +
      Object.entries(r)
        .map(([k, v]) => `${k} ${v.toFixed(0)}`)
        .join(', '),
  );
}
tf.env().set('WEBGPU_DEFERRED_SUBMIT_BATCH_SIZE', 15);

// Generation: read the sampled ids back every k steps.
{
  const model = new Qwen2Model(shape.config, await initQwen2WeightsParallel(shape.config, 0));
  const prompts = Array.from({ length: w.genBatch }, (_, r) =>
    Array.from({ length: w.promptLen }, (_, j) => (r * 31 + j * 7) % shape.config.vocab_size),
  );
  for (const readEvery of [1, 8, 32, 64]) {
    const opts = { maxNewTokens: w.newTokens, temperature: 1, seed: 1, padTokenId: 0, readEvery };
    await generate(model, prompts, opts);
    const t0 = performance.now();
    const reps = 3;
    for (let i = 0; i < reps; i++) await generate(model, prompts, opts);
    const s = (performance.now() - t0) / 1000 / reps;
    console.log(
      `generate readEvery ${readEvery}: ${(s * 1000).toFixed(0)} ms per call, ${((w.genBatch * w.newTokens) / s).toFixed(0)} tokens/s`,
    );
  }
  model.dispose();
}
