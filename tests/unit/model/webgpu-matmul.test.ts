// The opt-in tiled WGSL matmul (src/model/kernels/webgpuMatmul.ts) on the webgpu backend through Dawn in Node
// (SwiftShader here: VK_ICD_FILENAMES is set to it unless already set), against a float64 product of the same f32
// inputs computed in plain JavaScript: every transpose form, both tile sizes, sizes that are not multiples of the
// 64 x 64 tile, of the 16-deep k-step or of 4 (the scalar reads), and the f16-packed storage. Small shapes:
// SwiftShader is slow. It never skips: if WebGPU cannot start, it fails.
import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend, SWIFTSHADER_ICD } from '../../../src/model/backend';
import { hasTiledMatMul, packHalf, tiledMatMul } from '../../../src/model/kernels/index';
import { seededUniform } from '../../../src/model/seeded';
import { autoSplitK } from '../../../src/model/kernels/webgpuMatmul';

beforeAll(async () => {
  process.env.VK_ICD_FILENAMES ??= SWIFTSHADER_ICD;
  await initBackend('webgpu');
}, 120_000);

/** Stored values of a [rows, cols] operand, seeded; `quantum` rounds them to multiples of it (exact in f16). */
function values(rows: number, cols: number, seed: number, quantum = 0): Float32Array {
  const u = seededUniform(seed);
  return Float32Array.from({ length: rows * cols }, () => {
    const v = u() * 4 - 2;
    return quantum ? Math.round(v / quantum) * quantum : v;
  });
}

/** op(A) op(B) in float64 from the stored arrays (A [M, K] or [K, M]; B [K, N] or [N, K]). */
function reference(
  a: Float32Array,
  b: Float32Array,
  M: number,
  N: number,
  K: number,
  tA: boolean,
  tB: boolean,
): Float64Array {
  const c = new Float64Array(M * N);
  for (let m = 0; m < M; m++) {
    for (let n = 0; n < N; n++) {
      let s = 0;
      for (let k = 0; k < K; k++) s += a[tA ? k * M + m : m * K + k] * b[tB ? n * K + k : k * N + n];
      c[m * N + n] = s;
    }
  }
  return c;
}

/** Runs the kernel on one form and size; returns the largest error relative to the largest |C| of the reference. */
type Tile = [64 | 128, 64 | 128];
const TILES: Tile[] = [
  [64, 64],
  [128, 64],
  [64, 128],
  [128, 128],
];

async function relativeError(
  M: number,
  N: number,
  K: number,
  tA: boolean,
  tB: boolean,
  [tileRows, tileCols]: Tile,
  storage: 'f32' | 'f16' = 'f32',
  splitK = 1,
): Promise<number> {
  const quantum = storage === 'f16' ? 1 / 8 : 0; // f16 holds multiples of 1/8 in [-2, 2] exactly
  const aShape = tA ? [K, M] : [M, K],
    bShape = tB ? [N, K] : [K, N];
  const a = values(aShape[0], aShape[1], M * 7 + K, quantum),
    b = values(bShape[0], bShape[1], N * 13 + K, quantum);
  const ta = tf.tensor2d(a, aShape as [number, number]),
    tb = tf.tensor2d(b, bShape as [number, number]);
  const [pa, pb] = storage === 'f16' ? [packHalf(ta), packHalf(tb)] : [ta, tb];
  const c = tiledMatMul(pa, pb, { transposeA: tA, transposeB: tB, tileRows, tileCols, splitK });
  expect(c.shape).toEqual([M, N]);
  const got = await c.data();
  tf.dispose([ta, tb, pa, pb, c]);
  const want = reference(a, b, M, N, K, tA, tB);
  let err = 0,
    scale = 0;
  for (let i = 0; i < want.length; i++) {
    err = Math.max(err, Math.abs(got[i] - want[i]));
    scale = Math.max(scale, Math.abs(want[i]));
  }
  return err / scale;
}

const forms: Array<[string, boolean, boolean]> = [
  ['A B', false, false],
  ['A B^T', false, true],
  ['A^T B', true, false],
  ['A^T B^T', true, true],
];

describe('tiledMatMul on webgpu (SwiftShader)', () => {
  it('is registered on webgpu', () => {
    expect(hasTiledMatMul()).toBe(true);
  });

  // 37 x 29 x 45: no side a multiple of 4 (scalar reads and writes), M and N under one tile, K over two k-steps.
  // 70 x 132 x 36: every stored row a multiple of 4 (vector reads and writes); M crosses a 64-row tile boundary,
  // N a 128-column one.
  // 33 x 30 x 36: A's rows vector-read in A B^T and A B, B's and C's scalar (a mixed program).
  // Each size meets every tile and every form meets three tiles, one tile per (size, form): every program compiles
  // anew on SwiftShader (about a second each), so all 48 pairs would cost CI about a minute more.
  [
    [37, 29, 45],
    [70, 132, 36],
    [33, 30, 36],
  ].forEach(([M, N, K], i) => {
    forms.forEach(([name, tA, tB], j) => {
      const tile = TILES[(i + j) % TILES.length];
      it(`${name}, ${M} x ${N} x ${K}, tile ${tile.join(' x ')}: equals the float64 product to f32 rounding`, async () => {
        expect(await relativeError(M, N, K, tA, tB, tile)).toBeLessThan(1e-5);
      }, 120_000);
    });
  });

  it('f16 storage (packHalf): exact-in-f16 inputs give the f32 product, every form, across tiles', async () => {
    for (const [, tA, tB] of forms)
      expect(await relativeError(132, 136, 40, tA, tB, [128, 64], 'f16')).toBeLessThan(1e-5);
  }, 120_000);

  // K split into ranges summed after: 2,100 in 3 ranges of 704 (the last one shorter), 40 in 4 ranges of 16 (the
  // last one empty), and the automatic choice for a one-tile output with a long K (2 ranges).
  it('split-K: ranges of K summed after give the product, every form, an empty last range included', async () => {
    expect(autoSplitK(20, 24, 2100, 64, 64)).toBe(2);
    expect(autoSplitK(1536, 896, 4864, 64, 64)).toBe(1); // 336 tiles: busy enough
    expect(autoSplitK(220, 896, 151936, 128, 64)).toBe(10); // the LM head's d hidden: 28 tiles -> 280 workgroups
    expect(autoSplitK(220, 896, 151936, 128, 128)).toBe(19); // 14 tiles -> 266
    for (const [, tA, tB] of forms) {
      expect(await relativeError(20, 24, 2100, tA, tB, [64, 64], 'f32', 3)).toBeLessThan(1e-5);
      expect(await relativeError(20, 24, 40, tA, tB, [128, 128], 'f32', 4)).toBeLessThan(1e-5);
      expect(await relativeError(20, 24, 2100, tA, tB, [128, 64], 'f16', 0)).toBeLessThan(1e-5);
    }
  }, 120_000);

  it('a bias row is added in the output pass: one program, split-K included, rows off multiples of 4', async () => {
    for (const [M, N, K, splitK] of [
      [70, 66, 40, 1],
      [70, 68, 300, 3],
      [5, 9, 2100, 0],
    ] as const) {
      const a = values(M, K, 3),
        b = values(K, N, 4),
        bias = values(1, N, 5);
      const ta = tf.tensor2d(a, [M, K]),
        tb = tf.tensor2d(b, [K, N]),
        tbias = tf.tensor1d(bias);
      const c = tiledMatMul(ta, tb, { splitK, bias: tbias });
      const got = await c.data();
      const want = reference(a, b, M, N, K, false, false);
      let err = 0,
        scale = 0;
      for (let i = 0; i < want.length; i++) {
        err = Math.max(err, Math.abs(got[i] - (want[i] + bias[i % N])));
        scale = Math.max(scale, Math.abs(want[i] + bias[i % N]));
      }
      expect(err / scale, `${M} x ${N} x ${K}, split ${splitK}`).toBeLessThan(1e-5);
      tf.dispose([ta, tb, tbias, c]);
    }
    expect(() =>
      tiledMatMul(tf.zeros([2, 3]) as tf.Tensor2D, tf.zeros([3, 4]) as tf.Tensor2D, {
        bias: tf.zeros([5]) as tf.Tensor1D,
      }),
    ).toThrow(/the bias must be float32 with N = 4 or M x N = 8 values, got float32 \[5\]/);
  });

  it('a whole M x N bias (the residual stream) is added element by element, split-K and a transposed B included', async () => {
    for (const [M, N, K, splitK, tB] of [
      [70, 66, 40, 1, false],
      [70, 68, 300, 3, true],
      [5, 9, 2100, 0, true],
    ] as const) {
      const a = values(M, K, 6),
        b = values(K, N, 7),
        residual = values(M, N, 8);
      const ta = tf.tensor2d(a, [M, K]),
        tb = tB ? (tf.tensor2d(b, [K, N]).transpose() as tf.Tensor2D) : tf.tensor2d(b, [K, N]);
      const tres = tf.tensor2d(residual, [M, N]);
      const c = tiledMatMul(ta, tb, { splitK, transposeB: tB, bias: tres });
      const got = await c.data();
      const want = reference(a, b, M, N, K, false, false);
      let err = 0,
        scale = 0;
      for (let i = 0; i < want.length; i++) {
        err = Math.max(err, Math.abs(got[i] - (want[i] + residual[i])));
        scale = Math.max(scale, Math.abs(want[i] + residual[i]));
      }
      expect(err / scale, `${M} x ${N} x ${K}, split ${splitK}`).toBeLessThan(1e-5);
      tf.dispose([ta, tb, tres, c]);
    }
  });

  it('packHalf rounds to the nearest f16 (1/3 -> 0.333251953125, 0.1 -> 0.0999755859375) and keeps tensors flat', async () => {
    const before = tf.memory().numTensors;
    const x = tf.tensor2d([[1 / 3, 0.1, -2.5, 1000]]);
    const identity = tf.eye(4) as tf.Tensor2D;
    const [px, pi] = [packHalf(x), packHalf(identity)];
    expect(px.shape).toEqual([1, 2]);
    expect(px.dtype).toBe('int32');
    const y = tiledMatMul(px, pi);
    expect(Array.from(await y.data())).toEqual([0.333251953125, 0.0999755859375, -2.5, 1000]);
    tf.dispose([x, identity, px, pi, y]);
    expect(tf.memory().numTensors).toBe(before);
  }, 60_000);

  // tfjs folds a dispatch of more than 65,535 workgroups into two dimensions (qwen0.5b's LM head weight needs 1 M):
  // the last rows must still be packed.
  it('packHalf past 65,535 workgroups packs the last rows too', async () => {
    const R = 4100,
      C = 2048; // 4.2 M words, 65,600 workgroups of 64
    const x = tf.tidy(() =>
      tf
        .range(0, R * C)
        .mod(C)
        .div(8)
        .reshape([R, C]),
    ) as tf.Tensor2D; // x[r, c] = c / 8
    const pick = tf.tidy(() => tf.eye(C).slice([0, C - 4], [C, 4])) as tf.Tensor2D; // the last 4 columns
    const [px, pp] = [packHalf(x), packHalf(pick)];
    const y = tiledMatMul(px, pp);
    const last = y.slice([R - 1, 0], [1, 4]);
    expect(Array.from(await last.data())).toEqual([2044 / 8, 2045 / 8, 2046 / 8, 2047 / 8]);
    tf.dispose([x, pick, px, pp, y, last]);
  }, 120_000);

  it('refuses operands whose inner sizes differ, mixed f32 / f16 operands, and a tile size it has no program for', () => {
    const a = tf.zeros([4, 8]) as tf.Tensor2D,
      b = tf.zeros([4, 8]) as tf.Tensor2D;
    expect(() => tiledMatMul(a, b)).toThrow(/inner sizes differ \(8 and 4\)/);
    const pb = packHalf(b);
    expect(() => tiledMatMul(a, pb, { transposeB: true })).toThrow(/both operands f32 or both packed f16/);
    expect(() => tiledMatMul(a, b, { transposeB: true, tileCols: 32 as 64 })).toThrow(
      /tileCols must be 64 or 128, got 32/,
    );
    tf.dispose([a, b, pb]);
  });
});
