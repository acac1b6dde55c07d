// The Trainer's helper (a second core): with it, a run computes exactly what it computes without it. Once with the
// helper in this thread (the logic), once in a real Node worker thread (src/node/helperThread.ts).
import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { spawnHelperThread } from '../../../src/node/helperThread';
import { initBackend } from '../../../src/model/backend';
import { MemorySink } from '../../../src/metrics/sink';
import type { RunConfig } from '../../../src/starpo/config';
import { createHelper, type HelperApi } from '../../../src/starpo/helper';
import { Trainer } from '../../../src/starpo/trainer';
import { tinyBanditConfig, tinyPolicy } from './trainer-fixture';

beforeAll(async () => {
  await initBackend('wasm');
});

/** Every metric except wall-clock ones. */
const withoutTiming = (row: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(row).filter(([k]) => !k.startsWith('timing_s/') && k !== 'perf/throughput'));

async function train(config: RunConfig, helper?: HelperApi) {
  const sink = new MemorySink();
  const trainer = await Trainer.create(config, { ...tinyPolicy(), sink, helper });
  while (!trainer.finished) await trainer.step();
  const weights: Record<string, Float32Array> = {};
  for (const [name, v] of Object.entries(trainer.actor.variables))
    weights[`actor.${name}`] = (await v.data()) as Float32Array;
  for (const [name, v] of Object.entries(trainer.critic?.variables ?? {}))
    weights[`critic.${name}`] = (await v.data()) as Float32Array;
  for (const [name, v] of Object.entries(trainer.actor.lora?.variables ?? {}))
    weights[`actor.${name}`] = (await v.data()) as Float32Array;
  trainer.dispose();
  return { rows: sink.rows.map(withoutTiming), weights };
}

function expectSameRun(a: Awaited<ReturnType<typeof train>>, b: Awaited<ReturnType<typeof train>>): void {
  expect(b.rows).toEqual(a.rows);
  expect(Object.keys(b.weights)).toEqual(Object.keys(a.weights));
  for (const [name, w] of Object.entries(a.weights)) expect(Array.from(b.weights[name]), name).toEqual(Array.from(w));
}

// StarPO-S (filter 0.5: one mini-batch) and a vanilla-like run (no filter, 2 mini-batches x 2 epochs, KL in reward).
const configs: Record<string, RunConfig> = {
  'StarPO-S': tinyBanditConfig({ trainer: { totalSteps: 2, testFreq: 2, seed: 4 } }),
  vanilla: tinyBanditConfig({
    trainer: { totalSteps: 2, testFreq: 0, valBeforeTrain: false, seed: 4 },
    filter: { strategy: 'ratio', ratio: 1 },
    actor: { ppoMiniBatchSize: 4, ppoEpochs: 2 },
    algorithm: { useKlInReward: true, klCoef: 0.001 },
  }),
  // LoRA: the helper generates with the actor's adapters folded in; the LoRA critic stays on this thread.
  LoRA: tinyBanditConfig({
    trainer: { totalSteps: 2, testFreq: 2, seed: 4 },
    lora: { enabled: true, rank: 4, alpha: 8 },
    actor: { lr: 1e-2 },
  }),
};

describe('Trainer with a helper', () => {
  for (const [name, config] of Object.entries(configs)) {
    it(`${name}: the same metrics and weights as without a helper (helper in this thread)`, async () => {
      const alone = await train(config);
      const helped = await train(config, createHelper());
      expect(alone.rows.at(-1)!['actor/grad_norm']).toBeGreaterThan(0);
      expectSameRun(alone, helped);
    });
  }

  it('in a Node worker thread: the same run, and tensors stay flat here', async () => {
    const config = configs['StarPO-S'];
    const alone = await train(config);
    const thread = spawnHelperThread();
    try {
      const before = tf.memory().numTensors;
      const helped = await train(config, thread.api);
      expect(tf.memory().numTensors).toBe(before);
      expectSameRun(alone, helped);
    } finally {
      await thread.terminate();
    }
  });
});
