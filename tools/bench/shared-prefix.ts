// What model.sharePrefix saves in one forward + backward of a training micro-batch: sokoban-tiny's model (random
// weights) on rows shaped like its real micro-batches (8 rows padded to 224 tokens, 192-199 of them real, the first
// P shared, the LM head from position 165), with the prefix run once and in every row, alternating, three rounds;
// then the gradients' largest relative difference and where each form's kernel time goes.
//   npx tsx tools/bench/shared-prefix.ts [P=98] [wasm|cpu]
// A real sokoban-tiny micro-batch shares 89-98 tokens (its system prompt and instructions).
import * as tf from '@tensorflow/tfjs';
import { readFileSync } from 'node:fs';
import { initBackend } from '../../src/model/backend';
import { Qwen2Model, initQwen2Weights } from '../../src/model/qwen2';
import { tokenLogProbs } from '../../src/model/scoring';
import { printKernelRows, profileKernels } from './kernelProfile';

const P = Number(process.argv[2] ?? 98);
await initBackend((process.argv[3] ?? 'wasm') as 'wasm' | 'cpu');
const config = JSON.parse(readFileSync('public/warmstart/sokoban-tiny/config.json', 'utf8'));
const model = new Qwen2Model(config, initQwen2Weights(config, 1));
model.sharePrefix = true;
const [B, T, FROM] = [8, 224, 165];
const token = (i: number, row: number) => (i * 7919 + row * 104729) % config.vocab_size;
const rows = Array.from({ length: B }, (_, r) => Array.from({ length: T }, (_, i) => token(i, i < P ? 0 : r + 1)));
const ids = tf.tensor2d(rows.flat(), [B, T], 'int32');
const mask = tf.tensor2d(
  rows.flatMap((_, r) => Array.from({ length: T }, (_, i) => (i < 192 + r ? 1 : 0))),
  [B, T],
);
const vars = Object.values(model.trainableVariables);
const grads = (sharedPrefix: number) =>
  tf.variableGrads(() => {
    const { logProbs } = tokenLogProbs(model, ids, mask, 1, { fromTarget: FROM, sharedPrefix });
    return tf.mean(logProbs) as tf.Scalar;
  }, vars);
const once = async (sharedPrefix: number) => {
  const r = grads(sharedPrefix);
  await r.value.data();
  tf.dispose([r.value, ...Object.values(r.grads)]);
};

const full = grads(0);
const shared = grads(P);
let worst = 0;
for (const name of Object.keys(full.grads)) {
  const diff = (await tf.max(tf.abs(tf.sub(full.grads[name], shared.grads[name]))).data())[0];
  worst = Math.max(worst, diff / ((await tf.max(tf.abs(full.grads[name])).data())[0] + 1e-12));
}
tf.dispose([full.value, shared.value, ...Object.values(full.grads), ...Object.values(shared.grads)]);
console.log(
  `${B} rows x ${T} tokens, ${P} shared, on ${tf.getBackend()}: largest relative gradient difference ${worst.toExponential(1)}`,
);

for (let round = 1; round <= 3; round++) {
  const line: string[] = [];
  for (const p of [0, P]) {
    await once(p);
    const t0 = performance.now();
    for (let i = 0; i < 5; i++) await once(p);
    line.push(`${p ? 'prefix once' : 'prefix in every row'} ${((performance.now() - t0) / 5).toFixed(0)} ms`);
  }
  console.log(`  round ${round}: ${line.join(', ')} (mean of 5 forward + backward)`);
}
for (const p of [0, P]) {
  const prof = await profileKernels(() => once(p));
  console.log(`${p ? 'prefix once' : 'prefix in every row'}: kernel time ${prof.totalMs.toFixed(0)} ms`);
  printKernelRows(prof, 6, 22, 5);
}
