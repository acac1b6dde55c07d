// runRollouts with a policy that plays dialogues on their own (GenerateFn.continuous, continuous batching): each env
// steps as soon as its own turn ends, in whatever order the engine ends turns, and the result is the turn-by-turn
// rollout's, trajectory for trajectory.
import { describe, expect, it } from 'vitest';
import { EnvGroupManager } from '../../../src/agent/envGroups';
import { runRollouts, type ContinuousGenerate, type GenerateFn } from '../../../src/agent/rollout';
import { corridorRegistry } from './fakeEnv';

function corridorManager(envGroups = 3, groupSize = 2) {
  return new EnvGroupManager(
    { mode: 'train', envGroups, groupSize, tags: [{ tag: 'Corridor', nGroups: envGroups, maxActionsPerTraj: 10 }] },
    corridorRegistry(),
  );
}

/** A policy that depends only on the dialogue so far: env 1 and every third turn answer badly, the rest go right. */
function answer(prompt: string, key: number): string {
  const turn = (prompt.match(/<\|im_start\|>assistant/g) ?? []).length;
  if (key === 1 && turn === 2) return 'hmm</think><answer>Jump</answer>';
  return turn % 3 === 0 ? 'left</think><answer>Left</answer>' : 'go right</think><answer>Right</answer>';
}

const turnByTurn: GenerateFn = async (prompts, context) => prompts.map((p, i) => answer(p, context!.keys[i]));

/**
 * The same policy as an engine with `slots` rows: it ends turns in an order of its own (the row with the most
 * recently admitted dialogue first), and admits a waiting dialogue when one is over.
 */
function engine(slots: number, log: string[]): GenerateFn {
  const fn: GenerateFn = async () => {
    throw new Error('the continuous engine is used, not the turn-by-turn call');
  };
  const continuous: ContinuousGenerate = async (first, onTurnEnd, { maxTurn }) => {
    const waiting = [...first];
    const running: { key: number; prompt: string; turn: number }[] = [];
    while (waiting.length || running.length) {
      while (running.length < slots && waiting.length) running.push({ ...waiting.shift()!, turn: 1 });
      const row = running[running.length - 1];
      log.push(`${row.key}:${row.turn}`);
      expect(row.turn).toBeLessThanOrEqual(maxTurn);
      const next = onTurnEnd(row.key, answer(row.prompt, row.key));
      if (next === null) running.pop();
      else Object.assign(row, { prompt: next, turn: row.turn + 1 });
    }
  };
  fn.continuous = continuous;
  return fn;
}

describe('runRollouts with a continuous engine', () => {
  for (const slots of [2, 6]) {
    it(`${slots} slots for 6 envs: the turn-by-turn trajectories, each env stepped as its turn ends`, async () => {
      const options = { maxTurn: 4, seed: 100 };
      const expected = await runRollouts(corridorManager(), turnByTurn, options);
      const log: string[] = [];
      const got = await runRollouts(corridorManager(), engine(slots, log), options);
      expect(got.trajectories).toEqual(expected.trajectories);
      expect(got.envMetrics).toEqual(expected.envMetrics);
      expect(got.turnsPlayed).toBe(expected.turnsPlayed);
      // Envs really advanced on their own: some env played turn 2 before another played turn 1.
      const firstTurn = (k: number) => log.indexOf(`${k}:1`);
      expect(log.some((e) => e.endsWith(':2') && log.indexOf(e) < Math.max(...[0, 1, 2, 3, 4, 5].map(firstTurn)))).toBe(
        true,
      );
      const actions = new Set(got.trajectories.flatMap((t) => t.turns.map((turn) => turn.answer)));
      expect([...actions].sort()).toEqual(['Jump', 'Left', 'Right']);
      expect(got.turnsPlayed).toBeGreaterThan(2);
    });
  }

  it('an env ends after maxTurn turns, and a throw from the engine propagates', async () => {
    const log: string[] = [];
    const got = await runRollouts(corridorManager(1, 1), engine(1, log), { maxTurn: 2, seed: 100 });
    expect(got.trajectories[0].turns).toHaveLength(2);
    expect(log).toEqual(['0:1', '0:2']);

    const failing: GenerateFn = async () => [];
    failing.continuous = async () => {
      throw new Error('stopped');
    };
    await expect(runRollouts(corridorManager(), failing, { maxTurn: 2 })).rejects.toThrow('stopped');
  });

  it('a policy that leaves an env unplayed is an error', async () => {
    const lazy: GenerateFn = async () => [];
    lazy.continuous = async () => {};
    await expect(runRollouts(corridorManager(), lazy, { maxTurn: 2 })).rejects.toThrow(/unplayed/);
  });
});
