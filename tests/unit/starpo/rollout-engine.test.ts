// rollout.engine 'continuous' changes how a step's rollouts are scheduled, not what they sample: a tiny Bandit run
// whose rollouts are played with continuous batching (3 slots for 8 dialogues, and a slot per dialogue) logs the
// metrics of the turn-by-turn run, on wasm, with the tensor count flat from step to step.
import { beforeAll, describe, expect, it, vi } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../../../src/model/backend';
import { MemorySink } from '../../../src/metrics/sink';
import { ContinuousEngine } from '../../../src/model/continuousBatching';
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
  await trainer.step();
  const afterFirst = tf.memory().numTensors;
  await trainer.step();
  expect(tf.memory().numTensors).toBe(afterFirst);
  trainer.dispose();
  return sink.rows.map((row) =>
    Object.fromEntries(Object.entries(row).filter(([k]) => !k.startsWith('timing_s/') && k !== 'perf/throughput')),
  );
}

describe("rollout.engine 'continuous' in the Trainer", () => {
  it('gives the metrics of the turn-by-turn rollouts, with fewer slots than dialogues or one each', async () => {
    const run = vi.spyOn(ContinuousEngine.prototype, 'run');
    const turns = await metrics({});
    expect(run).not.toHaveBeenCalled();
    expect(await metrics({ rollout: { engine: 'continuous', maxBatchSize: 3 } })).toEqual(turns);
    expect(run).toHaveBeenCalledTimes(2); // one run per step
    expect(await metrics({ rollout: { engine: 'continuous' } })).toEqual(turns);
    run.mockRestore();
  });
});
