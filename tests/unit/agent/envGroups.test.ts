import { describe, expect, it } from 'vitest';
import { EnvGroupManager, summarizeEnvMetrics } from '../../../src/agent/envGroups';
import type { EnvGroupsConfig, EnvTurnInput } from '../../../src/agent/envGroups';
import { CorridorEnv, corridorRegistry } from './fakeEnv';

function manager(overrides: Partial<EnvGroupsConfig> = {}) {
  const registry = corridorRegistry();
  const config: EnvGroupsConfig = {
    mode: 'train',
    envGroups: 2,
    groupSize: 3,
    tags: [{ tag: 'Corridor', nGroups: 2 }],
    ...overrides,
  };
  return { m: new EnvGroupManager(config, registry), registry };
}
function turn(envId: number, actions: string[]): EnvTurnInput {
  return {
    envId,
    actions,
    llmResponse: `<think>t</think><answer>${actions.join(' || ')}</answer>`,
    llmRawResponse: 'raw',
  };
}
const envOf = (m: EnvGroupManager, id: number) => m.entries[id].env as CorridorEnv;

describe('EnvGroupManager: construction', () => {
  it('builds envGroups x groupSize envs with contiguous tag blocks and group ids', () => {
    const { m } = manager({
      envGroups: 3,
      groupSize: 2,
      tags: [
        { tag: 'Corridor', nGroups: 1 },
        { tag: 'Corridor2', nGroups: 2 },
      ],
    });
    expect(m.entries.map((e) => [e.envId, e.groupId, e.tag])).toEqual([
      [0, 0, 'Corridor'],
      [1, 0, 'Corridor'],
      [2, 1, 'Corridor2'],
      [3, 1, 'Corridor2'],
      [4, 2, 'Corridor2'],
      [5, 2, 'Corridor2'],
    ]);
    expect(new Set(m.entries.map((e) => e.env)).size).toBe(6); // separate instances
  });

  it('rejects tag blocks that do not sum to envGroups, and bad sizes', () => {
    expect(() => manager({ envGroups: 3 })).toThrow(/sum to 2, but envGroups is 3/);
    expect(() => manager({ groupSize: 0 })).toThrow(/groupSize/);
    expect(() => manager({ tags: [], envGroups: 1 })).toThrow(/tags is empty/);
    expect(() => manager({ tags: [{ tag: 'Nope', nGroups: 2 }] })).toThrow(/Nope/);
  });

  it('applies per-block budget and token overrides to the prompt info', () => {
    const { m } = manager({ tags: [{ tag: 'Corridor', nGroups: 2, maxActionsPerTraj: 3, maxTokens: 7 }] });
    expect(m.entries[0].maxActionsPerTraj).toBe(3);
    expect(m.entries[0].info.maxTokens).toBe(7);
    expect(m.reset()[0].history[0].actionsLeft).toBe(3);
  });
});

describe('EnvGroupManager: seeding', () => {
  it('gives every member of a group the same seed and advances train seeds by envGroups per reset', () => {
    const { m } = manager({ envGroups: 3, groupSize: 2, tags: [{ tag: 'Corridor', nGroups: 3 }] });
    const seeds = () => m.allRollouts().map((r) => r.status.seed);
    m.reset();
    expect(seeds()).toEqual([10000, 10000, 10001, 10001, 10002, 10002]);
    m.reset();
    expect(seeds()).toEqual([10003, 10003, 10004, 10004, 10005, 10005]);
    expect(envOf(m, 1).resetSeeds).toEqual([10000, 10003]);
    // Same seed ⇒ same initial state within a group.
    const states = m.allRollouts().map((r) => r.history[0].state);
    expect(states[0]).toBe(states[1]);
  });

  it('uses a fixed validation set', () => {
    const { m } = manager({ mode: 'val', envGroups: 4, groupSize: 1, tags: [{ tag: 'Corridor', nGroups: 4 }] });
    m.reset();
    m.reset();
    expect(m.allRollouts().map((r) => r.status.seed)).toEqual([123, 124, 125, 126]);
  });

  it('honours an explicit base seed and a custom base', () => {
    const { m } = manager({ baseSeed: 500 });
    m.reset();
    expect(m.allRollouts()[0].status.seed).toBe(500);
    m.reset(42);
    expect(m.allRollouts().map((r) => r.status.seed)).toEqual([42, 42, 42, 43, 43, 43]);
  });

  it('draws a random base in [0, 1e6] when the train seed is null', () => {
    const { m } = manager({ baseSeed: null });
    m.reset();
    const s = m.allRollouts().map((r) => r.status.seed);
    expect(s[0]).toBeGreaterThanOrEqual(0);
    expect(s[0]).toBeLessThanOrEqual(1_000_000);
    expect(s).toEqual([s[0], s[0], s[0], s[0] + 1, s[0] + 1, s[0] + 1]);
  });

  it('offsets seeds per instance when asked (RAGEN v2 Bandit)', () => {
    const { m } = manager({ tags: [{ tag: 'Corridor', nGroups: 2, seedOffsetPerInstance: true }] });
    m.reset();
    expect(m.allRollouts().map((r) => r.status.seed)).toEqual([10000, 10001, 10002, 10004, 10005, 10006]);
  });
});

describe('EnvGroupManager: step rule', () => {
  it('maps names case-insensitively to the canonical spelling and records the turn', () => {
    const { m } = manager();
    m.reset(0); // group 0 seed 0: start cell 1
    m.step([turn(0, ['rIGHT', 'right'])]);
    expect(envOf(m, 0).received).toEqual(['Right', 'Right']);
    const r = m.allRollouts()[0];
    expect(r.history).toHaveLength(2);
    expect(r.history[0]).toMatchObject({
      state: 'OP___G',
      actionsLeft: 10,
      actions: ['Right', 'Right'],
      llmRawResponse: 'raw',
    });
    expect(r.history[0].reward).toBeCloseTo(-0.2, 12);
    expect(r.history[1]).toEqual({ state: 'O__P_G', actionsLeft: 8 });
    expect(r.penalty).toBe(0);
    expect(r.status.numActions).toBe(2);
  });

  it('drops unknown names and adds the format penalty once per turn', () => {
    const { m } = manager();
    m.reset(0);
    m.step([turn(0, ['Jump', 'Fly', 'Right', 'Swim']), turn(1, []), turn(2, ['Wait'])]);
    const [a, b, c] = m.allRollouts();
    expect(envOf(m, 0).received).toEqual(['Right']);
    expect(a.penalty).toBeCloseTo(-0.1, 12);
    expect(b.penalty).toBeCloseTo(-0.1, 12); // no action at all (e.g. a failed parse)
    expect(b.history[0]).toMatchObject({ actions: [], reward: 0, info: null });
    expect(c.penalty).toBe(0);
    m.step([turn(0, ['Fly']), turn(1, ['Wait'])]);
    expect(m.allRollouts()[0].penalty).toBeCloseTo(-0.2, 12);
    expect(m.allRollouts()[1].penalty).toBeCloseTo(-0.1, 12);
  });

  it('truncates to the remaining action budget without a penalty, then ends the episode as truncated', () => {
    const { m } = manager({ tags: [{ tag: 'Corridor', nGroups: 2, maxActionsPerTraj: 4 }] });
    m.reset(0);
    let active = m.step([turn(0, ['Wait', 'Wait', 'Wait'])]);
    expect(active.map((r) => r.envId)).toEqual([0]);
    active = m.step([turn(0, ['Wait', 'Wait', 'Wait'])]);
    expect(active).toEqual([]);
    const r = m.allRollouts()[0];
    expect(envOf(m, 0).received).toHaveLength(4);
    expect(r.status).toMatchObject({ numActions: 4, terminated: true, truncated: true });
    expect(r.penalty).toBe(0);
    expect(r.history[r.history.length - 1].actionsLeft).toBe(0);
    expect(() => m.step([turn(0, ['Wait'])])).toThrow(/already done/);
  });

  it('stops at done: success is terminated and not truncated; the rest of the turn is not executed', () => {
    const { m } = manager();
    m.reset(2); // group 0 seed 2: start cell 3, goal two steps right
    const active = m.step([turn(0, ['Right', 'Right', 'Right', 'Left'])]);
    expect(active).toEqual([]);
    const r = m.allRollouts()[0];
    expect(envOf(m, 0).received).toEqual(['Right', 'Right']);
    expect(r.status).toMatchObject({ numActions: 2, terminated: true, truncated: false });
    expect(r.status.rewards[0]).toBeCloseTo(0.8, 12);
    expect(r.history[0].info).toEqual({ success: true, actionIsValid: true, actionIsEffective: true });
  });

  it('marks a failed done (the hole) as truncated', () => {
    const { m } = manager();
    m.reset(0); // start cell 1, hole at 0
    m.step([turn(0, ['Left'])]);
    expect(m.allRollouts()[0].status).toMatchObject({ terminated: true, truncated: true });
  });

  it('returns only the envs still running and rejects bad inputs', () => {
    const { m } = manager();
    expect(() => m.step([])).toThrow(/reset/);
    m.reset(2);
    const active = m.step([turn(0, ['Right', 'Right']), turn(1, ['Wait']), turn(3, ['Wait'])]);
    expect(active.map((r) => r.envId)).toEqual([1, 3]);
    expect(m.activeRollouts().map((r) => r.envId)).toEqual([1, 2, 3, 4, 5]);
    expect(() => m.step([turn(9, ['Wait'])])).toThrow(/no env with id 9/);
    expect(() => m.step([turn(1, ['Wait']), turn(1, ['Wait'])])).toThrow(/twice/);
  });
});

describe('EnvGroupManager: rollout states and metrics', () => {
  it('computes success, num_actions, per-turn averages and pass@groupSize', () => {
    const { m } = manager();
    m.reset(2); // group 0 starts at cell 3, group 1 (seed 3) at cell 1
    // env 0: a bad turn, then success in one more turn.
    m.step([
      turn(0, ['Jump']),
      turn(1, ['Wait', 'Wait']),
      turn(2, ['Left']),
      turn(3, ['Right']),
      turn(4, []),
      turn(5, ['Left']),
    ]);
    m.step([turn(0, ['Right', 'Right']), turn(1, ['Right'])]);
    const states = m.rolloutStates();
    const s0 = states[0].metrics;
    expect(s0['Corridor/success']).toBe(1);
    expect(s0['Corridor/num_actions']).toBe(2);
    expect(s0['Corridor/action_is_valid']).toBe(0.5); // 1 of 2 turns executed an action
    expect(s0['Corridor/action_is_effective']).toBe(0.5);
    // env 1: 'Wait' then 'Right' → 2 turns, the last action was effective.
    expect(states[1].metrics['Corridor/action_is_effective']).toBe(0.5);
    expect(states[1].metrics['Corridor/action_is_valid']).toBe(1);
    expect(states[1].success).toBe(false);
    // pass@3: group 0 has a success, group 1 (envs 3–5: a step, nothing, the hole) none.
    expect(states.map((s) => s.metrics['Corridor/pass@3'])).toEqual([1, 1, 1, 0, 0, 0]);
    expect(states[0].totalReward).toBeCloseTo(0.8, 12);
    expect(states[0].score).toBeCloseTo(0.7, 12);
    expect(states[4].totalReward).toBe(0);
    expect(states[4].score).toBeCloseTo(-0.1, 12);
  });

  it('summarises metrics as batch means per tag, with non-zero means', () => {
    const { m } = manager({
      envGroups: 2,
      groupSize: 2,
      tags: [
        { tag: 'Corridor', nGroups: 1 },
        { tag: 'Corridor2', nGroups: 1 },
      ],
    });
    m.reset(2); // group 0 (Corridor) at cell 3, group 1 (Corridor2) at cell 1
    m.step([turn(0, ['Right', 'Right']), turn(1, ['Wait']), turn(2, ['Left']), turn(3, ['Wait'])]);
    const summary = summarizeEnvMetrics(m.rolloutStates(), 'train');
    expect(summary['train/Corridor/success']).toBe(0.5);
    expect(summary['train/Corridor/num_actions']).toBe(1.5);
    expect(summary['train/Corridor/non-zero/num_actions']).toBe(1.5);
    expect(summary['train/Corridor/pass@2']).toBe(1);
    expect(summary['train/Corridor2/success']).toBe(0);
    expect(summary['train/Corridor2/pass@2']).toBe(0);
    expect(summary['train/Corridor2/non-zero/success']).toBeUndefined();
    expect(summary['train/Corridor2/action_is_effective']).toBe(0.5);
  });
});
