// 20 iterations of generate + train (actor: tokenLogProbs + PPO-like loss + gradients + clipping + AdamW; critic:
// value loss + AdamW) on a tiny model leave tf.memory().numTensors and numBytes exactly where they were.
import { beforeAll, expect, it } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../../../src/model/backend';
import type { Qwen2Config } from '../../../src/model/config';
import { Qwen2Model, initQwen2Weights } from '../../../src/model/qwen2';
import { namedVariableGrads, tokenLogProbs } from '../../../src/model/scoring';
import { AdamW, clipGradNorm } from '../../../src/model/adamw';
import { generate } from '../../../src/model/generate';

const config: Qwen2Config = {
  model_type: 'qwen2',
  vocab_size: 30,
  hidden_size: 16,
  intermediate_size: 24,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  max_position_embeddings: 128,
  rope_theta: 10000,
  rms_norm_eps: 1e-6,
  tie_word_embeddings: true,
};

beforeAll(async () => {
  await initBackend('wasm');
});

it('keeps numTensors and numBytes flat over 20 generate + train iterations', async () => {
  const actor = new Qwen2Model(config, initQwen2Weights(config, 1));
  const critic = new Qwen2Model(config, initQwen2Weights(config, 2, { valueHead: true }), { valueHead: true });
  const actorOpt = new AdamW(actor.variables, { lr: 1e-3 });
  const criticOpt = new AdamW(critic.variables, { lr: 1e-3 });

  const iteration = async (i: number) => {
    const prompts = [
      [1, 2, 3],
      [4, 5, 6, 7, 8],
    ];
    const { tokens } = await generate(actor, prompts, {
      maxNewTokens: 6,
      temperature: 1,
      seed: i,
      padTokenId: 0,
      stopTokenIds: [9],
    });
    // right-pad prompt + response into one batch; train on the response tokens
    const seqs = prompts.map((p, r) => [...p, ...tokens[r]]);
    const len = Math.max(...seqs.map((s) => s.length));
    const ids = tf.tensor2d(
      seqs.map((s) => [...s, ...Array(len - s.length).fill(0)]),
      undefined,
      'int32',
    );
    const mask = tf.tensor2d(seqs.map((s) => s.map(() => 1).concat(Array(len - s.length).fill(0))));
    const lossMask = tf.tensor2d(
      seqs.map((s, r) =>
        Array.from({ length: len - 1 }, (_, j) => (j + 1 >= prompts[r].length && j + 1 < s.length ? 1 : 0)),
      ),
    );
    const adv = tf.randomNormal([2, len - 1], 0, 1, 'float32', i);

    const actorStep = namedVariableGrads(actor.variables, () => {
      const { logProbs, entropy } = tokenLogProbs(actor, ids, mask);
      const pg = logProbs.neg().mul(adv).mul(lossMask).sum().div(lossMask.sum());
      return pg.sub(entropy.mul(lossMask).sum().div(lossMask.sum()).mul(0.001)) as tf.Scalar;
    });
    const clipped = clipGradNorm(actorStep.grads, 1.0);
    if (Number.isFinite(clipped.norm)) actorOpt.step(clipped.grads);
    tf.dispose([actorStep.value, ...Object.values(actorStep.grads), ...Object.values(clipped.grads)]);

    const criticStep = namedVariableGrads(
      critic.variables,
      () =>
        critic
          .forward(ids, mask)
          .slice([0, 0], [2, len - 1])
          .sub(adv)
          .square()
          .mul(lossMask)
          .sum()
          .div(lossMask.sum()) as tf.Scalar,
    );
    criticOpt.step(criticStep.grads);
    tf.dispose([criticStep.value, ...Object.values(criticStep.grads), ids, mask, lossMask, adv]);
  };

  await iteration(0); // first use builds the models' RoPE tables (kept, owned by the model)
  const before = tf.memory();
  for (let i = 1; i <= 20; i++) await iteration(i);
  const after = tf.memory();
  expect(after.numTensors).toBe(before.numTensors);
  expect(after.numBytes).toBe(before.numBytes);

  actorOpt.dispose();
  criticOpt.dispose();
  actor.dispose();
  critic.dispose();
});
