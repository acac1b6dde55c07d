// agent.groundingBonus: a turn whose reasoning's claims about the state it saw are all true earns the bonus, on a
// real FrozenLake lake, through the same rollout loop training uses (the env groups' reasoningReward).
import { describe, expect, it } from 'vitest';
import { EnvGroupManager } from '../../../src/agent/envGroups';
import { envRegistry } from '../../../src/agent/registry';
import { runRollouts } from '../../../src/agent/rollout';
import { envGroupsConfig, parseRunConfig } from '../../../src/starpo/config';
import { groundingReward } from '../../../src/starpo/config/agent';

// Player at (0, 0), goal at (0, 1), a hole at (1, 1). "Left" walks into the edge: no move, no reward, not done.
const LAKE = { observationFormat: 'grid_coord', successRate: 1, map: ['PG__', '_O__', '____', '__O_'] };

async function firstTurnRewards(groundingBonus: number | undefined, thinks: string[], answer = 'Left') {
  const m = new EnvGroupManager(
    {
      mode: 'train',
      envGroups: 1,
      groupSize: thinks.length,
      tags: [{ tag: 'FrozenLake', nGroups: 1, config: LAKE, maxActionsPerTraj: 1 }],
      reasoningReward: groundingReward(groundingBonus ?? 0),
    },
    envRegistry(),
  );
  let i = 0;
  const result = await runRollouts(m, async (prompts) =>
    prompts.map(() => `${thinks[i++]}</think><answer>${answer}</answer>`),
  );
  return result.trajectories.map((t) => t.totalReward);
}

describe('agent.groundingBonus', () => {
  const thinks = [
    'I am at (0, 0) and the goal is at (0, 1).', //  every claim true
    'I am at (0, 0) and the goal is at (2, 3).', //  one claim false
    'I should think about this carefully.', //        no checkable claim
  ];

  it('adds the bonus to the reward of a turn whose claims are all true, and only then', async () => {
    expect(await firstTurnRewards(0.25, thinks)).toEqual([0.25, 0, 0]);
  });

  it('is off by default (RAGEN rewards only the env)', async () => {
    expect(await firstTurnRewards(undefined, thinks)).toEqual([0, 0, 0]);
  });

  it("adds to the env's own reward, and success stays the env's", async () => {
    const m = new EnvGroupManager(
      {
        mode: 'train',
        envGroups: 1,
        groupSize: 2,
        tags: [{ tag: 'FrozenLake', nGroups: 1, config: LAKE }],
        reasoningReward: groundingReward(0.5),
      },
      envRegistry(),
    );
    let i = 0;
    const result = await runRollouts(m, async (prompts) =>
      prompts.map(() => `${thinks[2 * i++]}</think><answer>Right</answer>`),
    );
    expect(result.trajectories.map((t) => [t.totalReward, t.success])).toEqual([
      [1.5, true],
      [1, true],
    ]);
  });

  it('is a config key that reaches the env groups, and a negative bonus is refused', () => {
    const reward = envGroupsConfig(parseRunConfig({ agent: { groundingBonus: 0.25 } }), 'train').reasoningReward;
    expect(reward).toBeTypeOf('function');
    expect(envGroupsConfig(parseRunConfig({}), 'train').reasoningReward).toBeUndefined();
    expect(() => parseRunConfig({ agent: { groundingBonus: -1 } })).toThrow(/groundingBonus/);
  });
});
