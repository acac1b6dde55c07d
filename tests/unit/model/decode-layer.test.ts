// wasm's decoder layer of generation in one kernel (kernels/wasm.ts, decodeLayer): a prefill and two decode steps
// through the KV cache give each position the hidden state a full causal forward pass gives it, with the layers run
// as one kernel each; and the cache the kernel writes is the one the next step reads.
import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../../src/model/backend';
import { K } from '../../../src/model/kernels';
import { Qwen2Model, initQwen2Weights, disposeInferenceWeights, type KvCache } from '../../../src/model/qwen2';
import { TINY_GENERATE_CONFIG } from './tiny-generate-config';

// Head size 12 (48 / 4): the attention's remainder path; 3 query heads per key head; an intermediate size off 8.
const config = { ...TINY_GENERATE_CONFIG, hidden_size: 48, intermediate_size: 36, num_key_value_heads: 1 };

beforeAll(async () => {
  await initBackend('wasm');
});

describe('decodeLayer (wasm)', () => {
  it('prefill and decode steps through the cache give the full forward pass hidden states, one kernel per layer', async () => {
    const model = new Qwen2Model(config, initQwen2Weights(config, 5));
    const weights = model.inferenceWeights();
    const rows = [
      [3, 9, 14, 2, 27, 8, 41],
      [11, 5, 5, 30, 19, 7, 2],
    ];
    const [B, T, P] = [2, 7, 5]; // prefill P tokens, then one token at a time
    const capacity = 8;
    const kw = config.num_key_value_heads * (config.hidden_size / config.num_attention_heads);
    let cache: KvCache = { k: [], v: [] };
    for (let l = 0; l < config.num_hidden_layers; l++) {
      cache.k.push(tf.zeros([B, capacity, kw]));
      cache.v.push(tf.zeros([B, capacity, kw]));
    }
    const full = model.hidden(tf.tensor2d(rows, [B, T], 'int32'));
    const expected = (await full.array()) as number[][];
    full.dispose();

    const kernelsRun: string[] = [];
    const advance = async (from: number, to: number) => {
      const ids = tf.tensor2d(
        rows.map((r) => r.slice(from, to)),
        [B, to - from],
        'int32',
      );
      const positions = tf.tensor1d(
        rows.flatMap(() => Array.from({ length: to - from }, (_, j) => from + j)),
        'int32',
      );
      const keyMask = tf.tensor2d(
        rows.flatMap(() => Array.from({ length: capacity }, (_, s) => (s < to ? 1 : 0))),
        [B, capacity],
      );
      let hidden: number[][] = [];
      const profile = await tf.profile(async () => {
        const out = model.hiddenWithCache(ids, positions, to - 1, keyMask, from, cache, weights);
        cache = out.cache;
        hidden = (await out.hidden.array()) as number[][];
        out.hidden.dispose();
      });
      kernelsRun.push(...profile.kernels.map((k) => k.name));
      tf.dispose([ids, positions, keyMask]);
      return hidden;
    };
    const got = [await advance(0, P), await advance(P, P + 1), await advance(P + 1, P + 2)];
    for (const [step, [from, to]] of [
      [0, P],
      [P, P + 1],
      [P + 1, P + 2],
    ].entries()) {
      for (let b = 0; b < B; b++)
        for (let j = from; j < to; j++) {
          const ours = got[step][b * (to - from) + (j - from)];
          const want = expected[b * T + j];
          const err = Math.max(...ours.map((v, d) => Math.abs(v - want[d])));
          expect(err, `row ${b}, position ${j}`).toBeLessThan(1e-4);
        }
    }
    // Each step ran each layer as one kernel, and none of the separate kernels it replaces.
    expect(kernelsRun.filter((n) => n === K.decodeLayer)).toHaveLength(3 * config.num_hidden_layers);
    expect(kernelsRun).not.toContain(K.cachedAttention);
    expect(kernelsRun).not.toContain(K.swiGlu);
    for (const t of [...cache.k, ...cache.v]) t.dispose();
    disposeInferenceWeights(weights);
    model.dispose();
  });
});
