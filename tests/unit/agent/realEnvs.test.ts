// The agent protocol over the real environments of envs/ (Sokoban, FrozenLake, Bandit).
import { describe, expect, it } from 'vitest';
import { parseSokobanLevel, solveSokoban } from '../../../envs/index';
import { EnvGroupManager } from '../../../src/agent/envGroups';
import { buildPrompt } from '../../../src/agent/prompt';
import { envRegistry } from '../../../src/agent/registry';
import { runRollouts } from '../../../src/agent/rollout';

/** The grid of the last "State:" block of a RAGEN-style generation prompt. */
function lastState(prompt: string): string {
  const start = prompt.lastIndexOf('State:\n') + 'State:\n'.length;
  return prompt.slice(start, prompt.indexOf('\nYou have ', start));
}

describe('real envs: prompt info', () => {
  it('lists Sokoban and FrozenLake actions and budgets, and no action block for Bandit', () => {
    const registry = envRegistry({ responseLength: 500 });
    const sokoban = registry.promptInfo('SimpleSokoban');
    expect(sokoban).toMatchObject({
      actionNames: ['Up', 'Down', 'Left', 'Right'],
      maxActionsPerTraj: 10,
      maxTokens: 100,
    });
    const lake = registry.promptInfo('FrozenLake');
    expect(lake.actionNames).toEqual(['Left', 'Down', 'Right', 'Up']);
    const first = buildPrompt(lake, [{ state: 'P___', actionsLeft: 10 }]).messages[1].content;
    expect(first).toContain(
      '\nThe meaning of each symbol in the state is:\nP: player, _: empty, O: hole, G: goal, X: player in hole, √: player on goal\n',
    );
    expect(first).toContain(
      '\nYour available actions are:\nLeft, Down, Right, Up\nYou can make up to 10 actions, separated by the action separator " || "\n',
    );
    const bandit = registry.promptInfo('Bandit');
    expect(bandit).toMatchObject({
      instruction: '',
      gridVocab: null,
      actionNames: null,
      maxActionsPerTraj: 1,
      maxTokens: 500,
    });
  });
});

describe('real envs: the Coord tags through the agent protocol', () => {
  it("a CoordSokoban prompt carries the coordinate instruction and a grid_coord state; an env block's config reaches the instruction", async () => {
    const registry = envRegistry();
    const m = new EnvGroupManager(
      {
        mode: 'val',
        envGroups: 2,
        groupSize: 1,
        tags: [
          { tag: 'CoordSokoban', nGroups: 1 },
          { tag: 'CoordSokoban', nGroups: 1, config: { dimRoom: [7, 7] } },
        ],
      },
      registry,
    );
    const prompts: string[] = [];
    await runRollouts(
      m,
      async (batch) => {
        prompts.push(...batch);
        return batch.map(() => 'x</think><answer>Up</answer>');
      },
      { maxTurn: 1 },
    );
    expect(prompts[0]).toContain('bottom-right corner (5, 5)');
    expect(prompts[0]).toContain('Max response length: 120 words (tokens).');
    expect(lastState(prompts[0])).toMatch(
      /^Coordinates: \nBoard size: 6 rows x 6 cols \(zero-indexed\)\.\nTargets: \(\d, \d\)\n[\s\S]*\nGrid Map: \n#{6}\n/,
    );
    expect(prompts[1]).toContain('bottom-right corner (6, 6)');
    expect(lastState(prompts[1])).toContain('Board size: 7 rows x 7 cols');
    // The compact prompt of the tiny presets has a line for each Coord tag.
    const compact = buildPrompt(registry.promptInfo('CoordFrozenLake'), [{ state: 'x', actionsLeft: 10 }], {
      style: 'compact',
    });
    expect(compact.messages[0].content).toMatch(/reach the goal.*\(row, col\)/);
  });
});

describe('real envs: rollouts', () => {
  it('solves SimpleSokoban with a solver policy whenever the solution fits the 10-action budget', async () => {
    const m = new EnvGroupManager(
      { mode: 'val', envGroups: 6, groupSize: 1, tags: [{ tag: 'SimpleSokoban', nGroups: 6 }] },
      envRegistry(),
    );
    const optimal = new Map<number, number>();
    const result = await runRollouts(m, async (prompts) =>
      prompts.map((p) => {
        const plan = solveSokoban(parseSokobanLevel(lastState(p))) ?? [];
        return `plan of ${plan.length}</think><answer>${plan.slice(0, 5).join(' || ')}</answer>`;
      }),
    );
    for (const traj of result.trajectories) {
      const length = solveSokoban(parseSokobanLevel(traj.history[0].state))!.length;
      optimal.set(traj.envId, length);
      expect(traj.success).toBe(length <= 10);
      if (length <= 10) {
        expect(traj.status.numActions).toBe(length);
        expect(traj.turns).toHaveLength(Math.ceil(length / 5));
        expect(traj.totalReward).toBeCloseTo(11 - 0.1 * length, 9); // +1 box on target, +10 solved, −0.1 per step
      }
      expect(traj.penalty).toBe(0);
    }
    expect([...optimal.values()].some((n) => n <= 10)).toBe(true);
    expect(result.envMetrics['SimpleSokoban/action_is_valid']).toBe(1);
  });

  it('keeps FrozenLake within the action budget and gives a group one initial map', async () => {
    const m = new EnvGroupManager(
      { mode: 'train', envGroups: 2, groupSize: 4, tags: [{ tag: 'FrozenLake', nGroups: 2 }] },
      envRegistry(),
    );
    const result = await runRollouts(m, async (prompts) =>
      prompts.map(() => 'zigzag</think><answer>Right || Down || Right || Down</answer>'),
    );
    for (const traj of result.trajectories) {
      expect(traj.status.numActions).toBeLessThanOrEqual(10);
      expect(traj.turns.length).toBeLessThanOrEqual(3); // 4 + 4 + 2 actions exhaust the budget
      expect(traj.status.terminated).toBe(true);
      expect(traj.success).toBe(traj.status.terminated && !traj.status.truncated);
      expect(traj.history[0].state).toBe(result.trajectories[traj.groupId * 4].history[0].state);
    }
    expect(result.envMetrics['FrozenLake/action_is_valid']).toBe(1);
  });

  it('plays Bandit in one turn; v1 groups share the payoff draw', async () => {
    const m = new EnvGroupManager(
      { mode: 'train', envGroups: 8, groupSize: 4, tags: [{ tag: 'Bandit', nGroups: 8 }] },
      envRegistry(),
    );
    // Members 0 and 1 pick the high-risk arm (lower-case on purpose), 2 the low-risk arm, 3 an unknown name.
    const answers = ['dragon', 'Dragon', 'phoenix', 'unicorn'];
    const result = await runRollouts(
      m,
      async (prompts) => prompts.map((_, i) => `hmm</think><answer>${answers[i % 4]}</answer>`),
      { maxTurn: 1 },
    );
    expect(result.turnsPlayed).toBe(1);
    for (const traj of result.trajectories) {
      const member = traj.envId % 4;
      expect(traj.success).toBe(member < 2);
      if (member === 2) expect(traj.totalReward).toBeCloseTo(0.1, 12);
      if (member === 3) {
        expect(traj.penalty).toBeCloseTo(-0.1, 12);
        expect(traj.status.terminated).toBe(false);
      }
    }
    const group = (g: number) => result.trajectories.filter((t) => t.groupId === g);
    for (let g = 0; g < 8; g++) expect(group(g)[0].totalReward).toBe(group(g)[1].totalReward);
    expect(result.envMetrics['Bandit/pass@4']).toBe(1);

    // RAGEN v2's per-instance seeds: members of a group now draw their payoffs independently.
    const v2 = new EnvGroupManager(
      { mode: 'train', envGroups: 8, groupSize: 4, tags: [{ tag: 'Bandit', nGroups: 8, seedOffsetPerInstance: true }] },
      envRegistry(),
    );
    const v2Result = await runRollouts(v2, async (prompts) => prompts.map(() => 'hmm</think><answer>Dragon</answer>'), {
      maxTurn: 1,
    });
    const differs = [...Array(8).keys()].some(
      (g) => new Set(v2Result.trajectories.filter((t) => t.groupId === g).map((t) => t.totalReward)).size > 1,
    );
    expect(differs).toBe(true);
  });
});
