// wasm's Slice and SplitV (src/model/wasmSlice.ts, which copies only the slice out of the heap) against the cpu
// backend: every rank up to 4, slices that take trailing dimensions whole or not, float32, int32 and bool, and the
// gradient of a slice; no tensor left behind.
import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../../src/model/backend';
import { copySlice } from '../../../src/model/wasmSlice';

beforeAll(async () => {
  await initBackend('cpu');
  await initBackend('wasm');
});

/** Runs `f` on a backend and returns its result's values and shape. */
async function on(backend: string, f: () => tf.Tensor | tf.Tensor[]) {
  const before = tf.getBackend();
  tf.setBackend(backend);
  try {
    const out = tf.tidy(f);
    const list = Array.isArray(out) ? out : [out];
    const result = await Promise.all(list.map(async (t) => ({ shape: t.shape, values: Array.from(await t.data()) })));
    tf.dispose(list);
    return result;
  } finally {
    tf.setBackend(before);
  }
}

const CASES: { shape: number[]; begin: number[]; size: number[] }[] = [
  { shape: [10], begin: [3], size: [5] },
  { shape: [4, 6], begin: [1, 0], size: [2, 6] }, // whole rows: one run
  { shape: [4, 6], begin: [1, 2], size: [3, 3] }, // a window
  { shape: [4, 6], begin: [0, 5], size: [4, 1] }, // one column
  { shape: [3, 4, 5], begin: [1, 0, 0], size: [1, 4, 5] }, // one layer of a stacked weight
  { shape: [3, 4, 5], begin: [0, 1, 2], size: [3, 2, 3] },
  { shape: [3, 4, 5], begin: [2, 3, 0], size: [1, 1, -1] }, // -1: to the end
  { shape: [2, 3, 4, 5], begin: [1, 0, 1, 0], size: [1, 3, 2, 5] },
  { shape: [2, 3, 4, 5], begin: [0, 1, 0, 1], size: [2, 2, 4, 3] },
  { shape: [3, 0, 2], begin: [0, 0, 0], size: [2, 0, 2] }, // empty
];

describe('wasm Slice and SplitV copy only the slice', () => {
  for (const dtype of ['float32', 'int32', 'bool'] as const) {
    it(`Slice gives the cpu backend's values (${dtype})`, async () => {
      const before = tf.memory().numTensors;
      for (const { shape, begin, size } of CASES) {
        const n = shape.reduce((a, b) => a * b, 1);
        const data = Array.from({ length: n }, (_, i) => (dtype === 'bool' ? ((i * 7) % 3 === 0 ? 1 : 0) : i * 3 - 40));
        const f = () => tf.slice(tf.tensor(data, shape, dtype), begin, size);
        expect(await on('wasm', f), JSON.stringify({ shape, begin, size })).toEqual(await on('cpu', f));
      }
      expect(tf.memory().numTensors).toBe(before);
    });
  }

  it("SplitV along every axis, in equal and unequal pieces, gives the cpu backend's values", async () => {
    const shape = [4, 6, 5];
    const data = Array.from({ length: 120 }, (_, i) => Math.sin(i) * 10);
    for (const [axis, splits] of [
      [0, 2],
      [0, [1, 3]],
      [1, [2, 1, 3]],
      [2, [4, -1]],
    ] as const) {
      const f = () => tf.split(tf.tensor(data, shape), splits as number | number[], axis);
      expect(await on('wasm', f), `axis ${axis}`).toEqual(await on('cpu', f));
    }
  });

  it("a slice's gradient is the cpu backend's", async () => {
    const data = Array.from({ length: 60 }, (_, i) => i / 7);
    const f = () => {
      const x = tf.tensor(data, [3, 4, 5]);
      return tf.grad((t: tf.Tensor) => tf.slice(t, [1, 1, 0], [2, 2, 5]).square().sum())(x);
    };
    expect(await on('wasm', f)).toEqual(await on('cpu', f));
  });

  it('copySlice reads one run per row of the slice, and nothing past it', () => {
    const x = Int32Array.from({ length: 24 }, (_, i) => i); // [2, 3, 4]
    const out = new Int32Array(6).fill(-1);
    copySlice(x, [2, 3, 4], [1, 1, 1], [1, 2, 3], out);
    expect(Array.from(out)).toEqual([17, 18, 19, 21, 22, 23]);
    const whole = new Int32Array(12);
    copySlice(x, [2, 3, 4], [1, 0, 0], [1, 3, 4], whole);
    expect(Array.from(whole)).toEqual(Array.from({ length: 12 }, (_, i) => 12 + i));
  });
});
