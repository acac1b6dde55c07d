// The matmul section's tfjs side on webgpu (Dawn in Node; SwiftShader here, VK_ICD_FILENAMES set to it unless
// already set), at a made-up shape small enough for SwiftShader: every case gets a tf.matMul row and a row per
// tiled WGSL kernel whose result matches tf.matMul's (f32 to rounding, f16 storage to f16 rounding), GPU times from
// timestamp queries, a row of our own f16-storage pipeline (the only f16 mode SwiftShader's device can run: the other
// modes' self-checks say what they need), the f16 row skipped with a note where a stored row is not a multiple of 4, and no tensor left
// behind. Timings on a software adapter mean nothing: none is asserted. One op's cases only (head: its forward has
// an f16 row, its two gradients are the unpackable ones): each case is the same loop, and SwiftShader spends seconds
// compiling every new kernel shape;
// tests/unit/model/webgpu-matmul.test.ts checks the tiled kernels themselves in every form.
import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { benchMatmul, matmulCases } from '../../../src/bench/matmul';
import type { BenchShape } from '../../../src/bench/model';
import { initBackend, SWIFTSHADER_ICD } from '../../../src/model/backend';

beforeAll(async () => {
  process.env.VK_ICD_FILENAMES ??= SWIFTSHADER_ICD;
  await initBackend('webgpu');
}, 120_000);

// hidden 16, 2 heads of 8 and 1 KV head (qkv 32 wide), MLP 24, a vocabulary of 37 (not a multiple of 4), 1 layer.
const micro: BenchShape = {
  name: 'micro',
  description: 'test shape',
  config: {
    model_type: 'qwen2',
    vocab_size: 37,
    hidden_size: 16,
    intermediate_size: 24,
    num_hidden_layers: 1,
    num_attention_heads: 2,
    num_key_value_heads: 1,
    max_position_embeddings: 64,
    rope_theta: 10000,
    rms_norm_eps: 1e-6,
    tie_word_embeddings: true,
  },
  workload: { trainBatch: 1, trainSeq: 6, genBatch: 1, promptLen: 4, newTokens: 2, warmup: 1 },
};

describe('benchMatmul on webgpu (SwiftShader)', () => {
  it('times tf.matMul and the tiled kernels on every case of the ops asked for, their results agreeing, and leaves no tensor behind', async () => {
    const notes: string[] = [];
    const before = tf.memory().numTensors;
    const ops = ['head'];
    const rows = await benchMatmul({
      backend: 'webgpu',
      shape: micro,
      batch: 1,
      seqLen: 6,
      seconds: 0.001,
      note: (l) => notes.push(l),
      ops,
    });
    expect(tf.memory().numTensors).toBe(before);
    expect(notes.filter((l) => l.startsWith('self-check'))).toEqual([
      expect.stringMatching(
        /^self-check f16-storage: ok, max \|error\| \/ sum of the terms' magnitudes \d\.\d\de-\d+$/,
      ),
      "self-check f16: not used (needs the device feature 'shader-f16', which this device lacks)",
      "self-check subgroup-matrix: not used (needs the device feature 'chromium-experimental-subgroup-matrix', which this device lacks)",
      expect.stringMatching(/^self-check subgroup-reduce: ok, /),
    ]);
    const cases = matmulCases(micro, 1, 6).filter((c) => ops.includes(c.op));
    expect(cases).toHaveLength(3);
    expect(new Set(rows.map((r) => `${r.op} ${r.pass}`)).size).toBe(3);
    // The head's grad-input reads dLogits [5, 37] and its grad-weight reads them transposed: no f16 rows for those.
    const unpackable = ['head grad-input', 'head grad-weight'];
    expect(notes.filter((l) => l.includes('skipped'))).toEqual([
      'micro head grad-input 5x16x37 tiled-wgsl-f16-128x64: skipped (a stored row is not a multiple of 4 long)',
      'micro head grad-weight 37x16x5 tiled-wgsl-f16-128x64: skipped (a stored row is not a multiple of 4 long)',
    ]);
    for (const c of cases) {
      const mine = rows.filter((r) => r.op === c.op && r.pass === c.pass);
      const f16 = !unpackable.includes(`${c.op} ${c.pass}`);
      expect(mine.map((r) => r.impl)).toEqual([
        'tfjs',
        'tiled-wgsl-64x64',
        'tiled-wgsl-128x64',
        'tiled-wgsl-128x128',
        ...(f16 ? ['tiled-wgsl-f16-128x64'] : []),
        'own-f16-storage',
      ]);
      for (const r of mine) {
        const own = r.impl.startsWith('own-');
        expect(r).toMatchObject({ m: c.m, n: c.n, k: c.k, device: 'webgpu', tokens: '1x6' });
        if (own)
          expect(r.gpuMsPerCall).toBeUndefined(); // tfjs's timestamp queries cover only its own programs
        else expect(r.gpuMsPerCall).toBeGreaterThan(0); // SwiftShader has timestamp-query
        if (r.impl === 'tfjs') expect(r.maxRelErrorVsTfjs).toBeUndefined();
        else expect(r.maxRelErrorVsTfjs).toBeLessThan(r.impl.includes('f16') ? 2e-3 : 1e-5);
        expect(r.splitK).toBe(r.impl === 'tfjs' || own ? undefined : 1); // K is at most 37 here: never split
      }
    }
  }, 300_000);

  it('names an op the shape does not have', async () => {
    await expect(
      benchMatmul({ backend: 'webgpu', shape: micro, batch: 1, seqLen: 6, seconds: 0.001, ops: ['o', 'lm'] }),
    ).rejects.toThrow("no matmul 'lm' at shape micro (ops: qkv, o, gateUp, down, head)");
  });
});
