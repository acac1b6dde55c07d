// Our own wasm matmul (kernels.c's matmul through src/model/wasmMatMul.ts): the three forms of a linear layer against
// tf.matMul on the cpu backend, at sizes that are not multiples of the kernel's 4 x 8 tile or 256-wide blocks, with a
// bias and with leading dimensions of 1; built for SIMD128 alone, the same bits as tfjs-wasm's own kernel (so the
// route changes no run's numbers); built with relaxed SIMD (fused multiply-adds), taken for every product, so that a
// row's bits do not depend on the rows beside it; and no tensor left behind.
import * as tf from '@tensorflow/tfjs';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../../src/model/backend';
import { compileWasmKernels, wasmKernelBuild, wasmOwnMatMul } from '../../../src/model/kernels/wasm';
import { setWasmMatMulRoute } from '../../../src/model/wasmMatMul';

let defaultBuild: typeof wasmKernelBuild = null;
beforeAll(async () => {
  await initBackend('wasm');
  defaultBuild = wasmKernelBuild;
});

afterEach(() => setWasmMatMulRoute('auto'));

/** [m, n, k]: single rows and columns, sizes off the tile, and K and N past one 256-wide block. */
const SIZES: [number, number, number][] = [
  [1, 1, 1],
  [1, 9, 5],
  [7, 1, 3],
  [5, 13, 1],
  [13, 11, 300],
  [37, 261, 17],
  [130, 70, 513],
];
const FORMS = [
  { name: 'x W^T', transposeA: false, transposeB: true },
  { name: 'dy W', transposeA: false, transposeB: false },
  { name: 'dy^T x', transposeA: true, transposeB: false },
  { name: 'both transposed', transposeA: true, transposeB: true },
];

/** C = op(a) op(b) (+ bias) on the cpu backend, as plain arrays. */
async function onCpu(
  a: number[],
  aShape: [number, number],
  b: number[],
  bShape: [number, number],
  ta: boolean,
  tb: boolean,
  bias?: number[],
) {
  await tf.setBackend('cpu');
  try {
    return tf.tidy(() => {
      const c = tf.matMul(tf.tensor2d(a, aShape), tf.tensor2d(b, bShape), ta, tb);
      return Array.from((bias ? c.add(tf.tensor1d(bias)) : c).dataSync());
    });
  } finally {
    await tf.setBackend('wasm');
  }
}

/** max |got - want| / max |want|. */
function relError(got: ArrayLike<number>, want: number[]): number {
  let err = 0,
    scale = 0;
  want.forEach((w, i) => {
    err = Math.max(err, Math.abs(got[i] - w));
    scale = Math.max(scale, Math.abs(w));
  });
  return err / scale;
}

const random = (n: number, seed: number) => Array.from(tf.randomUniform([n], -1, 1, 'float32', seed).dataSync());

describe('our own wasm matmul', () => {
  for (const form of FORMS) {
    it(`${form.name}: agrees with tf.matMul on cpu, with and without a bias, leading dimensions of 1`, async () => {
      for (const [m, n, k] of SIZES) {
        const aShape: [number, number] = form.transposeA ? [k, m] : [m, k],
          bShape: [number, number] = form.transposeB ? [n, k] : [k, n];
        const av = random(m * k, m + n + k),
          bv = random(n * k, m * n * k),
          bias = random(n, n + 1);
        const a = tf.tensor3d(av, [1, ...aShape]),
          b = tf.tensor2d(bv, bShape),
          biasT = tf.tensor1d(bias);
        const before = tf.memory().numTensors;
        setWasmMatMulRoute('own');
        const viaRoute = tf.matMul(a, b, form.transposeA, form.transposeB);
        expect(viaRoute.shape).toEqual([1, m, n]);
        const info = wasmOwnMatMul(tf.backend(), a, b, { ...form, bias: biasT, outShape: [m, n] });
        const withBias = tf.engine().makeTensorFromDataId(info.dataId, info.shape, info.dtype);
        expect(
          relError(viaRoute.dataSync(), await onCpu(av, aShape, bv, bShape, form.transposeA, form.transposeB)),
        ).toBeLessThan(2e-6);
        expect(
          relError(withBias.dataSync(), await onCpu(av, aShape, bv, bShape, form.transposeA, form.transposeB, bias)),
        ).toBeLessThan(2e-6);
        tf.dispose([viaRoute, withBias]);
        expect(tf.memory().numTensors).toBe(before);
        tf.dispose([a, b, biasT]);
      }
    });
  }

  it("built for SIMD128 alone, gives the same bits as tfjs-wasm's kernel, so the route changes no run's numbers", async () => {
    await compileWasmKernels('simd');
    expect(wasmKernelBuild).toBe('simd');
    for (const form of FORMS.slice(0, 3)) {
      for (const [m, n, k] of [...SIZES, [256, 384, 1024] as [number, number, number]]) {
        const a = tf.randomNormal(form.transposeA ? [k, m] : [m, k], 0, 1, 'float32', 1) as tf.Tensor2D;
        const b = tf.randomNormal(form.transposeB ? [n, k] : [k, n], 0, 1, 'float32', 2) as tf.Tensor2D;
        setWasmMatMulRoute('tfjs');
        const theirs = tf.matMul(a, b, form.transposeA, form.transposeB);
        setWasmMatMulRoute('own');
        const ours = tf.matMul(a, b, form.transposeA, form.transposeB);
        expect(Array.from(ours.dataSync())).toEqual(Array.from(theirs.dataSync()));
        tf.dispose([a, b, theirs, ours]);
      }
    }
    await compileWasmKernels(defaultBuild ?? undefined);
  });

  it('built with relaxed SIMD (the default in Node), gives each row the same bits whatever the rows beside it', async () => {
    // Fused multiply-adds round differently from XNNPACK's multiply-then-add, so the automatic route must then take
    // our kernel at every size, the few rows of a decode step's LM head included, or two workers (half the rows
    // each) would sample other tokens than one.
    expect(defaultBuild).toBe('relaxed');
    const w = tf.randomNormal([72, 48], 0, 1, 'float32', 3) as tf.Tensor2D;
    const x = tf.randomNormal([40, 48], 0, 1, 'float32', 4) as tf.Tensor2D;
    for (const rows of [1, 3, 8, 16]) {
      const all = tf.matMul(x, w, false, true).slice([0, 0], [rows, 72]);
      const few = tf.matMul(x.slice([0, 0], [rows, 48]), w, false, true);
      const allPlain = tf.matMul(x, w.transpose()).slice([0, 0], [rows, 72]);
      const fewPlain = tf.matMul(x.slice([0, 0], [rows, 48]), w.transpose());
      expect(Array.from(few.dataSync()), `x W^T, ${rows} rows`).toEqual(Array.from(all.dataSync()));
      expect(Array.from(fewPlain.dataSync()), `x W, ${rows} rows`).toEqual(Array.from(allPlain.dataSync()));
      tf.dispose([all, few, allPlain, fewPlain]);
    }
    tf.dispose([w, x]);
  });

  it("gives the product on each side of the automatic route's rule, batched products (tfjs-wasm's) included", () => {
    const cases: [number[], number[], boolean, boolean][] = [
      [[4, 8], [16, 8], false, true],
      [[31, 8], [8, 16], false, false],
      [[32, 8], [8, 16], false, false],
      [[2, 4, 8], [2, 8, 16], false, false],
    ];
    for (const [as, bs, ta, tb] of cases) {
      const a = tf.ones(as),
        b = tf.ones(bs);
      const c = tf.matMul(a, b, ta, tb);
      expect(c.dataSync().every((v) => v === 8)).toBe(true);
      tf.dispose([a, b, c]);
    }
  });
});
