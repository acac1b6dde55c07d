// Which kernels one decoder layer dispatches, by name: per decoded token, and per training update with gradient
// checkpointing (as the trainer runs sokoban-qwen). On a GPU a decode step and a small update wait on issuing kernels
// more than on the GPU (BENCHMARKS.md, "GPU server, 2026-11-26"), so each kernel a layer drops is time; the counts
// are the same on every adapter, so they are measured here on SwiftShader or wasm.
//
// One layer's share is the difference between a 2-layer and a 1-layer model of the shape's widths (its vocabulary cut
// to 1,024: the head is in the constant), as `ragen bench` counts kernels (computing kernels only: src/bench/model.ts's
// computes()).
//   node --import tsx tools/device/kernel-census.ts [--backend webgpu] [--shape qwen0.5b]
import { parseArgs } from 'node:util';
import * as tf from '@tensorflow/tfjs';
import { benchShape, benchUpdate, computingKernelNames } from '../../src/bench/model';
import { AdamW } from '../../src/model/adamw';
import { initBackend } from '../../src/model/backend';
import type { Qwen2Config } from '../../src/model/config';
import { generate } from '../../src/model/generate';
import { Qwen2Model, initQwen2Weights } from '../../src/model/qwen2';

/** Kernel name -> dispatches of one layer, and of everything outside the layers. */
export interface Census {
  perLayer: Map<string, number>;
  constant: Map<string, number>;
}

const tally = (names: string[]) => names.reduce((m, n) => m.set(n, (m.get(n) ?? 0) + 1), new Map<string, number>());

/** The census of `what` at `base`'s widths (2 prompts of 8 tokens for decoding, 1 x 8 tokens for an update). */
export async function kernelCensus(base: Qwen2Config, what: 'decode' | 'update'): Promise<Census> {
  const counts: Map<string, number>[] = [];
  for (const layers of [1, 2]) {
    const config = { ...base, num_hidden_layers: layers, vocab_size: 1024 };
    const model = new Qwen2Model(config, initQwen2Weights(config, 0));
    try {
      if (what === 'decode') {
        // One decoded token: generating 5 tokens minus generating 4 (the same prefill, one more step).
        const prompts = [
          [1, 2, 3, 4, 5, 6, 7, 8],
          [3, 4, 5, 6, 7, 8, 9, 10],
        ];
        const run = (n: number) =>
          computingKernelNames(async () => {
            await generate(model, prompts, { maxNewTokens: n, temperature: 1, seed: 0, padTokenId: 0 });
          });
        await run(2); // the model's lazily built tables
        const [four, five] = [tally(await run(4)), tally(await run(5))];
        counts.push(new Map([...five].map(([n, c]) => [n, c - (four.get(n) ?? 0)])));
      } else {
        model.gradientCheckpointing = true;
        const ids = tf.tensor2d([[1, 2, 3, 4, 5, 6, 7, 8]], undefined, 'int32');
        const optimizer = new AdamW(model.variables, { lr: 1e-6 });
        const run = () => computingKernelNames(() => benchUpdate(model, ids, optimizer));
        try {
          await run();
          counts.push(tally(await run()));
        } finally {
          ids.dispose();
          optimizer.dispose();
        }
      }
    } finally {
      model.dispose();
    }
  }
  const [one, two] = counts;
  const perLayer = new Map<string, number>(),
    constant = new Map<string, number>();
  for (const name of new Set([...one.keys(), ...two.keys()])) {
    const layer = (two.get(name) ?? 0) - (one.get(name) ?? 0);
    const rest = (one.get(name) ?? 0) - layer;
    if (layer) perLayer.set(name, layer);
    if (rest) constant.set(name, rest);
  }
  return { perLayer, constant };
}

const sum = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values: args } = parseArgs({
    options: { backend: { type: 'string', default: 'webgpu' }, shape: { type: 'string', default: 'qwen0.5b' } },
  });
  const info = await initBackend(args.backend as 'webgpu');
  const config = benchShape(args.shape!).config;
  console.log(`kernel-census: ${args.shape} widths on ${info.adapter ?? info.name}`);
  for (const what of ['decode', 'update'] as const) {
    const c = await kernelCensus(config, what);
    const layers = config.num_hidden_layers;
    console.log(
      `${what === 'decode' ? 'per decoded token' : 'per checkpointed update (1 x 8 tokens, AdamW included)'}: ` +
        `${sum(c.perLayer)} per layer + ${sum(c.constant)} = ${sum(c.perLayer) * layers + sum(c.constant)} at ${layers} layers`,
    );
    for (const [name, n] of [...c.perLayer].sort((a, b) => b[1] - a[1]))
      console.log(`  ${name.padEnd(26)} ${n} per layer`);
    console.log(`  outside the layers: ${[...c.constant].map(([n, k]) => `${n} ${k}`).join(', ')}`);
  }
}
