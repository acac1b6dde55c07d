// RAGEN-2's single_turn context mode in the Trainer: every turn is its own training sample with its trajectory's
// score. On a one-turn env that is exactly the 'full' update; on a multi-turn env the update sees one sample per turn.
import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../../src/model/backend';
import { MemorySink } from '../../../src/metrics/sink';
import { Trainer } from '../../../src/starpo/trainer';
import type { RunConfig, RunConfigInput } from '../../../src/starpo/config';
import { tinyBanditConfig, tinyPolicy } from './trainer-fixture';

beforeAll(async () => {
  await initBackend('wasm');
});

async function run(config: RunConfig) {
  const sink = new MemorySink();
  const trainer = await Trainer.create(config, { ...tinyPolicy(), sink, log: () => {} });
  while (!trainer.finished) await trainer.step();
  const weights = Object.fromEntries(
    await Promise.all(
      Object.entries(trainer.actor.variables).map(async ([k, v]) => [k, await (v as tf.Variable).data()]),
    ),
  );
  trainer.dispose();
  const rows = sink.rows.map((r) =>
    Object.fromEntries(Object.entries(r).filter(([k]) => !k.startsWith('timing_s/') && k !== 'perf/throughput')),
  );
  return { rows, weights };
}

/** FrozenLake, 3 turns of 1 action, window 1: 2 groups x 4 rollouts, the filter keeps 1 group, mini-batches of 4. */
function lakeConfig(mode: 'full' | 'single_turn', extra: RunConfigInput = {}): RunConfig {
  const over: RunConfigInput = {
    ...extra,
    agent: {
      trainEnvs: [{ tag: 'FrozenLake', nGroups: 2 }],
      valEnvs: [{ tag: 'FrozenLake', nGroups: 2 }],
      maxTurn: 3,
      maxActionsPerTurn: 1,
      maxContextWindow: 1,
      contextWindowMode: mode,
    },
    trainer: { totalSteps: 1, testFreq: 0, saveFreq: 0 },
  };
  return tinyBanditConfig(over);
}

describe("Trainer: agent.contextWindowMode 'single_turn'", () => {
  it("on one-turn Bandit it is the 'full' update: the same metrics and weights", async () => {
    const full = await run(tinyBanditConfig({ trainer: { totalSteps: 2, testFreq: 0, saveFreq: 0 } }));
    const single = await run(
      tinyBanditConfig({
        agent: { contextWindowMode: 'single_turn' },
        trainer: { totalSteps: 2, testFreq: 0, saveFreq: 0 },
      }),
    );
    expect(single.rows).toEqual(full.rows);
    expect(single.weights).toEqual(full.weights);
  });

  it('on 3-turn FrozenLake it trains one sample per turn of the kept trajectories', async () => {
    const full = (await run(lakeConfig('full'))).rows[1];
    const single = (await run(lakeConfig('single_turn'))).rows[1];
    // The same rollout and the same kept group of 4 trajectories ...
    expect(single['train/batch_size']).toBe(4);
    expect(single['rollout/in_group_std']).toBe(full['rollout/in_group_std']);
    // ... but 4 x 3 turns = 12 samples: 3 mini-batches of 4, where 'full' (whose window-1 sequence trains only the
    // last turn) has one.
    expect(full['train/num_mini_batches']).toBe(1);
    expect(single['train/num_mini_batches']).toBe(3);
    for (const key of ['actor/pg_loss', 'actor/grad_norm', 'critic/vf_loss'])
      expect(Number.isFinite(single[key]), key).toBe(true);
  });

  it('with algorithm.stepAdvantage (GiGPO) each turn gets its own credit on top of the GRPO advantage', async () => {
    const grpo: RunConfigInput = { algorithm: { advEstimator: 'grpo', rewardNormalization: { method: 'mean_std' } } };
    const plain = (await run(lakeConfig('single_turn', grpo))).rows[1];
    const stepped = (
      await run(
        lakeConfig('single_turn', {
          algorithm: { ...grpo.algorithm, stepAdvantage: { weight: 1, gamma: 0.95, method: 'mean' } },
        }),
      )
    ).rows[1];
    // The first turns of a group all start from the same lake: at least those share an anchor state.
    expect(stepped['critic/step_adv/shared_turns']).toBeGreaterThanOrEqual(1 / 3);
    expect(stepped['critic/step_adv/abs_mean']).toBeGreaterThan(0); // here: some turns from one state did better
    expect(plain['critic/step_adv/shared_turns']).toBeUndefined();
    expect(stepped['rollout/in_group_std']).toBe(plain['rollout/in_group_std']);
    expect(stepped['train/num_mini_batches']).toBe(plain['train/num_mini_batches']);
    // Same rollout and samples, other advantages: another loss.
    expect(stepped['actor/pg_loss']).not.toBe(plain['actor/pg_loss']);
  });
});
