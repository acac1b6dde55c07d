// Seconds to draw a model's random weights (initQwen2Weights, one thread) and, where the tree has it, the same
// weights on every core (src/model/parallelNormal.ts), cpu backend. Run in an older commit's worktree for its baseline.
//   node --import tsx tools/bench/init-weights.ts [qwen0.5b] [layers]
import * as tf from '@tensorflow/tfjs';
import { benchShape } from '../../src/bench/model';
import type { Qwen2Config } from '../../src/model/config';
import { initQwen2Weights } from '../../src/model/qwen2';

await tf.setBackend('cpu');
const base = benchShape(process.argv[2] ?? 'qwen0.5b').config;
const config: Qwen2Config = process.argv[3] ? { ...base, num_hidden_layers: Number(process.argv[3]) } : base;
const parallel = await import('../../src/model/parallelNormal').catch(() => null);
const time = async (label: string, build: () => Promise<Record<string, tf.Tensor>> | Record<string, tf.Tensor>) => {
  const t0 = performance.now();
  const w = await build();
  const s = (performance.now() - t0) / 1000;
  const n = Object.values(w).reduce((a, t) => a + t.size, 0);
  console.log(`${label}: ${s.toFixed(1)} s for ${(n / 1e6).toFixed(0)}M parameters (${(n / 1e6 / s).toFixed(1)}M/s)`);
  tf.dispose(Object.values(w));
};
await time('initQwen2Weights (one thread)', () => initQwen2Weights(config, 0));
if (parallel) await time('initQwen2WeightsParallel (every core)', () => parallel.initQwen2WeightsParallel(config, 0));
