// Shared by shared-prefix{,-webgpu}.test.ts: a micro-batch's shared prompt prefix run through the layers once
// (Qwen2Model.sharePrefix) gives the full batch's log-probs, values and gradients on one backend.
import * as tf from '@tensorflow/tfjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend, SWIFTSHADER_ICD, type BackendName } from '../../../src/model/backend';
import { Qwen2Model, initQwen2Weights } from '../../../src/model/qwen2';
import { tokenLogProbs } from '../../../src/model/scoring';
import { padBatch, disposeBatch } from '../../../src/starpo/batch';
import { TINY_GENERATE_CONFIG } from './tiny-generate-config';

const config = TINY_GENERATE_CONFIG;
export const PREFIX = [3, 17, 5, 9, 41, 2, 28, 11, 7, 33, 19, 4];
// Three rows: the prefix, then each its own tokens, of different lengths (padBatch pads the short ones on the right).
const ROWS = [
  [...PREFIX, 8, 14, 22, 6, 30, 1, 12],
  [...PREFIX, 25, 40, 13],
  [...PREFIX, 8, 14, 36, 20, 45, 18, 10, 27, 44, 9],
];
export const SEQS = ROWS.map((ids) => ({ ids, lossMask: new Uint8Array(ids.length - 1).fill(1) }));

/** The largest |a - b| relative to max |a| over every pair of tensors. */
async function maxRelDiff(a: tf.Tensor[], b: tf.Tensor[]): Promise<number> {
  let worst = 0;
  for (let i = 0; i < a.length; i++) {
    const diff = (await tf.max(tf.abs(tf.sub(a[i], b[i]))).data())[0];
    const scale = (await tf.max(tf.abs(a[i])).data())[0];
    worst = Math.max(worst, diff / (scale + 1e-12));
  }
  return worst;
}

export function defineSharedPrefixSuite(backend: BackendName): void {
  describe(`Qwen2Model with sharePrefix on ${backend}`, () => {
    let previous: string | undefined;
    beforeAll(async () => {
      previous = tf.getBackend();
      if (backend === 'webgpu') process.env.VK_ICD_FILENAMES ??= SWIFTSHADER_ICD;
      await initBackend(backend);
    });
    afterAll(async () => {
      if (previous) await tf.setBackend(previous); // none before the first backend of a file
    });

    it("gives the full batch's log-probs, entropies and gradients, and ignores the prefix when off", async () => {
      const model = new Qwen2Model(config, initQwen2Weights(config, 5));
      const batch = padBatch(SEQS, 0);
      const run = (sharedPrefix: number) =>
        tf.variableGrads(() => {
          const { logProbs, entropy } = tokenLogProbs(model, batch.ids, batch.attention, 1, {
            fromTarget: 4,
            sharedPrefix,
          });
          // A loss over real targets only (the padding's outputs are meaningless in both forms).
          return tf.sum(tf.mul(tf.add(logProbs, tf.mul(entropy, 0.3)), batch.lossMask)) as tf.Scalar;
        }, Object.values(model.trainableVariables));
      const full = run(0);
      const names = Object.keys(full.grads);
      model.sharePrefix = false;
      const ignored = run(batch.sharedPrefix);
      expect(await ignored.value.data()).toEqual(await full.value.data()); // off: the very same computation
      model.sharePrefix = true;
      const shared = run(batch.sharedPrefix);
      expect((await shared.value.data())[0]).toBeCloseTo((await full.value.data())[0], 4);
      const gradDiff = await maxRelDiff(
        names.map((n) => full.grads[n]),
        names.map((n) => shared.grads[n]),
      );
      expect(gradDiff).toBeLessThan(1e-5);
      // Every weight gets a gradient in both forms (a prefix that stopped the gradient would leave the embeddings
      // of its tokens, and part of every matrix's, at the wrong value, which the bound above catches).
      expect(names.length).toBe(Object.keys(model.trainableVariables).length);
      tf.dispose([full.value, ignored.value, shared.value, ...Object.values(full.grads)]);
      tf.dispose([...Object.values(ignored.grads), ...Object.values(shared.grads)]);
      disposeBatch(batch);
      model.dispose();
    });

    it("gives a value head the full batch's values, and leaks no tensor", async () => {
      const critic = new Qwen2Model(config, initQwen2Weights(config, 6, { valueHead: true }), { valueHead: true });
      const batch = padBatch(SEQS, 0);
      const full = critic.forward(batch.ids, batch.attention);
      critic.sharePrefix = true;
      critic.forward(batch.ids, batch.attention, batch.sharedPrefix).dispose(); // warms the position tables
      const before = tf.memory().numTensors;
      const shared = critic.forward(batch.ids, batch.attention, batch.sharedPrefix);
      expect(tf.memory().numTensors).toBe(before + 1);
      const real = batch.attention;
      expect(await maxRelDiff([tf.mul(full, real)], [tf.mul(shared, real)])).toBeLessThan(1e-5);
      expect(() => critic.forward(batch.ids, batch.attention, batch.length)).toThrow(/sharedPrefix/);
      tf.dispose([full, shared]);
      disposeBatch(batch);
      critic.dispose();
    });
  });
}
