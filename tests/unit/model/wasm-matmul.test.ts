// The wasm BatchMatMul replacement (src/model/wasmMatMul.ts) must give the plain-JS product for every transpose
// combination, batched and broadcast shapes included, and leave no tensor behind.
import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../../src/model/backend';

beforeAll(async () => {
  await initBackend('wasm');
});

/** Reference C[b] = op(A[b]) op(B[b]) in float64 over row-major arrays (batch 1 broadcasts). */
function reference(a: tf.Tensor3D, b: tf.Tensor3D, ta: boolean, tb: boolean): number[][][] {
  const A = a.arraySync(),
    B = b.arraySync();
  const batch = Math.max(A.length, B.length);
  const at = (M: number[][], t: boolean, i: number, j: number) => (t ? M[j][i] : M[i][j]);
  const out: number[][][] = [];
  for (let n = 0; n < batch; n++) {
    const Ma = A[A.length === 1 ? 0 : n],
      Mb = B[B.length === 1 ? 0 : n];
    const rows = ta ? Ma[0].length : Ma.length,
      inner = ta ? Ma.length : Ma[0].length;
    const cols = tb ? Mb.length : Mb[0].length;
    out.push(
      Array.from({ length: rows }, (_, i) =>
        Array.from({ length: cols }, (_, j) => {
          let s = 0;
          for (let k = 0; k < inner; k++) s += at(Ma, ta, i, k) * at(Mb, tb, k, j);
          return s;
        }),
      ),
    );
  }
  return out;
}

describe('wasm BatchMatMul with transposed operands', () => {
  for (const ta of [false, true]) {
    for (const tb of [false, true]) {
      it(`transposeA=${ta} transposeB=${tb}, batched with broadcasting`, () => {
        const a = tf.randomNormal(ta ? [3, 5, 4] : [3, 4, 5], 0, 1, 'float32', 1) as tf.Tensor3D;
        const b = tf.randomNormal(tb ? [1, 6, 5] : [1, 5, 6], 0, 1, 'float32', 2) as tf.Tensor3D;
        const before = tf.memory().numTensors;
        const got = tf.matMul(a, b, ta, tb);
        expect(got.shape).toEqual([3, 4, 6]);
        const want = reference(a, b, ta, tb).flat(2);
        const values = Array.from(got.dataSync());
        values.forEach((v, i) => expect(Math.abs(v - want[i])).toBeLessThan(1e-5));
        got.dispose();
        expect(tf.memory().numTensors).toBe(before);
        tf.dispose([a, b]);
      });
    }
  }

  it('gradients through a transposed matmul match the analytic ones', () => {
    const x = tf.randomNormal([4, 3], 0, 1, 'float32', 3) as tf.Tensor2D;
    const w = tf.randomNormal([5, 3], 0, 1, 'float32', 4) as tf.Tensor2D;
    // loss = sum(x w^T): d/dx = ones[4,5] w, d/dw = ones[5,4] x
    const [gx, gw] = tf.grads((xx: tf.Tensor, ww: tf.Tensor) => tf.matMul(xx, ww, false, true).sum())([x, w]);
    const wantGx = w.sum(0).arraySync() as number[];
    const wantGw = x.sum(0).arraySync() as number[];
    (gx.arraySync() as number[][]).forEach((row) => row.forEach((v, j) => expect(v).toBeCloseTo(wantGx[j], 5)));
    (gw.arraySync() as number[][]).forEach((row) => row.forEach((v, j) => expect(v).toBeCloseTo(wantGw[j], 5)));
  });
});
