// Single-thread wasm matmul GFLOP/s at the tiny model's shapes and the cost of one small element-wise op: the
// measured basis for BENCHMARKS.md's explanation of the gap to PyTorch.  npx tsx tools/bench/wasm-kernels.ts
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../../src/model/backend';
await initBackend('wasm');
for (const [m, k, n] of [
  [1024, 64, 192],
  [1024, 64, 512],
  [1024, 192, 64],
  [512, 512, 512],
]) {
  const a = tf.randomNormal([m, k]),
    b = tf.randomNormal([k, n]);
  for (let i = 0; i < 3; i++) {
    const c = tf.matMul(a, b);
    await c.data();
    c.dispose();
  }
  const reps = 30;
  const t0 = performance.now();
  for (let i = 0; i < reps; i++) {
    const c = tf.matMul(a, b);
    await c.data();
    c.dispose();
  }
  const s = (performance.now() - t0) / 1000 / reps;
  console.log(`wasm ${m}x${k}x${n}: ${((2 * m * k * n) / s / 1e9).toFixed(2)} GFLOP/s`);
  // elementwise op cost on a [1024,64] tensor: per-op overhead vs bandwidth
}
const x = tf.randomNormal([1024, 64]);
const t1 = performance.now();
for (let i = 0; i < 1000; i++) {
  const y = tf.add(x, 1);
  y.dispose();
}
await x.data();
console.log(`wasm add [1024,64]: ${(((performance.now() - t1) / 1000) * 1000).toFixed(1)} us per op`);
const s1 = tf.randomNormal([64]);
const t2 = performance.now();
for (let i = 0; i < 1000; i++) {
  const y = tf.add(s1, 1);
  y.dispose();
}
await s1.data();
console.log(`wasm add [64]: ${(((performance.now() - t2) / 1000) * 1000).toFixed(1)} us per op`);
