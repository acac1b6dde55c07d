// The tools that keep a large model's update inside memory, checked against the plain computation at a tiny shape:
// the LM head + log-probs in chunks of rows (chunkedHeadLogProbs) and gradient checkpointing per decoder layer give
// the same log-probs, entropies and gradients as the whole-tape computation, and leave no tensor behind, on wasm,
// cpu and webgpu.
import { beforeAll, describe, expect, it } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { initBackend, SWIFTSHADER_ICD } from '../../../src/model/backend';
import type { Qwen2Config } from '../../../src/model/config';
import { Qwen2Model, initQwen2Weights } from '../../../src/model/qwen2';
import { namedVariableGrads, tokenLogProbs } from '../../../src/model/scoring';

const config: Qwen2Config = {
  model_type: 'qwen2',
  vocab_size: 48,
  hidden_size: 16,
  intermediate_size: 24,
  num_hidden_layers: 3,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  max_position_embeddings: 64,
  rope_theta: 10000,
  rms_norm_eps: 1e-6,
  tie_word_embeddings: true,
  initializer_range: 0.3,
};

const ids = () =>
  tf.tensor2d(
    [
      [3, 9, 1, 30, 7, 7, 12, 40, 2],
      [0, 0, 5, 6, 8, 44, 21, 3, 1],
    ],
    undefined,
    'int32',
  );
const mask = () =>
  tf.tensor2d([
    [1, 1, 1, 1, 1, 1, 1, 1, 1],
    [0, 0, 1, 1, 1, 1, 1, 1, 1],
  ]);

/** A PPO-like loss of the log-probs and entropies; returns their values and every weight's gradient. */
async function run(model: Qwen2Model, chunkRows?: number) {
  const x = ids(),
    m = mask();
  const kept: tf.Tensor[] = []; // read after the gradient (webgpu in Node cannot read synchronously)
  const { value, grads } = namedVariableGrads(model.variables, () => {
    const { logProbs, entropy } = tokenLogProbs(model, x, m, 0.7, { chunkRows });
    kept.push(tf.keep(logProbs), tf.keep(entropy));
    const w = tf.linspace(-1, 1, logProbs.size).reshape(logProbs.shape);
    return logProbs.mul(w).sum().sub(entropy.mean().mul(0.01)) as tf.Scalar;
  });
  const g: Record<string, number[]> = {};
  for (const [n, t] of Object.entries(grads)) g[n] = Array.from(await t.data());
  const [logProbs, entropy] = await Promise.all(kept.map(async (t) => Array.from(await t.data())));
  tf.dispose([value, x, m, ...kept, ...Object.values(grads)]);
  return { logProbs, entropy, grads: g };
}

/** |a - b| <= 1e-5 + tol |b| elementwise (the parity suite's form; the absolute part covers gradients that are 0 in
 *  exact arithmetic, such as the key bias's, and come out as float noise). */
function expectClose(a: number[], b: number[], tol: number, what = '') {
  expect(a.length).toBe(b.length);
  const worst = Math.max(...a.map((v, i) => Math.abs(v - b[i]) / (1e-5 + tol * Math.abs(b[i]))));
  expect(worst, what).toBeLessThanOrEqual(1);
}

// webgpu: Dawn in Node (SwiftShader on a machine without a GPU), where AdamW has no fused kernel either.
for (const backend of ['wasm', 'cpu', 'webgpu'] as const) {
  describe(`memory tools on ${backend}`, () => {
    beforeAll(async () => {
      if (backend === 'webgpu') process.env.VK_ICD_FILENAMES ??= SWIFTSHADER_ICD;
      await initBackend(backend);
    });

    it('chunked LM head: same log-probs, entropies and gradients as the whole logits', async () => {
      const model = new Qwen2Model(config, initQwen2Weights(config, 11));
      const whole = await run(model);
      const before = tf.memory().numTensors;
      for (const chunkRows of [1, 5, 7]) {
        const chunked = await run(model, chunkRows);
        expectClose(chunked.logProbs!, whole.logProbs!, 1e-5);
        expectClose(chunked.entropy!, whole.entropy!, 1e-5);
        expect(Object.keys(chunked.grads).sort()).toEqual(Object.keys(whole.grads).sort());
        for (const n of Object.keys(whole.grads))
          expectClose(chunked.grads[n], whole.grads[n], 1e-4, `${n}, chunks of ${chunkRows}`);
        expect(tf.memory().numTensors).toBe(before);
      }
      model.dispose();
    });

    it('gradient checkpointing: the same values and gradients, every weight reached', async () => {
      const model = new Qwen2Model(config, initQwen2Weights(config, 12));
      const plain = await run(model);
      model.gradientCheckpointing = true;
      const before = tf.memory().numTensors;
      const ckpt = await run(model);
      expect(ckpt.logProbs).toEqual(plain.logProbs); // the forward is the same ops on the same inputs
      expect(Object.keys(ckpt.grads).sort()).toEqual(Object.keys(model.variables).sort());
      for (const n of Object.keys(plain.grads)) expectClose(ckpt.grads[n], plain.grads[n], 1e-5);
      await run(model, 4); // both tools at once
      expect(tf.memory().numTensors).toBe(before);
      // A critic (value head) checkpoints the same way.
      const critic = new Qwen2Model(config, initQwen2Weights(config, 13, { valueHead: true }), { valueHead: true });
      const x = ids(),
        m = mask();
      const criticGrads = async () => {
        const { value, grads } = namedVariableGrads(
          critic.variables,
          () => critic.forward(x, m).square().mean() as tf.Scalar,
        );
        const out = Object.fromEntries(
          await Promise.all(Object.entries(grads).map(async ([n, t]) => [n, Array.from(await t.data())] as const)),
        );
        tf.dispose([value, ...Object.values(grads)]);
        return out;
      };
      const a = await criticGrads();
      critic.gradientCheckpointing = true;
      const b = await criticGrads();
      for (const n of Object.keys(a)) expectClose(b[n], a[n], 1e-5);
      tf.dispose([x, m]);
      critic.dispose();
      model.dispose();
    });
  });
}
