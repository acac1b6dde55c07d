import { describe, expect, it } from 'vitest';
import { EnvGroupManager } from '../../../src/agent/envGroups';
import { runRollouts } from '../../../src/agent/rollout';
import { CORRIDOR_LENGTH, corridorRegistry } from './fakeEnv';

function corridorManager(envGroups = 3, groupSize = 2, maxActionsPerTraj = 10) {
  return new EnvGroupManager(
    { mode: 'train', envGroups, groupSize, tags: [{ tag: 'Corridor', nGroups: envGroups, maxActionsPerTraj }] },
    corridorRegistry(),
  );
}
/** Start cell of a corridor env in group g when the base seed is `base` (CorridorEnv: 1 + seed % 3). */
const startCell = (base: number, g: number) => 1 + ((base + g) % 3);

describe('runRollouts over the fake corridor', () => {
  it('plays until every env is done, one Right per turn', async () => {
    const m = corridorManager();
    const seenPrompts: string[][] = [];
    const result = await runRollouts(m, async (prompts) => {
      seenPrompts.push(prompts);
      return prompts.map(() => 'go right</think><answer>Right</answer>');
    });
    // Base seed 10000: groups start at cells 1 + (10000 + g) % 3 and need (goal − start) moves.
    const moves = [0, 1, 2].map((g) => CORRIDOR_LENGTH - 1 - startCell(10000, g));
    expect(result.turnsPlayed).toBe(Math.max(...moves));
    expect(seenPrompts.map((p) => p.length)).toEqual(
      Array.from({ length: result.turnsPlayed }, (_, t) => 2 * moves.filter((n) => n > t).length),
    );
    for (const traj of result.trajectories) {
      const n = moves[traj.groupId];
      expect(traj.success).toBe(true);
      expect(traj.turns).toHaveLength(n);
      expect(traj.turns.every((t) => t.think === 'go right' && t.formatOk && t.executedActions[0] === 'Right')).toBe(
        true,
      );
      expect(traj.totalReward).toBeCloseTo(1 - 0.1 * n, 10);
      expect(traj.penalty).toBe(0);
      expect(traj.status.numActions).toBe(n);
    }
    expect(result.envMetrics['Corridor/success']).toBe(1);
    expect(result.envMetrics['Corridor/pass@2']).toBe(1);
  });

  it('sends generation prompts that end in the forced <think> and number the turns', async () => {
    const m = corridorManager(1, 1);
    const prompts: string[] = [];
    await runRollouts(m, async (batch) => {
      prompts.push(...batch);
      return batch.map(() => '</think><answer>Right</answer>');
    });
    prompts.forEach((p, i) => {
      expect(p.endsWith('<|im_start|>assistant\n<think>')).toBe(true);
      expect(p).toContain(`\nTurn ${i + 1}:\nState:\n`);
      expect(p).not.toContain(`\nTurn ${i + 2}:`);
    });
  });

  it('executes several actions per turn and stops at done', async () => {
    const m = corridorManager();
    const result = await runRollouts(m, async (prompts) =>
      prompts.map(() => 'all the way</think><answer>Right || Right || Right || Right || Left</answer>'),
    );
    expect(result.turnsPlayed).toBe(1);
    for (const traj of result.trajectories) {
      const n = CORRIDOR_LENGTH - 1 - startCell(10000, traj.groupId);
      expect(traj.turns[0].parsedActions).toHaveLength(5);
      expect(traj.turns[0].executedActions).toEqual(Array(n).fill('Right'));
      expect(traj.success).toBe(true);
    }
  });

  it('penalises malformed answers, leaves unfinished envs unsuccessful after maxTurn, and keeps the raw text', async () => {
    const m = corridorManager(1, 2);
    const result = await runRollouts(m, async (prompts) => prompts.map(() => 'I will just walk right'), { maxTurn: 3 });
    expect(result.turnsPlayed).toBe(3);
    for (const traj of result.trajectories) {
      expect(traj.turns).toHaveLength(3);
      expect(traj.penalty).toBeCloseTo(-0.3, 10);
      expect(traj.status.terminated).toBe(false);
      expect(traj.success).toBe(false);
      expect(traj.turns[0].response).toBe('<think>I will just walk right');
      expect(traj.training!.text).toContain('<|im_start|>assistant\n<think>I will just walk right<|im_end|>\n');
      expect(traj.training!.text).toContain('Reward:\n0\n');
    }
    expect(result.envMetrics['Corridor/action_is_valid']).toBe(0);
  });

  it('builds training text whose segments concatenate to it and whose assistant turns are the responses', async () => {
    const m = corridorManager(2, 2);
    let call = 0;
    const result = await runRollouts(
      m,
      async (prompts) => {
        call++;
        return prompts.map((_, i) =>
          i % 2 === 0 ? `step ${call}</think><answer>Right</answer> extra words` : `wait</think><answer>wait</answer>`,
        );
      },
      { maxTurn: 2 },
    );
    for (const traj of result.trajectories) {
      const training = traj.training!;
      expect(training.segments.map((s) => s.text).join('')).toBe(training.text);
      const assistant = training.segments.filter((s) => s.role === 'assistant');
      expect(assistant.map((s) => s.text)).toEqual(
        traj.turns.map((t) => `<|im_start|>assistant\n${t.response}<|im_end|>\n`),
      );
      expect(assistant.every((s) => s.trainable)).toBe(true);
      expect(training.text.endsWith(`${traj.turns[traj.turns.length - 1].response}<|im_end|>\n`)).toBe(true);
      expect(training.text).not.toContain('extra words');
    }
  });

  it('supports the compact prompt and a context window', async () => {
    const m = corridorManager(1, 1);
    const prompts: string[] = [];
    await runRollouts(
      m,
      async (batch) => {
        prompts.push(...batch);
        return batch.map(() => 'r</think><answer>Right</answer>');
      },
      { promptStyle: 'compact', maxContextWindow: 1 },
    );
    expect(prompts.length).toBeGreaterThan(1);
    for (const p of prompts) {
      expect(p.startsWith('<|im_start|>system\nwalk to the goal.<|im_end|>\n')).toBe(true);
      expect(p).toContain('\nturn 1\nstate:\n');
      expect(p).not.toContain('turn 2');
    }
  });

  it('rejects a generate function that returns the wrong number of outputs', async () => {
    const m = corridorManager();
    await expect(runRollouts(m, async () => ['only one'])).rejects.toThrow(/returned 1 outputs for 6 prompts/);
    await expect(runRollouts(m, async (p) => p.map(() => 7 as unknown as string))).rejects.toThrow(
      /output 0 is number/,
    );
  });

  it('advances train seeds between calls', async () => {
    const m = corridorManager(2, 1);
    const gen = async (prompts: string[]) => prompts.map(() => 'x</think><answer>Wait</answer>');
    const a = await runRollouts(m, gen, { maxTurn: 1 });
    const b = await runRollouts(m, gen, { maxTurn: 1 });
    expect(a.trajectories.map((t) => t.status.seed)).toEqual([10000, 10001]);
    expect(b.trajectories.map((t) => t.status.seed)).toEqual([10002, 10003]);
  });
});
