// Solver-written demonstrations for the warm start: valid per the env, imperfect as configured, varied reasoning,
// seeds disjoint from training and validation.
import { describe, expect, it } from 'vitest';
import { makeEnv } from '../../../envs/index';
import { CHAT_MARKERS, parseResponse } from '../../../src/agent/index';
import {
  DEMO_SEED_BASE,
  demonstrationStats,
  generateDemonstrations,
  type Demonstration,
  type DemonstrationConfig,
} from '../../../src/warmstart/demonstrations';
import {
  WARMSTART_PRESETS,
  WARMSTART_RECIPES,
  demonstrationsForRun,
  warmStartRunConfig,
} from '../../../src/warmstart/warmstart';

const SOKOBAN: DemonstrationConfig = {
  tag: 'SimpleSokoban',
  episodes: 60,
  maxTurn: 3,
  maxActionsPerTurn: 5,
  imperfectFraction: 0.25,
  actionsPerAnswer: [2, 5],
};
const LAKE: DemonstrationConfig = {
  tag: 'FrozenLake',
  episodes: 60,
  maxTurn: 5,
  maxActionsPerTurn: 5,
  imperfectFraction: 0.25,
  actionsPerAnswer: [1, 3],
};
const BANDIT: DemonstrationConfig = {
  tag: 'Bandit',
  episodes: 60,
  maxTurn: 1,
  maxActionsPerTurn: 1,
  imperfectFraction: 0.5,
};

/** Replays every executed action on a fresh env with the same seed and config; returns per-turn rewards and success. */
function replay(demo: Demonstration): { rewards: number[]; success: boolean } {
  const env = makeEnv(demo.tag, demo.envConfig);
  env.reset(demo.seed);
  let success = false;
  const rewards = demo.turns.map((turn) => {
    let sum = 0;
    for (const action of turn.executed) {
      const r = env.step(action);
      expect(r.info.actionIsValid).toBe(true);
      sum += r.reward;
      success = r.info.success;
    }
    return sum;
  });
  return { rewards, success };
}

describe('demonstrations: valid per the environment', () => {
  it.each([SOKOBAN, LAKE, BANDIT])('replaying the answers of $tag reproduces the rewards and the outcome', (config) => {
    const demos = generateDemonstrations(config);
    expect(demos).toHaveLength(config.episodes);
    for (const demo of demos) {
      const { rewards, success } = replay(demo);
      expect(rewards).toEqual(demo.turns.map((t) => t.reward));
      expect(success).toBe(demo.success);
      expect(demo.totalReward).toBeCloseTo(
        rewards.reduce((a, b) => a + b, 0),
        12,
      );
      // A demonstrator never earns a format penalty: every answer is well-formed with known action names.
      expect(demo.penalty).toBe(0);
      for (const turn of demo.turns) {
        expect(turn.executed).toEqual(turn.actions.slice(0, turn.executed.length));
        expect(turn.actions.length).toBeGreaterThanOrEqual(1);
        expect(turn.actions.length).toBeLessThanOrEqual(config.maxActionsPerTurn);
        expect(turn.kinds).toHaveLength(turn.actions.length);
      }
    }
  });

  it('renders each episode as the compact training text with exactly the responses trainable', () => {
    for (const demo of generateDemonstrations({ ...SOKOBAN, episodes: 10 })) {
      const assistant = demo.training.segments.filter((s) => s.role === 'assistant');
      expect(assistant.map((s) => s.text)).toEqual(
        demo.turns.map((t) => `${CHAT_MARKERS.imStart}assistant\n${t.response}${CHAT_MARKERS.imEnd}\n`),
      );
      expect(demo.training.segments.filter((s) => s.trainable)).toEqual(assistant);
      expect(demo.training.text).toBe(demo.training.segments.map((s) => s.text).join(''));
      // The first state shown is the env's initial state for the seed.
      expect(demo.training.text).toContain(makeEnv(demo.tag).reset(demo.seed));
      for (const turn of demo.turns) {
        const parsed = parseResponse(turn.response, { maxActionsPerTurn: SOKOBAN.maxActionsPerTurn });
        expect(parsed.formatOk).toBe(true);
        expect(parsed.actions).toEqual(turn.actions);
        expect(parsed.think).toBe(turn.think);
      }
    }
  });

  it('is deterministic given the config, and each episode is independent of the others', () => {
    const a = generateDemonstrations({ ...LAKE, episodes: 12 });
    const b = generateDemonstrations({ ...LAKE, episodes: 12 });
    expect(b.map((d) => d.training.text)).toEqual(a.map((d) => d.training.text));
    const later = generateDemonstrations({ ...LAKE, episodes: 4, firstSeed: DEMO_SEED_BASE + 8 });
    expect(later.map((d) => d.training.text)).toEqual(a.slice(8).map((d) => d.training.text));
  });
});

describe('demonstrations: training samples under a context window', () => {
  it('is the whole episode without a window', () => {
    for (const demo of generateDemonstrations({ ...LAKE, episodes: 4 })) expect(demo.samples).toEqual([demo.training]);
  });

  it('with a window of 1, is one sample per turn that shows only that turn and trains only its response', () => {
    const demos = generateDemonstrations({ ...LAKE, episodes: 12, maxContextWindow: 1 });
    expect(demos.some((d) => d.turns.length >= 3)).toBe(true);
    for (const demo of demos) {
      expect(demo.samples).toHaveLength(demo.turns.length);
      demo.samples.forEach((sample, t) => {
        const turn = demo.turns[t];
        // The state the turn answered, and no other turn's state or response.
        expect(sample.text).toContain(turn.state);
        expect(sample.text.split('state:').length - 1).toBe(1);
        expect(sample.messages.filter((m) => m.role === 'assistant').map((m) => m.content)).toEqual([turn.response]);
        const trained = sample.segments.filter((seg) => seg.trainable);
        expect(trained.map((seg) => seg.turn)).toEqual([t + 1]);
        expect(trained[0].text).toContain(turn.response);
      });
    }
  });

  it('with a window of 2, keeps the previous turn in view but trains each response once', () => {
    const demos = generateDemonstrations({ ...LAKE, episodes: 12, maxContextWindow: 2 });
    const demo = demos.find((d) => d.turns.length >= 3)!;
    const third = demo.samples[2];
    expect(third.messages.filter((m) => m.role === 'assistant').map((m) => m.content)).toEqual([
      demo.turns[1].response,
      demo.turns[2].response,
    ]);
    expect(third.segments.filter((seg) => seg.trainable).map((seg) => seg.turn)).toEqual([3]);
  });
});

describe('demonstrations: deliberately imperfect', () => {
  it('replaces about the configured fraction of actions', () => {
    for (const fraction of [0.1, 0.3]) {
      const stats = demonstrationStats(
        generateDemonstrations({ ...SOKOBAN, episodes: 200, imperfectFraction: fraction }),
      );
      // ~600+ counted actions: a binomial standard deviation below 0.02.
      expect(Math.abs(stats.imperfectFraction - fraction)).toBeLessThan(0.06);
    }
    expect(demonstrationStats(generateDemonstrations({ ...SOKOBAN, imperfectFraction: 0 })).imperfectFraction).toBe(0);
  });

  it('a perfect Sokoban demonstrator solves nearly every level; an imperfect one clearly fewer', () => {
    // RAGEN's generator leaves 98.8 % of SimpleSokoban levels solvable within 10 actions (spec §10.17).
    const perfect = demonstrationStats(generateDemonstrations({ ...SOKOBAN, episodes: 100, imperfectFraction: 0 }));
    const sloppy = demonstrationStats(generateDemonstrations({ ...SOKOBAN, episodes: 100, imperfectFraction: 0.4 }));
    expect(perfect.successRate).toBeGreaterThan(0.9);
    expect(sloppy.successRate).toBeLessThan(perfect.successRate - 0.15);
  });

  it('Bandit: picks the high-risk arm with probability 1 - imperfectFraction', () => {
    const half = demonstrationStats(generateDemonstrations({ ...BANDIT, episodes: 400 }));
    expect(Math.abs(half.successRate - 0.5)).toBeLessThan(0.08);
    expect(demonstrationStats(generateDemonstrations({ ...BANDIT, imperfectFraction: 0 })).successRate).toBe(1);
  });

  it('Bandit: alternative arm names are used for about the configured fraction of episodes', () => {
    const demos = generateDemonstrations({ ...BANDIT, episodes: 200, alternateArmPairFraction: 0.5 });
    const alternative = demos.filter((d) => d.envConfig?.hiArmName !== undefined && d.envConfig.hiArmName !== 'Dragon');
    expect(Math.abs(alternative.length / 200 - 0.5)).toBeLessThan(0.12);
    for (const d of alternative) {
      expect(['Trader', 'Librarian']).not.toContain(d.envConfig!.hiArmName); // BanditTest names stay unseen
      expect(d.turns[0].think).toContain(String(d.envConfig!.hiArmName));
    }
  });
});

describe('demonstrations: reasoning', () => {
  /** The reasoning with the state-specific parts removed: what is left is the template. */
  const template = (think: string) =>
    think
      .replace(/\d/g, '#')
      .replace(/\b(Up|Down|Left|Right|Phoenix|Dragon)\b/g, 'A')
      .replace(/\b(up|down|left|right)\b/g, 'd');

  it.each([SOKOBAN, LAKE, BANDIT])('$tag: many distinct texts from several templates', (config) => {
    const demos = generateDemonstrations({ ...config, episodes: 80 });
    const thinks = demos.flatMap((d) => d.turns.map((t) => t.think));
    const stats = demonstrationStats(demos);
    expect(stats.distinctThinkFraction).toBeGreaterThan(0.3);
    expect(new Set(thinks.map(template)).size).toBeGreaterThanOrEqual(5);
  });

  it('Sokoban: positions it names are where the player, the box and the target are', () => {
    let checked = 0;
    for (const demo of generateDemonstrations({ ...SOKOBAN, episodes: 80 })) {
      for (const turn of demo.turns) {
        const grid = turn.state.split('\n').map((row) => [...row]);
        const spots = [
          ...turn.think.matchAll(
            /(player is|box|target) at (?:row (\d) col (\d)|\((\d), (\d)\)|row (\d), column (\d))/g,
          ),
        ];
        for (const m of spots) {
          const [r, c] = [m[2] ?? m[4] ?? m[6], m[3] ?? m[5] ?? m[7]].map(Number);
          const expected = { 'player is': ['P', 'S'], box: ['X'], target: ['O', 'S'] }[m[1] as 'box'];
          expect(expected).toContain(grid[r][c]);
          checked++;
        }
      }
    }
    expect(checked).toBeGreaterThan(50);
  });

  it('Bandit: names both arms and says which one sounds risky', () => {
    for (const demo of generateDemonstrations(BANDIT)) {
      const think = demo.turns[0].think;
      expect(think).toContain('Phoenix');
      expect(think).toContain('Dragon');
      expect(think).toMatch(/risky|wild|bold|unpredictable|volatile|daring/);
    }
  });
});

describe('demonstrations: seeds and inputs', () => {
  it.each(WARMSTART_PRESETS)(
    '%s: demonstration seeds are disjoint from the training and validation seeds',
    (preset) => {
      const config = warmStartRunConfig(preset);
      const demos = demonstrationsForRun(config, { ...WARMSTART_RECIPES[preset], episodes: 20 });
      const { seedVal, valGroups, envGroups } = config.agent;
      const seedTrain = config.agent.seedTrain ?? 10000; // every tiny preset fixes it (null = random bases, see DEMO_SEED_BASE)
      const trainEnd = seedTrain + envGroups * (config.trainer.totalSteps + 1);
      for (const d of demos) {
        expect(d.seed).toBeGreaterThanOrEqual(DEMO_SEED_BASE);
        expect(d.seed >= seedVal && d.seed < seedVal + valGroups).toBe(false);
        expect(d.seed >= seedTrain && d.seed < trainEnd).toBe(false);
      }
      expect(new Set(demos.map((d) => d.seed)).size).toBe(demos.length);
    },
  );

  it('rejects bad settings with an error naming them', () => {
    expect(() => generateDemonstrations({ ...BANDIT, imperfectFraction: 1.5 })).toThrow(/imperfectFraction/);
    expect(() => generateDemonstrations({ ...SOKOBAN, actionsPerAnswer: [3, 2] })).toThrow(/actionsPerAnswer/);
    expect(() => generateDemonstrations({ ...SOKOBAN, episodes: 0 })).toThrow(/episodes/);
    expect(() => generateDemonstrations({ ...SOKOBAN, tag: 'Countdown' })).toThrow(/Countdown/);
  });
});
