// wasm's decoder layer of generation in one kernel (kernels/wasm.ts, decodeLayer): a prefill and two decode steps
// through the KV cache give each position the hidden state a full causal forward pass gives it, with the layers run
// as one kernel each; and the cache the kernel writes is the one the next step reads. Rows whose caches begin alike
// are found so (wasmCacheSharedPrefix, bit for bit), and decoding that reads those slots from row 0 gives the same bits.
// A decode step computes only the rows whose new slot is visible, and those get the same bits as when all are computed.
import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../../src/model/backend';
import { K, wasmCacheSharedPrefix } from '../../../src/model/kernels';
import { Qwen2Model, initQwen2Weights, disposeInferenceWeights, type KvCache } from '../../../src/model/qwen2';
import { TINY_GENERATE_CONFIG } from './tiny-generate-config';

// Head size 12 (48 / 4): the attention's remainder path; 3 query heads per key head; an intermediate size off 8.
const config = { ...TINY_GENERATE_CONFIG, hidden_size: 48, intermediate_size: 36, num_key_value_heads: 1 };

beforeAll(async () => {
  await initBackend('wasm');
});

/** Tokens from..to-1 of every row as hiddenWithCache's inputs: ids [B, T], their positions, and a key mask over the
 * cache that shows slots 0..to-1. */
function stepInputs(rows: number[][], from: number, to: number, capacity: number) {
  return {
    ids: tf.tensor2d(
      rows.map((r) => r.slice(from, to)),
      [rows.length, to - from],
      'int32',
    ),
    positions: tf.tensor1d(
      rows.flatMap(() => Array.from({ length: to - from }, (_, j) => from + j)),
      'int32',
    ),
    keyMask: tf.tensor2d(
      rows.flatMap(() => Array.from({ length: capacity }, (_, s) => (s < to ? 1 : 0))),
      [rows.length, capacity],
    ),
  };
}

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
      const { ids, positions, keyMask } = stepInputs(rows, from, to, capacity);
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

  it('wasmCacheSharedPrefix: the leading slots whose keys and values are the same bits in every row', () => {
    const [B, C, KW] = [3, 6, 4];
    const k = new Float32Array(B * C * KW).map((_, i) => (i % (C * KW)) / 7); // every row alike
    const v = k.map((x) => -x);
    const at = (b: number, s: number, d: number) => (b * C + s) * KW + d;
    const prefix = (kk: Float32Array, vv: Float32Array, upto = C) => {
      const [kt, vt] = [tf.tensor3d(kk, [B, C, KW]), tf.tensor3d(vv, [B, C, KW])];
      const n = wasmCacheSharedPrefix(kt, vt, upto);
      tf.dispose([kt, vt]);
      return n;
    };
    expect(prefix(k, v)).toBe(C);
    expect(prefix(k, v, 4)).toBe(4);
    const k2 = k.slice();
    k2[at(2, 4, 3)] += 1e-6; // row 2's key at slot 4
    expect(prefix(k2, v)).toBe(4);
    const v2 = v.slice();
    v2[at(1, 1, 0)] = 0; // row 1's value at slot 1: -0 in row 0 (0 / 7, negated), +0 here: equal as numbers, not bits
    expect(prefix(k, v2)).toBe(1);
  });

  it('decoding rows whose caches begin alike with the shared slots read from row 0 gives the same bits', async () => {
    const model = new Qwen2Model(config, initQwen2Weights(config, 6));
    const weights = model.inferenceWeights();
    // Rows 0 and 1 begin with the same 4 tokens, row 2 with the same 2.
    const rows = [
      [3, 9, 14, 2, 27, 8, 41],
      [3, 9, 14, 2, 19, 7, 2],
      [3, 9, 30, 5, 11, 7, 2],
    ];
    const [B, P, capacity] = [3, 5, 8];
    const kw = config.num_key_value_heads * (config.hidden_size / config.num_attention_heads);
    const run = (from: number, to: number, cache: KvCache, shared?: number[]) => {
      const { ids, positions, keyMask } = stepInputs(rows, from, to, capacity);
      try {
        return model.hiddenWithCache(ids, positions, to - 1, keyMask, from, cache, weights, shared);
      } finally {
        tf.dispose([ids, positions, keyMask]);
      }
    };
    /** A prefill of P tokens, then two decode steps with `shared(cache)` slots read from row 0. */
    const decode = async (shared: (c: KvCache) => number[] | undefined) => {
      let cache: KvCache = { k: [], v: [] };
      for (let l = 0; l < config.num_hidden_layers; l++) {
        cache.k.push(tf.zeros([B, capacity, kw]));
        cache.v.push(tf.zeros([B, capacity, kw]));
      }
      const prefilled = run(0, P, cache);
      prefilled.hidden.dispose();
      tf.dispose([...cache.k, ...cache.v]); // the new cache shares their memory
      cache = prefilled.cache;
      const slots = shared(cache);
      const hidden: number[][][] = [];
      for (const step of [P, P + 1]) {
        const out = run(step, step + 1, cache, slots);
        tf.dispose([...cache.k, ...cache.v]);
        cache = out.cache;
        hidden.push((await out.hidden.array()) as number[][]);
        out.hidden.dispose();
      }
      for (const t of [...cache.k, ...cache.v]) t.dispose();
      return { slots, hidden };
    };
    const alone = await decode(() => undefined);
    const found = await decode((c) => model.sharedCacheSlots(c, P, weights));
    // Every layer's keys at a slot depend on the tokens up to it: all three rows agree on the first two slots.
    expect(found.slots).toEqual(new Array(config.num_hidden_layers).fill(2));
    expect(found.hidden).toEqual(alone.hidden);
    // The kernel does read row 0 there: claiming all P slots alike changes rows 1 and 2.
    const wrong = await decode(() => new Array(config.num_hidden_layers).fill(P));
    expect(wrong.hidden[0][0]).toEqual(alone.hidden[0][0]);
    expect(wrong.hidden[0][2]).not.toEqual(alone.hidden[0][2]);
    disposeInferenceWeights(weights);
    model.dispose();
  });

  it("a decode step skips the rows whose new slot is masked: their output is their input, their cache slot untouched, the others' bits unchanged", async () => {
    const model = new Qwen2Model(config, initQwen2Weights(config, 7));
    const weights = model.inferenceWeights();
    const rows = [
      [3, 9, 14, 2, 27, 8],
      [11, 5, 5, 30, 19, 7],
      [3, 9, 30, 5, 11, 7],
      [4, 2, 8, 16, 31, 9],
      [6, 1, 22, 13, 40, 3],
    ];
    const [B, P, capacity] = [5, 5, 8];
    const kw = config.num_key_value_heads * (config.hidden_size / config.num_attention_heads);
    /** A prefill of P tokens, then one decode step at slot P with the rows in `skipped` masked there. */
    const decode = async (skipped: number[]) => {
      let cache: KvCache = { k: [], v: [] };
      for (let l = 0; l < config.num_hidden_layers; l++) {
        cache.k.push(tf.zeros([B, capacity, kw]));
        cache.v.push(tf.zeros([B, capacity, kw]));
      }
      const prefill = stepInputs(rows, 0, P, capacity);
      const prefilled = model.hiddenWithCache(
        prefill.ids,
        prefill.positions,
        P - 1,
        prefill.keyMask,
        0,
        cache,
        weights,
      );
      tf.dispose([prefilled.hidden, ...cache.k, ...cache.v, ...Object.values(prefill)]);
      cache = prefilled.cache;
      const step = stepInputs(rows, P, P + 1, capacity);
      const mask = step.keyMask.arraySync();
      for (const r of skipped) mask[r][P] = 0;
      const keyMask = tf.tensor2d(mask);
      const out = model.hiddenWithCache(step.ids, step.positions, P, keyMask, P, cache, weights);
      const result = {
        hidden: (await out.hidden.array()) as number[][],
        // The first layer's cache slot P, row by row.
        slot: ((await out.cache.k[0].array()) as number[][][]).map((row) => row[P]),
      };
      tf.dispose([out.hidden, ...out.cache.k, ...out.cache.v, keyMask, ...Object.values(step)]);
      return result;
    };
    const all = await decode([]);
    const some = await decode([0, 2, 3]); // rows 1 and 4 computed: two runs of one row
    for (const r of [1, 4]) {
      expect(some.hidden[r], `row ${r}`).toEqual(all.hidden[r]);
      expect(some.slot[r], `row ${r}`).toEqual(all.slot[r]);
    }
    // A skipped row passes its embedding through every layer (the final norm applied): what it gives when every row
    // is skipped.
    const none = await decode([0, 1, 2, 3, 4]);
    expect(none.slot).toEqual(new Array(B).fill(new Array(kw).fill(0))); // as the prefill left them
    for (const r of [0, 2, 3]) {
      expect(some.slot[r], `row ${r}'s slot`).toEqual(new Array(kw).fill(0));
      expect(some.hidden[r], `row ${r}`).toEqual(none.hidden[r]);
      expect(some.hidden[r], `row ${r}`).not.toEqual(all.hidden[r]);
    }
    expect(all.slot[0]).not.toEqual(new Array(kw).fill(0));
    disposeInferenceWeights(weights);
    model.dispose();
  });
});
