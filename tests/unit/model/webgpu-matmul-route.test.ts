// The model's matmuls on webgpu through the tiled WGSL kernel (src/model/webgpuMatMulRoute.ts): tfjs's BatchMatMul and
// _FusedMatMul kernels re-registered to route float32 single-matrix products (bias allowed, no activation) to it.
// On SwiftShader (VK_ICD_FILENAMES set to it unless already set) the default is tfjs's matmul, so each test chooses.
import * as tf from '@tensorflow/tfjs';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { initBackend, SWIFTSHADER_ICD } from '../../../src/model/backend';
import { benchShape } from '../../../src/bench/model';
import { Qwen2Model, initQwen2Weights } from '../../../src/model/qwen2';
import { namedVariableGrads, tokenLogProbs } from '../../../src/model/scoring';
import {
  MIN_TILED_ROWS,
  defaultWebGpuMatMul,
  setWebGpuMatMul,
  webGpuMatMul,
} from '../../../src/model/webgpuMatMulRoute';

beforeAll(async () => {
  process.env.VK_ICD_FILENAMES ??= SWIFTSHADER_ICD;
  await initBackend('webgpu');
}, 120_000);
afterEach(() => setWebGpuMatMul('tfjs'));

/** The result of `f` with each matmul route, and whether the tiled route compiled a tiled-kernel pipeline. */
async function bothRoutes(
  f: () => tf.Tensor | tf.Tensor[],
): Promise<{ tfjs: Float32Array[]; tiled: Float32Array[]; compiled: string[] }> {
  const cache = (tf.backend() as unknown as { pipelineCache: Record<string, unknown> }).pipelineCache;
  const out: Record<string, Float32Array[]> = {};
  const before = new Set(Object.keys(cache));
  for (const route of ['tfjs', 'tiled'] as const) {
    setWebGpuMatMul(route);
    const r = f();
    const list = Array.isArray(r) ? r : [r];
    out[route] = await Promise.all(list.map(async (t) => (await t.data()) as Float32Array));
    tf.dispose(list);
  }
  const compiled = Object.keys(cache).filter((k) => !before.has(k) && k.startsWith('ragen_tiled_matmul'));
  return { tfjs: out.tfjs, tiled: out.tiled, compiled };
}

function expectClose(a: Float32Array[], b: Float32Array[], rel: number): void {
  expect(a.length).toBe(b.length);
  a.forEach((x, i) => {
    const scale = Math.max(...Array.from(b[i], Math.abs), 1e-30);
    let worst = 0;
    x.forEach((v, j) => {
      worst = Math.max(worst, Math.abs(v - b[i][j]));
    });
    expect(worst / scale, `output ${i}`).toBeLessThan(rel);
  });
}

describe('webgpu matmul routing', () => {
  it('defaults: tiled on a GPU, tfjs on a software adapter, RAGEN_WEBGPU_MATMUL first; bad values are named', () => {
    const saved = process.env.RAGEN_WEBGPU_MATMUL;
    try {
      delete process.env.RAGEN_WEBGPU_MATMUL;
      expect(defaultWebGpuMatMul(false)).toBe('tiled');
      expect(defaultWebGpuMatMul(true)).toBe('tfjs');
      process.env.RAGEN_WEBGPU_MATMUL = 'tfjs';
      expect(defaultWebGpuMatMul(false)).toBe('tfjs');
      process.env.RAGEN_WEBGPU_MATMUL = 'tiled';
      expect(defaultWebGpuMatMul(true)).toBe('tiled');
      process.env.RAGEN_WEBGPU_MATMUL = 'fast';
      expect(() => defaultWebGpuMatMul(false)).toThrow(
        /^RAGEN_WEBGPU_MATMUL=fast: expected one of tiled, tfjs, f16-storage, f16, subgroup-matrix \(or unset\)$/,
      );
    } finally {
      if (saved === undefined) delete process.env.RAGEN_WEBGPU_MATMUL;
      else process.env.RAGEN_WEBGPU_MATMUL = saved;
    }
    expect(() => setWebGpuMatMul('fast' as never)).toThrow(/got 'fast'/);
    expect(webGpuMatMul()).toBe('tfjs'); // a software adapter here, and the refused value changed nothing
  });

  it("every transpose form, a batch of one, and a fused bias agree with tfjs's matmul, through the tiled kernel", async () => {
    const a = tf.randomUniform([MIN_TILED_ROWS + 37, 70], -1, 1, 'float32', 1),
      b = tf.randomUniform([70, 45], -1, 1, 'float32', 2);
    const at = a.transpose(),
      bt = b.transpose();
    const bias = tf.randomUniform([45], -1, 1, 'float32', 3);
    const residual = tf.randomUniform([1, MIN_TILED_ROWS + 37, 45], -1, 1, 'float32', 10); // the model's [1, M, N]
    const r = await bothRoutes(() => [
      tf.matMul(a, b),
      tf.matMul(at, b, true),
      tf.matMul(a, bt, false, true),
      tf.matMul(at, bt, true, true),
      tf.matMul(a.expandDims(0), b.expandDims(0)),
      tf.fused.matMul({ a, b, bias }),
      tf.fused.matMul({ a, b: bt, transposeB: true, bias: residual }),
    ]);
    expect(r.compiled.length).toBeGreaterThanOrEqual(4); // one pipeline per transpose form at least
    expect(r.compiled.some((k) => k.includes('_full_bias'))).toBe(true);
    expectClose(r.tiled, r.tfjs, 1e-5);
    tf.dispose([a, b, at, bt, bias, residual]);
  });

  it("what the tiled kernel does not do goes to tfjs: a batch of 2, an activation, int32, a decode step's few rows", async () => {
    const a = tf.randomUniform([2, 9, 8], -1, 1, 'float32', 4),
      b = tf.randomUniform([2, 8, 5], -1, 1, 'float32', 5);
    const a2 = tf.randomUniform([9, 8], -1, 1, 'float32', 6),
      b2 = tf.randomUniform([8, 5], -1, 1, 'float32', 7);
    const ia = tf.tensor2d(
      [
        [1, 2],
        [3, 4],
      ],
      undefined,
      'int32',
    );
    const row = tf.randomUniform([MIN_TILED_ROWS - 1, 70], -1, 1, 'float32', 8),
      w = tf.randomUniform([70, 90], -1, 1, 'float32', 9);
    const r = await bothRoutes(() => [
      tf.matMul(a, b),
      tf.fused.matMul({ a: a2, b: b2, activation: 'relu' }),
      tf.matMul(ia, ia),
      tf.matMul(row, w),
    ]);
    expect(r.compiled).toEqual([]);
    r.tiled.forEach((x, i) => expect(Array.from(x)).toEqual(Array.from(r.tfjs[i])));
    tf.dispose([a, b, a2, b2, ia, row, w]);
  });

  it("a Qwen-style model's log-probs and every weight gradient agree between the routes", async () => {
    const config = benchShape('tiny').config;
    const model = new Qwen2Model(config, initQwen2Weights(config, 0));
    // 2 x 40 tokens: the forward's products have 80 rows, past MIN_TILED_ROWS, so they are routed too.
    const ids = tf.tensor2d(
      [0, 1].map((r) => Array.from({ length: 40 }, (_, i) => (i * 7 + r * 3) % config.vocab_size)),
      undefined,
      'int32',
    );
    const names = Object.keys(model.variables);
    const r = await bothRoutes(() => {
      const { value, grads } = namedVariableGrads(model.variables, () =>
        tf.tidy(() => tokenLogProbs(model, ids).logProbs.mean().neg() as tf.Scalar),
      );
      return [value, ...names.map((n) => grads[n])];
    });
    expect(r.compiled.length).toBeGreaterThan(0);
    expectClose(r.tiled, r.tfjs, 1e-4);
    model.dispose();
    ids.dispose();
  });
});
