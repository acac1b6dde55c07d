// The rollout batch size and gradient checkpointing change how a step runs, not what it computes: a tiny Bandit run
// with rollouts generated 3 at a time (splitting env groups across batches) logs exactly the metrics of one batch,
// and with gradient checkpointing on its losses and grad norms match to float rounding.
import { beforeAll, describe, expect, it } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../../../src/model/backend';
import { MemorySink } from '../../../src/metrics/sink';
import { Trainer } from '../../../src/starpo/trainer';
import type { RunConfigInput } from '../../../src/starpo/config';
import { tinyBanditConfig, tinyPolicy } from './trainer-fixture';

beforeAll(async () => {
  await initBackend('wasm');
});

async function metrics(over: RunConfigInput): Promise<Record<string, unknown>[]> {
  const sink = new MemorySink();
  const config = tinyBanditConfig({ ...over, trainer: { totalSteps: 2, testFreq: 0, valBeforeTrain: false, seed: 3 } });
  const trainer = await Trainer.create(config, { ...tinyPolicy(), sink, log: () => {} });
  const before = tf.memory().numTensors;
  await trainer.step();
  const afterFirst = tf.memory().numTensors;
  await trainer.step();
  expect(tf.memory().numTensors).toBe(afterFirst);
  expect(afterFirst).toBeGreaterThanOrEqual(before);
  trainer.dispose();
  return sink.rows.map((row) =>
    Object.fromEntries(Object.entries(row).filter(([k]) => !k.startsWith('timing_s/') && k !== 'perf/throughput')),
  );
}

describe('rollout batches and gradient checkpointing in the Trainer', () => {
  it('rollout.maxBatchSize 3 gives the metrics of one batch', async () => {
    const whole = await metrics({});
    const split = await metrics({ rollout: { maxBatchSize: 3 } });
    expect(split).toEqual(whole);
  });

  it('model.gradientCheckpointing gives the same losses and grad norms (to float rounding)', async () => {
    const plain = await metrics({});
    const ckpt = await metrics({ model: { gradientCheckpointing: true } });
    for (const [k, v] of Object.entries(plain[1])) {
      if (typeof v === 'number' && Number.isFinite(v)) expect(ckpt[1][k] as number, k).toBeCloseTo(v, 4);
      else expect(ckpt[1][k], k).toEqual(v);
    }
  });
});
