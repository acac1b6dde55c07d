// Checks the f16 matmul modes (webgpuMatMulRoute.ts) against exact products before they are used or timed: a mode
// whose results are off (a driver's bug, a shader a device compiles wrongly) is reported and not used. `ragen bench
// --only matmul`, tools/device/full-run.sh and initBackend (for a mode RAGEN_WEBGPU_MATMUL asks for) run it.
//
// What counts as off: each operand rounded to f16 (relative error u = 2^-11) and the products added in f32 give
// |C - C_exact| <= (2u + u^2 + (K + 2) 2^-24) S + K 2^-24 with S = sum_k |a_k b_k| per element (the last term for
// operands below f16's normal range). maxRelError is the largest |C - C_exact| / S; a mode passes when every
// element is within the bound and WebGPU reported no error meanwhile. The products go through tf.matMul with the
// mode routed, one operand a tf.Variable (so through the f16 weight copy), in every transpose form, odd sizes and a
// bias, and once more after the weight changes in place (the copy must follow).
import * as tf from '@tensorflow/tfjs';
import { MIN_TILED_ROWS, missingFeature, setWebGpuMatMul, webGpuMatMul, HALF_MATMULS } from './webgpuMatMulRoute';
import type { WebGpuMatMul } from './envSettings';
import { ownProgramBackend, tensorOf } from './kernels/webgpuOwnProgram';
import { halfMatMul, packHalfFlat, type HalfFlavour, type SubgroupMatrixSettings } from './kernels/webgpuHalfMatmul';
import { subgroupRowReduce } from './kernels/webgpuSubgroupReduce';
import { webgpuDeviceHas } from './webgpuDevice';
import { pruneHalfWeights } from './halfWeights';

/** One mode's verdict. */
export interface MatMulModeCheck {
  mode: WebGpuMatMul | 'subgroup-reduce';
  ok: boolean;
  /** max |C - C_exact| / sum_k |a_k b_k| over the checked products; null where the mode did not run. */
  maxRelError: number | null;
  /** Why it failed or did not run. */
  reason?: string;
}

/** [M, N, K, transposeA, transposeB, bias] of the checked products (M >= MIN_TILED_ROWS: the route takes them). */
const PRODUCTS: Array<[number, number, number, boolean, boolean, boolean]> = [
  [MIN_TILED_ROWS + 5, 70, 96, false, true, false], // a linear layer's forward, x W^T
  [MIN_TILED_ROWS + 64, 33, 65, false, false, true], // its grad-input, dY W (+ a bias row)
  [MIN_TILED_ROWS, 130, 67, true, false, false], // grad-weight, dY^T x
  [MIN_TILED_ROWS + 1, 17, 40, true, true, false],
];

/** Exact C (float64) and S = sum |a_k b_k| of op(A) op(B), from the stored row-major values. */
function exact(a: Float32Array, b: Float32Array, M: number, N: number, K: number, tA: boolean, tB: boolean) {
  const c = new Float64Array(M * N),
    s = new Float64Array(M * N);
  for (let m = 0; m < M; m++)
    for (let n = 0; n < N; n++) {
      let sum = 0,
        abs = 0;
      for (let k = 0; k < K; k++) {
        const x = a[tA ? k * M + m : m * K + k] * b[tB ? n * K + k : k * N + n];
        sum += x;
        abs += Math.abs(x);
      }
      c[m * N + n] = sum;
      s[m * N + n] = abs;
    }
  return { c, s };
}

/** The largest |C - C_exact| / S and |C - C_exact| / bound of a product c = op(a) op(w) (+ bias row). */
async function errorsOf(
  c: tf.Tensor,
  a: tf.Tensor,
  w: tf.Tensor,
  bias: tf.Tensor | undefined,
  M: number,
  N: number,
  K: number,
  tA: boolean,
  tB: boolean,
): Promise<{ rel: number; overBound: number }> {
  const got = (await c.data()) as Float32Array;
  const ref = exact((await a.data()) as Float32Array, (await w.data()) as Float32Array, M, N, K, tA, tB);
  const biasValues = bias ? ((await bias.data()) as Float32Array) : null;
  let rel = 0,
    overBound = 0;
  got.forEach((v, j) => {
    const want = ref.c[j] + (biasValues ? biasValues[j % N] : 0);
    const err = Math.abs(v - want);
    const bound = (2 ** -10 + (K + 2) * 2 ** -23) * ref.s[j] + K * 2 ** -24 + 2 ** -23 * Math.abs(want);
    rel = Math.max(rel, Number.isFinite(err) ? err / Math.max(ref.s[j], 1e-30) : Infinity);
    overBound = Math.max(overBound, Number.isFinite(err) ? err / bound : Infinity);
  });
  return { rel, overBound };
}

/**
 * The same check of an f16 flavour's kernel called directly (not through the route), the weight operand packed to
 * f16 and the other float32; for subgroup-matrix with the given tiling. tools/device/webgpu-selfcheck.ts checks
 * tilings other than the route's default this way before timing them.
 */
export async function selfCheckHalfMatMul(
  flavour: HalfFlavour,
  subgroupMatrix?: SubgroupMatrixSettings,
): Promise<MatMulModeCheck> {
  const missing = missingFeature(flavour);
  if (missing) return { mode: flavour, ok: false, maxRelError: null, reason: `needs ${missing}` };
  const backend = ownProgramBackend();
  let worstRel = 0,
    worstOverBound = 0;
  const error = await gpuErrorOf(async () => {
    for (const [i, [M, N, K, tA, tB, withBias]] of PRODUCTS.entries()) {
      const a = tf.randomUniform(tA ? [K, M] : [M, K], -1, 1, 'float32', 11 + i);
      const w = tf.randomUniform(tB ? [N, K] : [K, N], -1, 1, 'float32', 23 + i);
      const bias = withBias ? tf.randomUniform([N], -1, 1, 'float32', 37 + i) : undefined;
      const half = tensorOf(packHalfFlat(backend, w));
      const c = tensorOf(
        halfMatMul(
          backend,
          flavour,
          { info: a, shape: a.shape as [number, number], storage: 'f32' },
          { info: half, shape: w.shape as [number, number], storage: 'half' },
          { transposeA: tA, transposeB: tB, bias, subgroupMatrix },
        ),
      );
      const e = await errorsOf(c, a, w, bias, M, N, K, tA, tB);
      worstRel = Math.max(worstRel, e.rel);
      worstOverBound = Math.max(worstOverBound, e.overBound);
      tf.dispose([a, w, half, c, ...(bias ? [bias] : [])]);
    }
  });
  if (error) return { mode: flavour, ok: false, maxRelError: null, reason: `WebGPU reported: ${error.split('\n')[0]}` };
  const ok = worstOverBound <= 1;
  return {
    mode: flavour,
    ok,
    maxRelError: worstRel,
    ...(ok ? {} : { reason: `off by ${worstOverBound.toFixed(1)} times the f16 bound` }),
  };
}

/** Runs fn inside a WebGPU error scope; the error's message, or null. */
async function gpuErrorOf(fn: () => Promise<void>): Promise<string | null> {
  const device = ownProgramBackend().device;
  device.pushErrorScope('validation');
  device.pushErrorScope('internal');
  device.pushErrorScope('out-of-memory');
  let thrown: string | null = null;
  try {
    await fn();
  } catch (err) {
    thrown = (err as Error).message;
  }
  const errors = await Promise.all([device.popErrorScope(), device.popErrorScope(), device.popErrorScope()]);
  return thrown ?? errors.find((e) => e)?.message ?? null;
}

/** Checks one f16 mode (see the top of this file); the route's mode is put back after. */
export async function selfCheckMatMulMode(mode: WebGpuMatMul): Promise<MatMulModeCheck> {
  const missing = missingFeature(mode);
  if (missing) return { mode, ok: false, maxRelError: null, reason: `needs ${missing}` };
  const before = webGpuMatMul();
  let worstRel = 0,
    worstOverBound = 0;
  const error = await gpuErrorOf(async () => {
    setWebGpuMatMul(mode);
    try {
      for (const [i, [M, N, K, tA, tB, withBias]] of PRODUCTS.entries()) {
        const a = tf.randomUniform(tA ? [K, M] : [M, K], -1, 1, 'float32', 11 + i);
        const init = tf.randomUniform(tB ? [N, K] : [K, N], -1, 1, 'float32', 23 + i);
        const w = tf.variable(init, false);
        init.dispose(); // the variable's data is its own, written in place below as AdamW writes a weight
        const bias = withBias ? tf.randomUniform([N], -1, 1, 'float32', 37 + i) : undefined;
        try {
          // Twice: the second time after the weight changed in place (as AdamW does), through a refreshed copy.
          for (const round of [0, 1]) {
            if (round === 1) scaleInPlace(w);
            const c = bias
              ? tf.fused.matMul({ a, b: w, transposeA: tA, transposeB: tB, bias })
              : tf.matMul(a, w, tA, tB);
            const e = await errorsOf(c, a, w, bias, M, N, K, tA, tB);
            c.dispose();
            worstRel = Math.max(worstRel, e.rel);
            worstOverBound = Math.max(worstOverBound, e.overBound);
          }
        } finally {
          tf.dispose([a, w, ...(bias ? [bias] : [])]);
        }
      }
    } finally {
      setWebGpuMatMul(before);
      pruneHalfWeights(); // the checked weights' f16 copies
    }
  });
  if (error) return { mode, ok: false, maxRelError: null, reason: `WebGPU reported: ${error.split('\n')[0]}` };
  const ok = worstOverBound <= 1;
  return {
    mode,
    ok,
    maxRelError: worstRel,
    ...(ok ? {} : { reason: `off by ${worstOverBound.toFixed(1)} times the f16 bound` }),
  };
}

/** w <- 1.5 w in place (a program with w as its output, as AdamW's update writes a weight). */
function scaleInPlace(w: tf.Variable): void {
  const backend = tf.backend() as unknown as {
    runWebGPUProgram(p: object, inputs: object[], dtype: string, u: unknown, out: object): unknown;
  };
  const size = w.size;
  backend.runWebGPUProgram(
    {
      variableNames: [],
      outputShape: [size],
      shaderKey: 'ragen_selfcheck_scale',
      dispatchLayout: { x: [0] },
      dispatch: [Math.ceil(size / 64), 1, 1],
      workgroupSize: [64, 1, 1],
      getUserCode: () =>
        `fn main(index : i32) { if (index < uniforms.outShape) { result[index] = result[index] * 1.5; } }`,
    },
    [],
    'float32',
    undefined,
    { dataId: w.dataId, shape: [size], dtype: 'float32' },
  );
  // A CPU copy kept from a read-back would now be stale (as after AdamW's in-place write).
  (tf.backend() as unknown as { tensorMap: { get(id: object): { values: unknown } } }).tensorMap.get(w.dataId).values =
    null;
}

/** The subgroup row sum against a plain sum (null where the device has no `subgroups`). */
export async function selfCheckSubgroupReduce(): Promise<MatMulModeCheck> {
  if (!webgpuDeviceHas('subgroups'))
    return { mode: 'subgroup-reduce', ok: false, maxRelError: null, reason: "needs the device feature 'subgroups'" };
  let worst = 0;
  const error = await gpuErrorOf(async () => {
    const x = tf.randomUniform([9, 203], -1, 1, 'float32', 5);
    const out = tensorOf(subgroupRowReduce(ownProgramBackend(), x, 'sum'));
    const [values, got] = [(await x.data()) as Float32Array, (await out.data()) as Float32Array];
    for (let r = 0; r < 9; r++) {
      let sum = 0,
        abs = 0;
      for (let c = 0; c < 203; c++) {
        sum += values[r * 203 + c];
        abs += Math.abs(values[r * 203 + c]);
      }
      worst = Math.max(worst, Math.abs(got[r] - sum) / abs);
    }
    tf.dispose([x, out]);
  });
  if (error) return { mode: 'subgroup-reduce', ok: false, maxRelError: null, reason: `WebGPU reported: ${error}` };
  const ok = worst <= 203 * 2 ** -23;
  return { mode: 'subgroup-reduce', ok, maxRelError: worst, ...(ok ? {} : { reason: 'differs from a plain sum' }) };
}

/** Every f16 mode (missing features reported as such) and the subgroup reduction, checked in turn. */
export async function selfCheckWebGpuModes(): Promise<MatMulModeCheck[]> {
  const out: MatMulModeCheck[] = [];
  for (const mode of HALF_MATMULS) out.push(await selfCheckMatMulMode(mode));
  out.push(await selfCheckSubgroupReduce());
  return out;
}
