// The fused causal attention kernel alone, forward and forward + backward, at a training micro-batch's shape:
// sokoban-tiny's (8 rows x 224 tokens, 4 query heads and 2 key/value heads of 32) unless told otherwise. Prints the
// mean time of each over `reps` calls after two warm-up calls, and the GFLOP/s of the causal work (a query and a key
// it sees: q.k, then p v; the backward four such products).
//   npx tsx tools/bench/attention.ts [B=8] [T=224] [heads=4] [kvHeads=2] [headDim=32] [reps=20] [wasm|cpu]
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../../src/model/backend';
import { attention } from '../../src/model/kernels';

const arg = (i: number, d: number) => Number(process.argv[2 + i] ?? d);
const [B, T, nH, nKV, hd, reps] = [arg(0, 8), arg(1, 224), arg(2, 4), arg(3, 2), arg(4, 32), arg(5, 20)];
await initBackend((process.argv[8] ?? 'wasm') as 'wasm' | 'cpu');
const heads = { numHeads: nH, numKvHeads: nKV, headDim: hd };
const qkv = tf.randomNormal([B * T, (nH + 2 * nKV) * hd], 0, 1, 'float32', 1) as tf.Tensor2D;
const mask = tf.ones([B, T]) as tf.Tensor2D;
const dy = tf.randomNormal([B * T, nH * hd], 0, 1, 'float32', 2);
const forward = async () => {
  const out = attention(qkv, mask, heads);
  await out.data();
  out.dispose();
};
const backward = async () => {
  const g = tf.grad((x: tf.Tensor) =>
    attention(x as tf.Tensor2D, mask, heads)
      .mul(dy)
      .sum(),
  )(qkv);
  await g.data();
  g.dispose();
};
const pairs = B * nH * ((T * (T + 1)) / 2);
for (const [name, work, products] of [
  ['forward', forward, 2],
  ['forward + backward', backward, 6],
] as const) {
  await work();
  await work();
  const t0 = performance.now();
  for (let i = 0; i < reps; i++) await work();
  const ms = (performance.now() - t0) / reps;
  const gflops = (pairs * products * 2 * hd) / (ms * 1e6);
  console.log(
    `${name.padEnd(20)} ${ms.toFixed(2).padStart(8)} ms   ${gflops.toFixed(1)} GFLOP/s   (B ${B}, T ${T}, heads ${nH}/${nKV} x ${hd}, ${tf.getBackend()})`,
  );
}
