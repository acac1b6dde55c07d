// The f16 matmul modes of the webgpu route (src/model/webgpuMatMulRoute.ts), on SwiftShader (VK_ICD_FILENAMES set
// to it unless already set): 'f16-storage' runs here; 'f16' and 'subgroup-matrix' need device features SwiftShader
// lacks, so choosing them fails with one line naming the feature. Weights come from their f16 copies
// (src/model/halfWeights.ts), which must follow AdamW's in-place updates and variable assignments. The tolerance is
// the f16 bound of tests/unit/model/webgpu-half-matmul.test.ts: |C - C_exact| <= (2^-10 + (K + 2) 2^-23) S + K 2^-24,
// S = sum_k |a_k b_k|.
import * as tf from '@tensorflow/tfjs';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { initBackend, SWIFTSHADER_ICD } from '../../../src/model/backend';
import { AdamW } from '../../../src/model/adamw';
import { benchShape } from '../../../src/bench/model';
import { halfWeightCount, releaseHalfWeights } from '../../../src/model/halfWeights';
import { Qwen2Model, initQwen2Weights } from '../../../src/model/qwen2';
import { namedVariableGrads, tokenLogProbs } from '../../../src/model/scoring';
import { setWebGpuMatMul, supportedWebGpuMatMuls, webGpuMatMul } from '../../../src/model/webgpuMatMulRoute';
import { selfCheckHalfMatMul, selfCheckWebGpuModes } from '../../../src/model/webgpuSelfCheck';

beforeAll(async () => {
  process.env.VK_ICD_FILENAMES ??= SWIFTSHADER_ICD;
  await initBackend('webgpu');
}, 120_000);
afterEach(() => {
  setWebGpuMatMul('tfjs');
  releaseHalfWeights();
});

/** The largest |C - C_exact| / (f16 bound) of x w^T over its elements (x [M, K], w [N, K]). */
async function overBound(c: tf.Tensor, x: tf.Tensor, w: tf.Tensor): Promise<number> {
  const [M, K] = x.shape,
    N = w.shape[0];
  const [cv, xv, wv] = (await Promise.all([c.data(), x.data(), w.data()])) as Float32Array[];
  let worst = 0;
  for (let m = 0; m < M; m++)
    for (let n = 0; n < N; n++) {
      let sum = 0,
        abs = 0;
      for (let k = 0; k < K; k++) {
        sum += xv[m * K + k] * wv[n * K + k];
        abs += Math.abs(xv[m * K + k] * wv[n * K + k]);
      }
      const bound = (2 ** -10 + (K + 2) * 2 ** -23) * abs + K * 2 ** -24;
      worst = Math.max(worst, Math.abs(cv[m * N + n] - sum) / bound);
    }
  return worst;
}

describe('f16 matmul modes', () => {
  it('a mode whose feature the device lacks is refused with one line naming it', () => {
    expect(supportedWebGpuMatMuls()).toEqual(['tiled', 'tfjs', 'f16-storage']);
    expect(() => setWebGpuMatMul('f16')).toThrow(
      /^webgpu matmul 'f16' needs the device feature 'shader-f16', which this device lacks$/,
    );
    expect(() => setWebGpuMatMul('subgroup-matrix')).toThrow(
      /'chromium-experimental-subgroup-matrix', which this device lacks$/,
    );
    expect(webGpuMatMul()).toBe('tfjs');
  });

  it('f16-storage: a weight is read from its f16 copy, made once, and follows AdamW steps and assignments', async () => {
    setWebGpuMatMul('f16-storage');
    const x = tf.randomUniform([70, 48], -1, 1, 'float32', 1);
    const init = tf.randomUniform([40, 48], -1, 1, 'float32', 2);
    const w = tf.variable(init, true, 'half_route_w');
    init.dispose(); // the variable's data is its own, so AdamW writes it in place (ops.ts: ownData)
    const before = halfWeightCount();
    const c1 = tf.matMul(x, w, false, true);
    expect(await overBound(c1, x, w)).toBeLessThan(1);
    const exact32 = tf.tidy(() => {
      setWebGpuMatMul('tiled');
      const r = tf.matMul(x, w, false, true);
      setWebGpuMatMul('f16-storage');
      return r;
    });
    // Not the f32 product: the operands were rounded to f16.
    expect(
      await tf
        .max(tf.abs(tf.sub(c1, exact32)))
        .data()
        .then((d) => d[0]),
    ).toBeGreaterThan(1e-5);
    const c2 = tf.matMul(x, w, false, true);
    expect(Array.from(await c2.data())).toEqual(Array.from(await c1.data()));
    expect(halfWeightCount() - before).toBe(1);

    // AdamW on webgpu writes the weight in place (per-variable kernels): the next product must use the new values.
    const opt = new AdamW({ w }, { lr: 0.05, weightDecay: 0 });
    const grads = { w: tf.randomUniform([40, 48], -1, 1, 'float32', 3) };
    const data = w.dataId;
    expect((await opt.stepClipped(grads, 1e9)).applied).toBe(true);
    expect(w.dataId).toBe(data); // in place: the same data, new values
    const c3 = tf.matMul(x, w, false, true);
    expect(await overBound(c3, x, w)).toBeLessThan(1);
    expect(await overBound(c1, x, w)).toBeGreaterThan(10); // the old product is far off the new weight

    // A checkpoint load assigns new data: the copy of the old data is dropped and a new one made.
    w.assign(tf.randomUniform([40, 48], -2, 2, 'float32', 4));
    const c4 = tf.matMul(x, w, false, true);
    expect(await overBound(c4, x, w)).toBeLessThan(1);
    expect(halfWeightCount() - before).toBe(1);
    opt.dispose();
    tf.dispose([x, w, c1, c2, c3, c4, exact32, grads.w]);
  });

  it("a Qwen-style model's log-probs and weight gradients in f16-storage stay within f16's rounding of f32's", async () => {
    const config = benchShape('tiny').config;
    const model = new Qwen2Model(config, initQwen2Weights(config, 0));
    const ids = tf.tensor2d(
      [0, 1].map((r) => Array.from({ length: 40 }, (_, i) => (i * 7 + r * 3) % config.vocab_size)),
      undefined,
      'int32',
    );
    const names = Object.keys(model.variables);
    const run = async (mode: 'tfjs' | 'f16-storage') => {
      setWebGpuMatMul(mode);
      const { value, grads } = namedVariableGrads(model.variables, () =>
        tf.tidy(() => tokenLogProbs(model, ids).logProbs.mean().neg() as tf.Scalar),
      );
      const out = await Promise.all(
        [value, ...names.map((n) => grads[n])].map(async (t) => (await t.data()) as Float32Array),
      );
      tf.dispose([value, ...Object.values(grads)]);
      return out;
    };
    const f32 = await run('tfjs');
    const half = await run('f16-storage');
    expect(halfWeightCount()).toBeGreaterThan(0);
    let worst = 0;
    half.forEach((x, i) => {
      const scale = Math.max(...Array.from(f32[i], Math.abs), 1e-30);
      x.forEach((v, j) => (worst = Math.max(worst, Math.abs(v - f32[i][j]) / scale)));
    });
    // Each matmul's operands are rounded to f16 (2^-11 relative); a few layers forward and back compound that.
    expect(worst).toBeGreaterThan(0);
    expect(worst).toBeLessThan(2e-2);
    model.dispose();
    ids.dispose();
  });

  it('the self-check passes f16-storage and the subgroup reduction, and reports the modes this device cannot run', async () => {
    const checks = await selfCheckWebGpuModes();
    const by = Object.fromEntries(checks.map((c) => [c.mode, c]));
    expect(by['f16-storage'].ok).toBe(true);
    expect(by['f16-storage'].maxRelError).toBeGreaterThan(0);
    expect(by['f16-storage'].maxRelError).toBeLessThan(2 ** -10);
    expect(by.f16).toMatchObject({ ok: false, maxRelError: null, reason: expect.stringMatching(/shader-f16/) });
    expect(by['subgroup-matrix']).toMatchObject({ ok: false, maxRelError: null });
    expect(by['subgroup-reduce'].ok).toBe(true);
    expect(webGpuMatMul()).toBe('tfjs'); // put back
    // The direct check (a kernel and tiling not through the route) passes the same kernel, leaves no tensor, and
    // reports a missing feature the same way.
    const before = tf.memory().numTensors;
    const direct = await selfCheckHalfMatMul('f16-storage');
    expect(direct.ok).toBe(true);
    expect(direct.maxRelError).toBeLessThan(2 ** -10);
    expect(tf.memory().numTensors).toBe(before);
    expect((await selfCheckHalfMatMul('subgroup-matrix')).reason).toMatch(/^needs the device feature/);
  });
});
