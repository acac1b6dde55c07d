// Our own f16 matmul pipelines (src/model/kernels/webgpuHalfMatmul.ts on webgpuOwnProgram.ts). On SwiftShader
// (VK_ICD_FILENAMES set to it unless already set) the 'f16-storage' flavour runs and is checked against a float64
// product; the 'f16' and 'subgroup-matrix' flavours need device features SwiftShader lacks, so their WGSL is compiled
// on Dawn's null adapter, which offers every feature (and computes nothing), in a process of its own
// (null-adapter-compile.ts).
//
// The tolerance: each operand is rounded to f16 (relative error at most u = 2^-11), so each product a_k b_k is off by
// at most (2u + u^2) |a_k b_k|, and the f32 sum of K products adds at most about K 2^-24 sum |a_k b_k|. So
// |C - C_exact| <= (2^-10 + (K + 2) 2^-23) S + K 2^-24 with S = sum_k |a_k b_k| (the last term covers operands
// below f16's normal range, 6.1e-5, whose rounding error is absolute, 2^-25). A wrong index or a lost tile is off by
// about S itself, 1000 times the bound.
import { execFileSync } from 'node:child_process';
import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend, SWIFTSHADER_ICD } from '../../../src/model/backend';
import { halfMatMul, packHalfFlat, type OperandStorage } from '../../../src/model/kernels/webgpuHalfMatmul';
import { ownPipelineCount, ownProgramBackend, tensorOf } from '../../../src/model/kernels/webgpuOwnProgram';

beforeAll(async () => {
  process.env.VK_ICD_FILENAMES ??= SWIFTSHADER_ICD;
  await initBackend('webgpu');
}, 120_000);

/** C = op(A) op(B) in float64 and S = sum |a_k b_k|, from the stored row-major values. */
function reference(
  a: Float32Array,
  b: Float32Array,
  s: { M: number; N: number; K: number; transposeA: boolean; transposeB: boolean },
) {
  const { M, N, K } = s;
  const c = new Float64Array(M * N),
    abs = new Float64Array(M * N);
  for (let m = 0; m < M; m++)
    for (let n = 0; n < N; n++) {
      let sum = 0,
        sa = 0;
      for (let k = 0; k < K; k++) {
        const x = a[s.transposeA ? k * M + m : m * K + k] * b[s.transposeB ? n * K + k : k * N + n];
        sum += x;
        sa += Math.abs(x);
      }
      c[m * N + n] = sum;
      abs[m * N + n] = sa;
    }
  return { c, abs };
}

/** The largest |C - C_exact| / bound over the elements (at most 1 passes). */
function worstOverBound(
  got: Float32Array,
  ref: { c: Float64Array; abs: Float64Array },
  K: number,
  extra?: Float32Array,
) {
  let worst = 0;
  got.forEach((v, i) => {
    const exact = ref.c[i] + (extra ? extra[i] : 0);
    const bound = (2 ** -10 + (K + 2) * 2 ** -23) * ref.abs[i] + K * 2 ** -24 + 1e-6 * Math.abs(exact);
    worst = Math.max(worst, Math.abs(v - exact) / bound);
  });
  return worst;
}

describe('f16-storage matmul on our own pipeline (SwiftShader)', () => {
  it('every transpose form, odd sizes, f32 and packed operands, a row or whole bias: within the f16 bound', async () => {
    const backend = ownProgramBackend();
    const cases: Array<
      [number, number, number, boolean, boolean, OperandStorage, OperandStorage, 'none' | 'row' | 'full']
    > = [
      [70, 45, 33, false, false, 'f32', 'half', 'none'],
      [67, 65, 17, true, false, 'half', 'f32', 'row'],
      [5, 130, 70, false, true, 'f32', 'half', 'full'],
      [66, 3, 129, true, true, 'half', 'half', 'none'],
      [1, 1, 1, false, false, 'half', 'half', 'row'],
    ];
    for (const [M, N, K, transposeA, transposeB, aStorage, bStorage, biasKind] of cases) {
      const a = tf.randomUniform(transposeA ? [K, M] : [M, K], -1, 1, 'float32', M + K);
      const b = tf.randomUniform(transposeB ? [N, K] : [K, N], -1, 1, 'float32', N + 7 * K);
      const bias =
        biasKind === 'none' ? undefined : tf.randomUniform(biasKind === 'row' ? [N] : [M, N], -1, 1, 'float32', 3);
      const operand = (t: tf.Tensor, storage: OperandStorage) => ({
        info: storage === 'half' ? packHalfFlat(backend, t) : t,
        shape: t.shape as [number, number],
        storage,
      });
      const pa = operand(a, aStorage),
        pb = operand(b, bStorage);
      const out = tensorOf(halfMatMul(backend, 'f16-storage', pa, pb, { transposeA, transposeB, bias }));
      expect(out.shape).toEqual([M, N]);
      const ref = reference((await a.data()) as Float32Array, (await b.data()) as Float32Array, {
        M,
        N,
        K,
        transposeA,
        transposeB,
      });
      const biasValues = bias ? ((await bias.data()) as Float32Array) : undefined;
      const extra = biasValues && new Float32Array(M * N).map((_, i) => biasValues[biasKind === 'row' ? i % N : i]);
      const worst = worstOverBound((await out.data()) as Float32Array, ref, K, extra);
      expect(worst, `${M}x${N}x${K} ${transposeA}${transposeB} ${aStorage}/${bStorage} ${biasKind}`).toBeLessThan(1);
      for (const p of [pa, pb]) if (p.storage === 'half') tensorOf(p.info).dispose();
      tf.dispose([a, b, out, ...(bias ? [bias] : [])]);
    }
  });

  it('f16 rounding is real: a value f16 cannot hold comes back rounded, and a pipeline is compiled once per key', async () => {
    const backend = ownProgramBackend();
    const x = tf.tensor2d([[1 + 2 ** -12, 3]]); // 1 + 2^-12 rounds to 1 in f16 (f32 holds it)
    const one = tf.tensor2d([[1], [0]]);
    const before = ownPipelineCount(backend.device);
    const run = () =>
      tensorOf(
        halfMatMul(
          backend,
          'f16-storage',
          { info: x, shape: [1, 2], storage: 'f32' },
          { info: one, shape: [2, 1], storage: 'f32' },
          { transposeA: false, transposeB: false },
        ),
      );
    const r1 = run(),
      r2 = run();
    expect(Array.from(await r1.data())).toEqual([1]);
    expect(Array.from(await r2.data())).toEqual([1]);
    expect(ownPipelineCount(backend.device) - before).toBe(1);
    const packed = tensorOf(packHalfFlat(backend, tf.tensor1d([1, -2, 0.5])));
    // Words: pack(1, -2) = 0xC0003C00, pack(0.5, 0) = 0x00003800, as int32.
    expect(Array.from(await packed.data())).toEqual([0xc0003c00 | 0, 0x3800]);
    tf.dispose([x, one, r1, r2, packed]);
  });
});

describe("our own dispatches in tfjs's command stream", () => {
  it("run in order with tfjs's unsubmitted work: ours reads its pending result, tfjs reads ours, a disposed input holds", async () => {
    const backend = ownProgramBackend();
    const a = tf.randomUniform([64, 40], -1, 1, 'float32', 8),
      w = tf.randomUniform([40, 24], -1, 1, 'float32', 9);
    const expected = (await tf.matMul(a, w).data()) as Float32Array;
    // x is a tfjs result still in tfjs's unsubmitted encoder; it is disposed right after our dispatch is recorded.
    const x = tf.mul(a, tf.scalar(1));
    const out = tensorOf(
      halfMatMul(
        backend,
        'f16-storage',
        { info: x, shape: [64, 40], storage: 'f32' },
        { info: w, shape: [40, 24], storage: 'f32' },
        {
          transposeA: false,
          transposeB: false,
        },
      ),
    );
    x.dispose();
    // Uploads and results of x's size now: from tfjs's buffer pool, where x's buffer goes once released.
    const others = Array.from({ length: 4 }, (_, i) =>
      tf.tidy(() => tf.tensor2d(new Float32Array(64 * 40).fill(100 + i), [64, 40]).add(0)),
    );
    const then = tf.add(out, tf.scalar(0)); // tfjs reads our output
    const got = (await then.data()) as Float32Array;
    let worst = 0;
    got.forEach((v, i) => (worst = Math.max(worst, Math.abs(v - expected[i]))));
    expect(worst).toBeLessThan(0.05); // f16 rounding of a 40-term sum; the pool's 100s would be off by thousands
    tf.dispose([a, w, out, then, ...others]);
  });
});

describe('the f16 and subgroup-matrix programs compile (Dawn null adapter: every feature, no results)', () => {
  it('each flavour, transpose form, storage, bias and tile compiles without errors or warnings; a broken one does not', () => {
    let out: string;
    try {
      out = execFileSync(process.execPath, ['--import', 'tsx', 'tests/unit/model/null-adapter-compile.ts'], {
        encoding: 'utf8',
        timeout: 110_000,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
    } catch (err) {
      // Say how the child ended (exit code or signal) and what it last wrote: a bare "Command failed" says nothing.
      const e = err as { status: number | null; signal: string | null; stdout?: string; stderr?: string };
      throw new Error(
        `null-adapter-compile.ts ended with ${e.signal ? `signal ${e.signal}` : `exit code ${e.status}`}; ` +
          `stderr: ${(e.stderr ?? '').slice(-2000) || '(empty)'}; stdout: ${(e.stdout ?? '').slice(-300) || '(empty)'}`,
        { cause: err },
      );
    }
    const { programs, broken } = JSON.parse(out.trim().split('\n').pop()!) as {
      programs: Record<string, string[]>;
      broken: string[];
    };
    expect(Object.keys(programs)).toHaveLength(12 * 8);
    for (const [name, messages] of Object.entries(programs)) expect(messages, name).toEqual([]);
    expect(broken.length).toBeGreaterThan(0);
  });
});
