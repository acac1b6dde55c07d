// A custom board is played in the run's own agent format: the prompt the policy reads for a typed level is the prompt
// its training rollouts show for the same state (issue 35: a board built from the level alone lost the preset's
// grid_coord observation format, so the trained policy read text it had never seen).
import { describe, expect, it } from 'vitest';
import { EnvGroupManager, envRegistry, runRollouts, type GenerateFn, type TurnRecord } from '../../../src/agent/index';
import { splitObservation } from '../../../envs/index';
import {
  agentFormatFromConfig,
  customBoardBlock,
  customBoardEnvGroups,
  envGroupsConfig,
  trainedTags,
  type RunConfig,
} from '../../../src/starpo/config';
import { presetConfig } from '../../../src/starpo/presets';
import { checkCustomBoard } from '../../../src/ui/custom-level';

/** A scripted policy: the same answer to every prompt, and each prompt it was shown, in order. */
function scripted(answer: string): { generate: GenerateFn; prompts: string[] } {
  const prompts: string[] = [];
  const generate: GenerateFn = async (batch) => {
    prompts.push(...batch);
    return batch.map(() => answer);
  };
  return { generate, prompts };
}

/** Turns of the first trajectory of a training batch, with the Trainer's own training env groups (envGroupsConfig). */
async function trainingTurns(config: RunConfig, answer: string): Promise<TurnRecord[]> {
  const format = agentFormatFromConfig(config);
  const manager = new EnvGroupManager(
    envGroupsConfig(config, 'train'),
    envRegistry({ responseLength: format.responseLength }),
  );
  const result = await runRollouts(manager, scripted(answer).generate, {
    ...format,
    seed: config.agent.seedTrain ?? 0,
  });
  return result.trajectories[0].turns;
}

/** Turns of the same state typed as a custom board and played through the worker's path. */
async function customBoardTurns(config: RunConfig, tag: string, text: string, answer: string): Promise<TurnRecord[]> {
  const board = checkCustomBoard(tag, text);
  const format = agentFormatFromConfig(config);
  // As workers/trainer.worker.ts playEpisode builds it.
  const manager = new EnvGroupManager(
    customBoardEnvGroups(config, customBoardBlock(config, board.tag, board.envConfig)),
    envRegistry({ responseLength: format.responseLength }),
  );
  const result = await runRollouts(manager, scripted(answer).generate, { ...format, seed: 0 });
  return result.trajectories[0].turns;
}

describe('custom boards use the training prompt', () => {
  const cases = [
    {
      preset: 'sokoban-tiny',
      answer: '<think>The box is below me.</think><answer>Down || Right</answer>',
      deterministic: true,
    },
    {
      preset: 'frozenlake-noslip-tiny',
      answer: '<think>The goal is down.</think><answer>Down</answer>',
      deterministic: true,
    },
    {
      preset: 'frozenlake-tiny',
      answer: '<think>The goal is down.</think><answer>Down</answer>',
      deterministic: false,
    },
  ] as const;
  for (const { preset, answer, deterministic } of cases) {
    it(`${preset}: the prompt of a typed board equals the training prompt for the same state`, async () => {
      const config = presetConfig(preset);
      const [tag] = trainedTags(config);
      const training = await trainingTurns(config, answer);
      // The board as a teacher would type it: the grid part of the state the policy saw.
      const grid = splitObservation(training[0].state).grid;
      expect(grid, 'the preset shows a grid').not.toBeNull();
      const custom = await customBoardTurns(config, tag, grid!, answer);
      expect(custom[0].state).toBe(training[0].state);
      expect(custom[0].prompt).toBe(training[0].prompt);
      // Without slipping, the whole episode reads the same (a slippery lake's later moves depend on its seed).
      if (deterministic) expect(custom.map((t) => t.prompt)).toEqual(training.map((t) => t.prompt));
    });
  }

  it('refuses a board of an env the run never trained on, in plain words', () => {
    const config = presetConfig('bandit-tiny');
    expect(() => customBoardBlock(config, 'FrozenLake', { map: ['P_', '_G'] })).toThrow(
      "this run's policy was trained on Bandit, never on FrozenLake: it cannot read a FrozenLake board",
    );
  });
});
