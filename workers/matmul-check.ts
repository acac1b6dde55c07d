// A self-check of the active tfjs backend: multiply two seeded matrices with tfjs and with plain JavaScript,
// and report the largest difference. It proves that a backend does real arithmetic (a backend that "starts" but
// computes garbage, e.g. Dawn's null adapter, fails here) before anything is trained on it.
import * as tf from '@tensorflow/tfjs';
import { seededUniform } from '../src/model/seeded';

export interface MatmulCheckResult {
  /** Side of the square matrices. */
  n: number;
  /** Largest |tfjs - reference| over all n*n entries. */
  maxAbsError: number;
  /** Wall time of one warm tfjs matmul including the readback, in milliseconds (shader compilation excluded). */
  ms: number;
  /** The tfjs backend that computed it. */
  backend: string;
}

/** Largest matrix side the check accepts: bigger ones only make the plain-JS reference slow. */
export const MAX_MATMUL_CHECK_SIZE = 512;

/**
 * An n x n row-major matrix with entries in [-1, 1) from a small seeded generator (mulberry32), so the same seed
 * gives the same matrix on every platform and the check needs no Math.random.
 */
export function seededMatrix(n: number, seed: number): Float32Array {
  const out = new Float32Array(n * n);
  const uniform = seededUniform(seed);
  for (let i = 0; i < out.length; i++) out[i] = uniform() * 2 - 1;
  return out;
}

/** The textbook triple loop in float64: the reference a backend's float32 matmul is compared with. */
export function referenceMatmul(a: Float32Array, b: Float32Array, n: number): Float64Array {
  if (a.length !== n * n || b.length !== n * n) {
    throw new Error(`referenceMatmul: expected two ${n}x${n} matrices, got lengths ${a.length} and ${b.length}`);
  }
  const c = new Float64Array(n * n);
  for (let i = 0; i < n; i++) {
    for (let k = 0; k < n; k++) {
      const aik = a[i * n + k];
      for (let j = 0; j < n; j++) c[i * n + j] += aik * b[k * n + j];
    }
  }
  return c;
}

/** Runs the check on whatever backend tfjs is using now (call initBackend first). */
export async function runMatmulCheck(n: number): Promise<MatmulCheckResult> {
  if (!Number.isInteger(n) || n < 1 || n > MAX_MATMUL_CHECK_SIZE) {
    throw new Error(`matmul check size must be an integer in 1..${MAX_MATMUL_CHECK_SIZE}, got ${n}`);
  }
  const aValues = seededMatrix(n, 1);
  const bValues = seededMatrix(n, 2);
  const a = tf.tensor2d(aValues, [n, n]);
  const b = tf.tensor2d(bValues, [n, n]);
  try {
    // The first call of a kernel compiles its shader (about a second on SwiftShader): warm up, then time.
    const warm = tf.matMul(a, b);
    await warm.data();
    warm.dispose();

    const start = performance.now();
    const product = tf.matMul(a, b);
    // Always the async readback: dataSync() on webgpu needs OffscreenCanvas, which Node lacks.
    const values = await product.data();
    const ms = performance.now() - start;
    product.dispose();

    const expected = referenceMatmul(aValues, bValues, n);
    let maxAbsError = 0;
    for (let i = 0; i < expected.length; i++) {
      const err = Math.abs(values[i] - expected[i]);
      // NaN must fail the check, and `NaN > x` is false, so it is caught explicitly.
      if (Number.isNaN(err)) return { n, maxAbsError: Number.POSITIVE_INFINITY, ms, backend: tf.getBackend() };
      if (err > maxAbsError) maxAbsError = err;
    }
    return { n, maxAbsError, ms, backend: tf.getBackend() };
  } finally {
    a.dispose();
    b.dispose();
  }
}
