// Random weights drawn on every core (src/model/parallelNormal.ts) are the numbers of one sequential loop: the
// seekable fill against the generator drawn one by one, worker slices against one thread, and the parallel
// initQwen2Weights against the sequential one, bit for bit (cpu backend; the weights are host arrays).
import * as tf from '@tensorflow/tfjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Qwen2Config } from '../../../src/model/config';
import { initQwen2Weights } from '../../../src/model/qwen2';
import { fillSeededNormal, seededNormal, seededUniform } from '../../../src/model/seeded';
import { NormalFillPool, initQwen2WeightsParallel } from '../../../src/model/parallelNormal';

/** What initQwen2Weights drew before the seekable fill: seededNormal one sample at a time, std x sample. */
function oneByOne(seed: number, skip: number, length: number, std: number): Float32Array {
  const normal = seededNormal(seed);
  for (let j = 0; j < skip; j++) normal();
  return Float32Array.from({ length }, () => std * normal());
}

/** What `ragen init-model` draws: both Box-Muller halves, std x radius first. */
function pairsOneByOne(seed: number, skipPairs: number, length: number, std: number): Float32Array {
  const uniform = seededUniform(seed);
  for (let j = 0; j < 2 * skipPairs; j++) uniform();
  const out = new Float32Array(length);
  for (let j = 0; j < length; j += 2) {
    const r = std * Math.sqrt(-2 * Math.log(1 - uniform()));
    const theta = 2 * Math.PI * uniform();
    out[j] = r * Math.cos(theta);
    if (j + 1 < length) out[j + 1] = r * Math.sin(theta);
  }
  return out;
}

beforeAll(async () => {
  await tf.setBackend('cpu');
});

describe('fillSeededNormal', () => {
  it('writes the samples of seededNormal drawn one by one, from any point of the stream', () => {
    for (const [seed, skip] of [
      [0, 0],
      [7, 1],
      [123456789, 1000],
      [0xffffffff, 12345],
    ]) {
      const out = new Float32Array(777);
      fillSeededNormal(out, seed, 2 * skip, 0.02, false);
      expect(out).toEqual(oneByOne(seed, skip, 777, 0.02));
    }
  });

  it('with both halves, writes the pairs of init-model, an odd length dropping the last sine', () => {
    for (const [seed, skipPairs, length] of [
      [0, 0, 10],
      [3, 50, 11],
      [99, 7, 1],
    ]) {
      const out = new Float32Array(length);
      fillSeededNormal(out, seed, 2 * skipPairs, 0.5, true);
      expect(out).toEqual(pairsOneByOne(seed, skipPairs, length, 0.5));
    }
  });

  it('gives other numbers for another seed or another offset (the test above would catch a frozen stream)', () => {
    const a = new Float32Array(8);
    const b = new Float32Array(8);
    fillSeededNormal(a, 1, 0, 1, false);
    fillSeededNormal(b, 1, 2, 1, false);
    expect(a.subarray(1)).toEqual(b.subarray(0, 7));
    expect(a).not.toEqual(b);
  });
});

describe('NormalFillPool', () => {
  let pool: NormalFillPool;
  beforeAll(() => {
    pool = new NormalFillPool(3);
  });
  afterAll(async () => {
    await pool.close();
  });

  it('draws a tensor in worker slices with the numbers of one thread, in both layouts', async () => {
    const length = (1 << 21) + 5; // past the parallel threshold, not a multiple of 3 or 2
    for (const bothHalves of [false, true]) {
      const drawn = await pool.draw(length, 42, 2 * 1001, 0.02, bothHalves);
      expect(drawn.buffer instanceof SharedArrayBuffer).toBe(true); // the workers' path, not the fallback
      const single = new Float32Array(length);
      fillSeededNormal(single, 42, 2 * 1001, 0.02, bothHalves);
      expect(Buffer.compare(Buffer.from(drawn.buffer, 0, drawn.byteLength), Buffer.from(single.buffer))).toBe(0);
      expect(drawn[length - 1]).not.toBe(0); // the last slice was written
    }
  });

  it('reuses one scratch buffer for large draws, and returns small ones as their own arrays', async () => {
    const a = await pool.draw(1 << 21, 1, 0, 1, false);
    const b = await pool.draw((1 << 21) + 1, 2, 0, 1, false);
    expect(b.buffer === a.buffer).toBe(true);
    const small = await pool.draw(100, 1, 0, 1, false);
    expect(small.buffer === a.buffer).toBe(false);
    const expected = new Float32Array(100);
    fillSeededNormal(expected, 1, 0, 1, false);
    expect(small).toEqual(expected);
  });
});

describe('initQwen2WeightsParallel', () => {
  it('builds the weights of initQwen2Weights, bit for bit, its embedding drawn by workers', async () => {
    const config: Qwen2Config = {
      model_type: 'qwen2',
      vocab_size: 4096,
      hidden_size: 512,
      intermediate_size: 64,
      num_hidden_layers: 2,
      num_attention_heads: 4,
      num_key_value_heads: 2,
      max_position_embeddings: 64,
      rope_theta: 10000,
      rms_norm_eps: 1e-6,
      tie_word_embeddings: true,
      initializer_range: 0.02,
    };
    for (const valueHead of [false, true]) {
      const sequential = initQwen2Weights(config, 5, { valueHead });
      const parallel = await initQwen2WeightsParallel(config, 5, { valueHead });
      expect(Object.keys(parallel)).toEqual(Object.keys(sequential));
      expect(parallel['model.embed_tokens.weight'].size).toBe(1 << 21); // the shared, split path
      for (const name of Object.keys(sequential)) {
        const a = sequential[name].dataSync() as Float32Array;
        const b = parallel[name].dataSync() as Float32Array;
        expect(
          Buffer.compare(
            Buffer.from(a.buffer, a.byteOffset, a.byteLength),
            Buffer.from(b.buffer, b.byteOffset, b.byteLength),
          ),
          name,
        ).toBe(0);
      }
      tf.dispose([...Object.values(sequential), ...Object.values(parallel)]);
    }
  });

  it('keeps the weights initQwen2Weights drew before its seekable fill (warm starts and presets unchanged)', () => {
    const config: Qwen2Config = {
      model_type: 'qwen2',
      vocab_size: 50,
      hidden_size: 16,
      intermediate_size: 24,
      num_hidden_layers: 1,
      num_attention_heads: 2,
      num_key_value_heads: 1,
      max_position_embeddings: 64,
      rope_theta: 10000,
      rms_norm_eps: 1e-6,
      tie_word_embeddings: false,
      initializer_range: 0.3,
    };
    const weights = initQwen2Weights(config, 9);
    // The old loop: one seededNormal stream over the drawn tensors in order, norms 1, biases 0.
    const normal = seededNormal(9);
    for (const [name, t] of Object.entries(weights)) {
      const data = t.dataSync();
      if (name.endsWith('norm.weight')) expect(Array.from(data).every((x) => x === 1)).toBe(true);
      else if (name.endsWith('.bias')) expect(Array.from(data).every((x) => x === 0)).toBe(true);
      else expect(data, name).toEqual(Float32Array.from({ length: t.size }, () => 0.3 * normal()));
    }
    tf.dispose(Object.values(weights));
  });
});
