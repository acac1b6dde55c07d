// How many tfjs kernels and GPU dispatches a training update and a decoded token cost on webgpu, with the fused
// WGSL kernels (src/model/kernels/webgpu.ts) and without them (unregistered: the ops fall back to stock tfjs).
// Kernels are counted with tf.profile; dispatches by counting the backend's compute programs (one kernel may run
// several, or none: reshapes are free). Per decoded token = the difference between two generate calls that differ
// only in their token limit, divided by the difference.
//   npx tsx tools/bench/webgpu-dispatches.ts [tiny|sokoban-tiny|qwen0.5b] [--batch N] [--seq N]
// On a machine without a GPU, set VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json (slow: keep it tiny).
import * as tf from '@tensorflow/tfjs';
import { benchShape } from '../../src/bench/model';
import { AdamW, clipGradNormOnDevice } from '../../src/model/adamw';
import { initBackend } from '../../src/model/backend';
import { generate } from '../../src/model/generate';
import { K } from '../../src/model/kernels/index';
import { registerWebGpuKernels } from '../../src/model/kernels/webgpu';
import { Qwen2Model, initQwen2Weights } from '../../src/model/qwen2';
import { namedVariableGrads, tokenLogProbs } from '../../src/model/scoring';

const args = process.argv.slice(2);
const option = (name: string, fallback: number) => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};
const info = await initBackend('webgpu');
const shape = benchShape(args.find((a) => !a.startsWith('--') && !/^\d+$/.test(a)) ?? 'tiny');
const batch = option('--batch', 2), seq = option('--seq', 32);
const model = new Qwen2Model(shape.config, initQwen2Weights(shape.config, 0));
const ids = tf.randomUniformInt([batch, seq], 0, shape.config.vocab_size, undefined, 1) as tf.Tensor2D;
const opt = new AdamW(model.variables, { lr: 1e-6 });

// Count the compute programs the backend records.
const backend = tf.backend() as unknown as { runWebGPUProgram: (...a: unknown[]) => unknown };
const run = backend.runWebGPUProgram.bind(backend);
let dispatches = 0;
backend.runWebGPUProgram = (...a: unknown[]) => { dispatches++; return run(...a); };

type Count = { kernels: number; dispatches: number; byName: Map<string, number> };
async function count(f: () => Promise<unknown> | unknown): Promise<Count> {
  await f();   // warm-up: shaders compile, buffers are pooled
  const before = dispatches;
  const prof = await tf.profile(async () => { await f(); });
  const byName = new Map<string, number>();
  for (const k of prof.kernels) byName.set(k.name, (byName.get(k.name) ?? 0) + 1);
  return { kernels: prof.kernels.length, dispatches: dispatches - before, byName };
}

const update = () => {
  const { value, grads } = namedVariableGrads(model.variables, () => tf.tidy(() => {
    const { logProbs, entropy } = tokenLogProbs(model, ids);
    return logProbs.mean().neg().sub(entropy.mean().mul(0.001)) as tf.Scalar;
  }));
  const clipped = clipGradNormOnDevice(grads, 1.0);
  opt.step(clipped.grads);
  tf.dispose([value, clipped.norm, ...Object.values(grads), ...Object.values(clipped.grads)]);
};
const prompts = Array.from({ length: batch }, (_, r) => Array.from({ length: 5 + 3 * r }, (_, j) => (7 * r + j) % shape.config.vocab_size));
const gen = (maxNewTokens: number) => () => generate(model, prompts, { maxNewTokens, temperature: 1, seed: 0, padTokenId: 0 });

async function measure(label: string): Promise<void> {
  const u = await count(update);
  const g8 = await count(gen(8)), g16 = await count(gen(16));
  const perToken = (k: 'kernels' | 'dispatches') => (g16[k] - g8[k]) / 8;
  console.log(`${label}: update ${u.kernels} kernels / ${u.dispatches} dispatches; ` +
    `per decoded token ${perToken('kernels')} kernels / ${perToken('dispatches')} dispatches ` +
    `(generate 16 tokens: ${g16.kernels} / ${g16.dispatches})`);
  const top = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]).map(([n, c]) => `${n} ${c}`).join(', ');
  console.log(`  update: ${top(u.byName)}`);
  const names = [...g16.byName].map(([n, c]) => [n, (c - (g8.byName.get(n) ?? 0)) / 8] as const).filter(([, c]) => c > 0);
  console.log(`  per decoded token: ${names.sort((a, b) => b[1] - a[1]).map(([n, c]) => `${n} ${c}`).join(', ')}`);
}

console.log(`${shape.name} (${shape.config.num_hidden_layers} layers) on ${info.adapter}; update batch ${batch} x ${seq}, generate batch ${batch}`);
await measure('fused webgpu kernels');
for (const name of Object.values(K)) tf.unregisterKernel(name, 'webgpu');
await measure('stock tfjs (unfused)  ');
registerWebGpuKernels();
