// Where one qwen0.5b (or other bench shape's) training update spends its time on a GPU: wall seconds of the forward + backward and of the
// AdamW step (clipping included) apart, then one update under tf.profile, whose per-kernel times come from WebGPU
// timestamp queries (GPU time) where the adapter has them: summed by kernel name next to the wall time, it says
// whether an update waits on the GPU or on issuing kernels. The workload is `ragen bench`'s qwen0.5b train row
// (random weights, loss = -mean log-prob - 0.001 entropy) at each token count asked for.
// Then the same for generation: one prompt of each --prefill length, 4 new tokens (the memory section's rollout
// phase).
//   node --import tsx tools/device/update-profile.ts [--backend webgpu] [--shape qwen0.5b] [--tokens 32,1536]
//                                                    [--prefill 256,1532] [--layers N] [--json FILE]
// Run by tools/device/full-run.sh (section `profile`); on this machine, to check it: --backend wasm --shape tiny.
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import * as tf from '@tensorflow/tfjs';
import { benchShape, computes } from '../../src/bench/model';
import { AdamW } from '../../src/model/adamw';
import { GenerationSession } from '../../src/model/generate';
import { initBackend } from '../../src/model/backend';
import { Qwen2Model, initQwen2Weights } from '../../src/model/qwen2';
import { namedVariableGrads, tokenLogProbs } from '../../src/model/scoring';

const { values: args } = parseArgs({
  options: {
    backend: { type: 'string', default: 'webgpu' },
    shape: { type: 'string', default: 'qwen0.5b' },
    tokens: { type: 'string', default: '32,1536' },
    prefill: { type: 'string', default: '' },
    layers: { type: 'string' },
    json: { type: 'string' },
  },
});
const info = await initBackend(args.backend as 'webgpu');
// (Imported on demand: full-run.sh's baseline section runs this file inside older commits, which lack the router.)
const route = await import('../../src/model/webgpuMatMulRoute').catch(() => null);
const matmul = info.name === 'webgpu' && route ? route.webGpuMatMul() : 'tfjs';
console.log(
  `update-profile: ${info.adapter ?? args.backend}; matmul: ${matmul} (RAGEN_WEBGPU_MATMUL=tiled|tfjs chooses on webgpu)`,
);
const base = benchShape(args.shape!).config;
const config = args.layers ? { ...base, num_hidden_layers: Number(args.layers) } : base;
// The same weights drawn on every core where the tree has parallelNormal.ts (older commits of the baseline section
// draw them on one thread: tens of seconds of the lent GPU's time at qwen0.5b).
const parallelInit = await import('../../src/model/parallelNormal').catch(() => null);
const model = new Qwen2Model(
  config,
  parallelInit ? await parallelInit.initQwen2WeightsParallel(config, 0) : initQwen2Weights(config, 0),
);
const optimizer = new AdamW(model.variables, { lr: 1e-6 });
const probe = model.variables['model.norm.weight'];
const report: Record<string, unknown>[] = [];

for (const tokens of args.tokens!.split(',').map(Number)) {
  // Seeded by the string 'int32' (tfjs seeds its generator with a string as with a number): the same ids every run.
  const ids = tf.tidy(() => tf.randomUniformInt([1, tokens], 0, config.vocab_size, 'int32')) as tf.Tensor2D;
  // src/bench/model.ts's benchLossGrads, written out: full-run.sh's baseline section runs this file in older commits.
  const gradients = () =>
    namedVariableGrads(model.variables, () =>
      tf.tidy(() => {
        const { logProbs, entropy } = tokenLogProbs(model, ids);
        return logProbs.mean().neg().sub(entropy.mean().mul(0.001)) as tf.Scalar;
      }),
    );
  // webgpu queues work: reading a value waits for everything before it.
  const sync = async (t: tf.Tensor) => {
    const first = tf.tidy(() => t.reshape([-1]).slice(0, 1));
    await first.data();
    first.dispose();
  };
  const update = async () => {
    const t0 = performance.now();
    const { value, grads } = gradients();
    await sync(grads['model.norm.weight']);
    const t1 = performance.now();
    await optimizer.stepClipped(grads, 1.0);
    await sync(probe);
    const t2 = performance.now();
    tf.dispose([value, ...Object.values(grads)]);
    return { gradsS: (t1 - t0) / 1000, adamwS: (t2 - t1) / 1000 };
  };
  const cold = await update();
  console.log(`update-profile: ${tokens} tokens: first (cold) update ${(cold.gradsS + cold.adamwS).toFixed(2)} s`);
  const warm = [await update(), await update()];
  const mean = (k: 'gradsS' | 'adamwS') => (warm[0][k] + warm[1][k]) / 2;
  const tensors = tf.memory().numTensors;
  const t0 = performance.now();
  const prof = await tf.profile(async () => {
    await update();
  });
  const profiledS = (performance.now() - t0) / 1000;
  const kernels = byKernel(prof);
  const gpuMs = kernels.reduce((s, k) => s + k.ms, 0);
  const count = kernels.reduce((s, k) => s + k.count, 0);
  console.log(
    `update-profile: ${tokens} tokens: forward+backward ${mean('gradsS').toFixed(3)} s, AdamW + clipping ` +
      `${mean('adamwS').toFixed(3)} s (mean of 2 warm updates); profiled update ${profiledS.toFixed(2)} s wall, ` +
      `${count} kernels, ${(gpuMs / 1000).toFixed(3)} s kernel time; tensors before/after ${tensors}/${tf.memory().numTensors}`,
  );
  for (const k of kernels.slice(0, 15))
    console.log(`  ${k.name.padEnd(28)} ${String(k.count).padStart(6)} x  ${k.ms.toFixed(1).padStart(9)} ms`);
  report.push({
    tokens,
    cold,
    warm,
    gradsS: mean('gradsS'),
    adamwS: mean('adamwS'),
    profiledS,
    kernelCount: count,
    kernelMs: gpuMs,
    kernels,
  });
  ids.dispose();
}

/** Kernels of a profiled call summed by name (GPU time where the backend has timestamp queries). */
function byKernel(prof: Awaited<ReturnType<typeof tf.profile>>) {
  const byName = new Map<string, { count: number; ms: number }>();
  for (const k of prof.kernels) {
    if (!computes(k.name)) continue;
    const e = byName.get(k.name) ?? { count: 0, ms: 0 };
    e.count++;
    e.ms += typeof k.kernelTimeMs === 'number' ? k.kernelTimeMs : 0;
    byName.set(k.name, e);
  }
  return [...byName].map(([name, e]) => ({ name, ...e })).sort((a, b) => b.ms - a.ms);
}

const prefill: Record<string, unknown>[] = [];
for (const length of args.prefill!.split(',').filter(Boolean).map(Number)) {
  const prompt = Array.from({ length }, (_, i) => (i * 7919) % config.vocab_size);
  const run = async () => {
    const session = new GenerationSession(model);
    try {
      const t0 = performance.now();
      await session.generate([prompt], { maxNewTokens: 4, temperature: 1, seed: 1, padTokenId: 0 }, [0]);
      return (performance.now() - t0) / 1000;
    } finally {
      session.dispose();
    }
  };
  const cold = await run();
  const warm = cold < 10 ? await run() : null; // a slow prompt is run twice, not three times
  let profiledS = 0;
  const prof = await tf.profile(async () => {
    profiledS = await run();
  });
  const kernels = byKernel(prof);
  const gpuMs = kernels.reduce((s, k) => s + k.ms, 0);
  console.log(
    `update-profile: generate, prompt ${length} + 4 new: cold ${cold.toFixed(2)} s, warm ${warm?.toFixed(2) ?? '-'} s, ` +
      `profiled ${profiledS.toFixed(2)} s wall / ${(gpuMs / 1000).toFixed(3)} s kernel time`,
  );
  for (const k of kernels.slice(0, 8))
    console.log(`  ${k.name.padEnd(28)} ${String(k.count).padStart(6)} x  ${k.ms.toFixed(1).padStart(9)} ms`);
  prefill.push({ length, cold, warm, profiledS, kernelMs: gpuMs, kernels });
}
if (args.json)
  writeFileSync(
    args.json,
    JSON.stringify(
      {
        adapter: info.adapter,
        backend: args.backend,
        matmul,
        shape: args.shape,
        layers: config.num_hidden_layers,
        report,
        prefill,
      },
      null,
      1,
    ),
  );
optimizer.dispose();
model.dispose();
process.exit(0); // Dawn's device can keep Node's event loop alive
