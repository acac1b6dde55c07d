import { describe, expect, it } from 'vitest';
import { EnvGroupManager } from '../../../src/agent/envGroups';
import { envRegistry } from '../../../src/agent/registry';
import { runRollouts } from '../../../src/agent/rollout';
import { toRolloutRecord } from '../../../src/metrics/rolloutRecord';
import { framesOf, groupByStep, readTrajectory } from '../../../src/ui/trajectories';
import { parseGrid } from '../../../src/ui/boards';

describe('trajectories: the rollout viewer reads what the agent records', () => {
  it('reads real FrozenLake trajectories turn by turn, with drawable states and the final state', async () => {
    const m = new EnvGroupManager(
      { mode: 'train', envGroups: 1, groupSize: 2, tags: [{ tag: 'FrozenLake', nGroups: 1 }] },
      envRegistry(),
    );
    const result = await runRollouts(
      m,
      async (prompts) => prompts.map(() => 'go right</think><answer>Right || Down</answer>'),
      { maxTurn: 2 },
    );
    // The records the Trainer writes, through JSON, as rollouts.jsonl / structured clone would carry them.
    const records = JSON.parse(JSON.stringify(result.trajectories.map((t) => toRolloutRecord(t, 4, 'train'))));
    const { byStep, unreadable } = groupByStep(records);
    expect(unreadable).toEqual([]);
    const [t] = byStep.get(4)!;
    const source = result.trajectories[0];
    expect(t.tag).toBe('FrozenLake');
    expect(t.turns.length).toBe(source.turns.length);
    expect(t.turns[0].think).toBe(source.turns[0].think);
    expect(t.turns[0].answer).toBe(source.turns[0].answer);
    expect(t.turns[0].actions).toEqual(source.turns[0].executedActions);
    expect(t.success).toBe(source.success);
    expect(t.totalReward).toBe(source.totalReward);
    const frames = framesOf(t);
    expect(frames.length).toBe(t.turns.length + 1);
    expect(frames.at(-1)!.turn).toBeNull();
    for (const f of frames) expect(parseGrid('FrozenLake', f.state).rows).toBeGreaterThan(1);
  });

  it("reads the Trainer's sample-rollout records (reward, actions, split)", () => {
    const t = readTrajectory({
      step: 3,
      split: 'val',
      envId: 0,
      groupId: 2,
      tag: 'Bandit',
      seed: 1,
      success: true,
      reward: 1.5,
      score: 1.4,
      turns: [
        { turn: 1, state: 'named A and B\n', think: 't', answer: 'A', formatOk: true, actions: ['A'], reward: 1.5 },
      ],
    });
    expect(t).toMatchObject({
      step: 3,
      split: 'val',
      groupId: 2,
      success: true,
      totalReward: 1.5,
      score: 1.4,
      finalState: null,
    });
    expect(t.turns[0].actions).toEqual(['A']);
  });

  it('names the missing field of a record it cannot read', () => {
    expect(() => readTrajectory({ step: 1, tag: 'Bandit' })).toThrow(/field 'turns'/);
    expect(() => readTrajectory({ step: 1, tag: 'Bandit', turns: [{}] })).toThrow(/turn #1: field 'state'/);
    const { unreadable } = groupByStep([{ step: 2, turns: [] }]);
    expect(unreadable[0]).toMatch(/field 'tag'/);
  });
});
