// On wasm a micro-batch is padded to a multiple of 8 instead of WebGPU's buckets of 32 (bucketLength): that is only
// faster if the padded length changes nothing a loss reads. Rows are right-padded, a real token never attends to a
// padded one, and our matmul sums every element in k order with zeros where padding was, so the real rows'
// log-probs, entropies, values and every gradient are the same bits at either length.
import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../../src/model/backend';
import { Qwen2Model, initQwen2Weights } from '../../../src/model/qwen2';
import { tokenLogProbs } from '../../../src/model/scoring';
import { disposeBatch, padBatch, unpadRows } from '../../../src/starpo/batch';
import { SEQS } from './shared-prefix-suite';
import { TINY_GENERATE_CONFIG } from './tiny-generate-config';

beforeAll(async () => {
  await initBackend('wasm');
});

/** The real rows' log-probs, entropies and values, and the gradients of a loss over loss tokens, at one padding. */
async function run(model: Qwen2Model, critic: Qwen2Model, buckets: boolean) {
  const batch = padBatch(SEQS, 0, buckets);
  const lengths = SEQS.map((s) => s.ids.length - 1);
  let scored: tf.Tensor[] = [];
  const { value, grads } = tf.variableGrads(() => {
    const { logProbs, entropy } = tokenLogProbs(model, batch.ids, batch.attention, 1, { fromTarget: 2 });
    scored = [tf.keep(logProbs), tf.keep(entropy)];
    return tf.sum(tf.mul(tf.add(logProbs, tf.mul(entropy, 0.3)), batch.lossMask)) as tf.Scalar;
  }, Object.values(model.trainableVariables));
  const values = tf.tidy(() =>
    (critic.forward(batch.ids, batch.attention) as tf.Tensor2D).slice([0, 0], [SEQS.length, batch.length - 1]),
  );
  const out = {
    length: batch.length,
    logProbs: await unpadRows(scored[0], lengths),
    entropy: await unpadRows(scored[1], lengths),
    values: await unpadRows(values, lengths),
    grads: Object.fromEntries(
      await Promise.all(Object.entries(grads).map(async ([k, g]) => [k, (await g.data()) as Float32Array] as const)),
    ),
  };
  tf.dispose([value, values, ...scored, ...Object.values(grads)]);
  disposeBatch(batch);
  return out;
}

describe('the padded length on wasm', () => {
  it("changes no real row's log-prob, entropy or value, and no gradient, bit for bit", async () => {
    const model = new Qwen2Model(TINY_GENERATE_CONFIG, initQwen2Weights(TINY_GENERATE_CONFIG, 7));
    const critic = new Qwen2Model(
      TINY_GENERATE_CONFIG,
      initQwen2Weights(TINY_GENERATE_CONFIG, 8, { valueHead: true }),
      {
        valueHead: true,
      },
    );
    const bucketed = await run(model, critic, true);
    const before = tf.memory().numTensors; // after the first run's cached tables (rotary angles)
    const tight = await run(model, critic, false);
    expect(tf.memory().numTensors).toBe(before);
    // The rows are 15, 19 and 22 tokens long: 32 as buckets, 24 as a multiple of 8.
    expect([bucketed.length, tight.length]).toEqual([32, 24]);
    expect(tight.logProbs).toEqual(bucketed.logProbs);
    expect(tight.entropy).toEqual(bucketed.entropy);
    expect(tight.values).toEqual(bucketed.values);
    expect(Object.keys(tight.grads).length).toBeGreaterThan(5);
    for (const [name, g] of Object.entries(bucketed.grads)) {
      expect(
        g.some((x) => x !== 0),
        name,
      ).toBe(true);
      expect(tight.grads[name], name).toEqual(g);
    }
  });
});
