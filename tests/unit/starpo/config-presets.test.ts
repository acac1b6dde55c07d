import { describe, expect, it } from 'vitest';
import { EchoTrapDetector, type EchoTrapConfig } from '../../../src/metrics/echoTrap';
import {
  ConfigError,
  applyOverrides,
  assertRunnable,
  configDifferences,
  type RunConfig,
} from '../../../src/starpo/config';
import { EarlyStopper, type EarlyStopConfig } from '../../../src/starpo/earlyStop';
import { filterGroupsByConfig } from '../../../src/starpo/filter';
import {
  ECHO_TRAP_LESSON_SEEDS,
  PRESET_NAMES,
  listPresets,
  presetConfig,
  resolvePreset,
  tinyPresetNames,
} from '../../../src/starpo/presets';

const TINY_PRESETS = ['bandit-tiny', 'frozenlake-tiny', 'frozenlake-noslip-tiny', 'sokoban-tiny'];

function thrownMessage(f: () => unknown): string {
  try {
    f();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('expected a ConfigError, nothing was thrown');
}

/** Every config of every preset, as [label, config]. */
function allConfigs(): [string, RunConfig][] {
  return PRESET_NAMES.flatMap((name) =>
    resolvePreset(name).arms.map((arm): [string, RunConfig] => [`${name}/${arm.name}`, arm.config]),
  );
}

describe('the presets of issue #4', () => {
  it('are exactly bandit-tiny, frozenlake-tiny, frozenlake-noslip-tiny, sokoban-tiny, echo-trap, echo-trap-frozenlake and sokoban-qwen', () => {
    expect([...PRESET_NAMES].sort()).toEqual([
      'bandit-tiny',
      'echo-trap',
      'echo-trap-frozenlake',
      'frozenlake-noslip-tiny',
      'frozenlake-tiny',
      'sokoban-qwen',
      'sokoban-tiny',
    ]);
    expect(listPresets().map((p) => p.name)).toEqual(PRESET_NAMES);
    expect(listPresets().every((p) => p.summary.length > 20)).toBe(true);
  });

  it('all parse (resolvePreset validates every arm)', () => {
    expect(allConfigs()).toHaveLength(9);
  });

  it('reject an unknown name, listing the presets and suggesting the closest', () => {
    const msg = thrownMessage(() => resolvePreset('bandit-tin'));
    expect(msg).toContain("unknown preset 'bandit-tin' (did you mean 'bandit-tiny'?)");
    expect(msg).toContain(
      'presets: bandit-tiny, frozenlake-tiny, frozenlake-noslip-tiny, sokoban-tiny, echo-trap, echo-trap-frozenlake, sokoban-qwen',
    );
    expect(thrownMessage(() => resolvePreset('toString'))).toContain("unknown preset 'toString'");
  });

  it('return fresh objects each time', () => {
    const a = presetConfig('bandit-tiny');
    a.agent.trainEnvs[0].nGroups = 99;
    expect(presetConfig('bandit-tiny').agent.trainEnvs[0].nGroups).toBe(8);
  });

  it('are what the early stopper and the echo-trap detector run with, value for value (no defaults of their own)', () => {
    for (const [, c] of allConfigs()) {
      const early: EarlyStopConfig = c.earlyStop; // compile-time: assignable to the early stopper's config
      const echo: EchoTrapConfig = c.echoTrap; //    and to the echo-trap detector's
      expect(new EarlyStopper(early).state().config).toEqual(c.earlyStop);
      expect(new EchoTrapDetector(echo).toState().config).toEqual(c.echoTrap);
    }
  });
});

describe('tiny presets', () => {
  it('are the one-arm presets of a warm-started tiny model (not echo-trap, not sokoban-qwen)', () => {
    expect(tinyPresetNames()).toEqual(TINY_PRESETS);
  });

  it('use a tiny warm-started model with the compact prompt and StarPO-S', () => {
    for (const name of TINY_PRESETS) {
      const c = presetConfig(name);
      expect(c.model.pretrained, name).toBeNull();
      expect(c.model.path, name).toBeNull();
      expect(c.model.warmStart, name).toMatch(/^warmstart\//);
      expect(c.model.promptStyle, name).toBe('compact');
      expect(
        [c.filter.strategy, c.filter.ratio, c.actor.clipRatioHigh, c.algorithm.klCoef, c.actor.useKlLoss],
        name,
      ).toEqual(['ratio', 0.25, 0.28, 0, false]);
      // Short dialogues: at most RAGEN's 5 turns, or more only when each prompt shows the current turn alone.
      if (c.agent.maxContextWindow !== 1) expect(c.agent.maxTurn, name).toBeLessThanOrEqual(5);
      expect(c.agent.maxTurn, name).toBeLessThanOrEqual(10);
      expect(() => assertRunnable(c), name).not.toThrow();
    }
  });

  it('keep steps small enough for a CPU', () => {
    for (const name of TINY_PRESETS) {
      const c = presetConfig(name);
      expect(c.agent.envGroups * c.agent.groupSize, name).toBeLessThanOrEqual(64);
      expect(c.agent.valGroups * c.agent.valGroupSize, name).toBeLessThanOrEqual(64);
      expect(c.rollout.maxNewTokens, name).toBeLessThanOrEqual(128);
    }
  });

  it('bandit-tiny is single-turn Bandit, validated on both name pairs', () => {
    const c = presetConfig('bandit-tiny');
    expect([c.agent.maxTurn, c.agent.maxActionsPerTurn]).toEqual([1, 1]);
    expect(c.agent.trainEnvs.map((b) => b.tag)).toEqual(['Bandit']);
    expect(c.agent.valEnvs.map((b) => b.tag).sort()).toEqual(['Bandit', 'BanditTest']);
    expect(c.agent.groupSize).toBeGreaterThanOrEqual(4);
    expect(c.agent.groupSize).toBeLessThanOrEqual(8);
  });

  it('frozenlake-tiny and sokoban-tiny train and validate on their env', () => {
    expect(presetConfig('frozenlake-tiny').agent.trainEnvs.map((b) => b.tag)).toEqual(['FrozenLake']);
    expect(presetConfig('frozenlake-tiny').agent.valEnvs.map((b) => b.tag)).toEqual(['FrozenLake']);
    expect(presetConfig('sokoban-tiny').agent.trainEnvs.map((b) => b.tag)).toEqual(['SimpleSokoban']);
    expect(presetConfig('sokoban-tiny').agent.envGroups).toBeLessThan((8 * 16) / 4 + 1);
  });

  it('frozenlake-noslip-tiny is frozenlake-tiny on lakes that never slip, from the same warm start, for its own number of steps', () => {
    const slippery = presetConfig('frozenlake-tiny');
    const c = presetConfig('frozenlake-noslip-tiny');
    for (const block of [...c.agent.trainEnvs, ...c.agent.valEnvs]) {
      expect(block.tag).toBe('FrozenLake');
      expect(block.config).toEqual({ ...slippery.agent.trainEnvs[0].config, successRate: 1 });
    }
    expect(slippery.agent.trainEnvs[0].config?.successRate).toBeUndefined(); // the slippery one keeps the env's 1/3
    expect(c.model.warmStart).toBe(slippery.model.warmStart);
    expect(
      configDifferences(c, slippery)
        .map(([key]) => key)
        .sort(),
    ).toEqual(['agent.trainEnvs', 'agent.valEnvs', 'trainer.totalSteps']);
  });
});

describe('echo-trap', () => {
  const preset = resolvePreset('echo-trap');
  const starpo = presetConfig('echo-trap', 'starpo');
  const starpoS = presetConfig('echo-trap', 'starpo-s');

  it('has two arms, vanilla StarPO and StarPO-S', () => {
    expect(preset.arms.map((a) => a.name)).toEqual(['starpo', 'starpo-s']);
  });

  it('differs between arms only in the StarPO-S knobs (spec §4.5): same seeds, model, envs and schedule', () => {
    const differing = configDifferences(starpo, starpoS)
      .map(([key]) => key)
      .sort();
    expect(differing).toEqual([
      'actor.clipRatioHigh',
      'algorithm.klCoef',
      'algorithm.useKlInReward',
      'filter.includeZero',
      'filter.minScore',
      'filter.ratio',
      'filter.strategy',
      'filter.value',
    ]);
  });

  it('vanilla arm: no filter, KL 0.001 (k1) in the reward, symmetric clip 0.2, several mini-batches per rollout', () => {
    expect(starpo.filter.ratio).toBe(1);
    expect([starpo.algorithm.useKlInReward, starpo.algorithm.klCoef, starpo.algorithm.klEstimator]).toEqual([
      true,
      0.001,
      'kl',
    ]);
    expect([starpo.actor.clipRatioLow, starpo.actor.clipRatioHigh]).toEqual([0.2, 0.2]);
    expect((starpo.agent.envGroups * starpo.agent.groupSize) / starpo.actor.ppoMiniBatchSize).toBeGreaterThan(1);
  });

  it('is bandit-tiny with Dragon always paying, 4 env groups in mini-batches of 8, a 30x learning rate warmed up over 10 steps, 80 steps, the reward-variance warning and its own warm start', () => {
    const bandit = presetConfig('bandit-tiny');
    expect(
      configDifferences(bandit, starpo)
        .map(([key]) => key)
        .filter((k) => !k.startsWith('filter.') && !/clip|[kK]l/.test(k))
        .sort(),
    ).toEqual([
      'actor.lr',
      'actor.lrWarmupStepsRatio',
      'actor.ppoMicroBatchSize',
      'actor.ppoMiniBatchSize',
      'agent.envGroups',
      'agent.trainEnvs',
      'agent.valEnvs',
      'echoTrap.signals',
      'model.warmStart',
      'trainer.saveFreq',
      'trainer.seed',
      'trainer.totalSteps',
    ]);
    for (const arm of [starpo, starpoS]) {
      expect([arm.actor.lr, arm.actor.lrWarmupStepsRatio * arm.trainer.totalSteps, arm.trainer.totalSteps]).toEqual([
        3e-3, 10, 80,
      ]);
      // 32 trajectories in mini-batches of 8: vanilla makes 4 optimizer steps per rollout.
      expect([arm.agent.envGroups, arm.agent.groupSize, arm.actor.ppoMiniBatchSize]).toEqual([4, 8, 8]);
    }
    // The warm start the lesson was found with: bandit-tiny's recipe at 150 SFT steps (src/warmstart/warmstart.ts).
    expect([starpo.model.warmStart, starpoS.model.warmStart]).toEqual(['warmstart/echo-trap', 'warmstart/echo-trap']);
    // The payout of the high-risk arm changes everywhere, the number of training groups halves; validation stays bandit-tiny's.
    for (const arm of [starpo, starpoS]) {
      const blocks = [...arm.agent.trainEnvs, ...arm.agent.valEnvs];
      expect(blocks.map((b) => b.config)).toEqual(blocks.map(() => ({ hiArmHiScoreProb: 1 })));
      expect(arm.agent.trainEnvs.map((b) => [b.tag, b.nGroups])).toEqual([['Bandit', 4]]);
      expect(arm.agent.valEnvs.map((b) => [b.tag, b.nGroups])).toEqual(
        bandit.agent.valEnvs.map((b) => [b.tag, b.nGroups]),
      );
    }
  });

  it("StarPO-S arm: RAGEN-2's recommended filter (top_p 0.9 linear, include_zero=false) with a std floor of 0.36, no KL, clip 0.2 / 0.28", () => {
    expect([
      starpoS.filter.strategy,
      starpoS.filter.value,
      starpoS.filter.topPProbMode,
      starpoS.filter.includeZero,
      starpoS.filter.metric,
      starpoS.filter.minScore,
    ]).toEqual(['top_p', 0.9, 'linear', false, 'reward_variance', 0.36]);
    expect([starpoS.algorithm.klCoef, starpoS.actor.clipRatioLow, starpoS.actor.clipRatioHigh]).toEqual([0, 0.2, 0.28]);
  });

  it("names the live lesson's training seeds: four, the preset's own seed (the recording's) first, all distinct", () => {
    expect(ECHO_TRAP_LESSON_SEEDS).toHaveLength(4);
    expect(ECHO_TRAP_LESSON_SEEDS[0]).toBe(starpo.trainer.seed);
    expect(new Set(ECHO_TRAP_LESSON_SEEDS).size).toBe(4);
  });

  it('needs an arm name when asked for one config', () => {
    expect(thrownMessage(() => presetConfig('echo-trap'))).toContain('arms: starpo, starpo-s');
    expect(thrownMessage(() => presetConfig('echo-trap', 'starpos'))).toContain(
      "has no arm 'starpos' (did you mean 'starpo-s'?)",
    );
  });
});

describe('echo-trap-frozenlake (the mechanism lesson)', () => {
  const starpo = presetConfig('echo-trap-frozenlake', 'starpo');
  const starpoS = presetConfig('echo-trap-frozenlake', 'starpo-s');

  it("differs between arms exactly as echo-trap's arms do", () => {
    const keys = (a: RunConfig, b: RunConfig) =>
      configDifferences(a, b)
        .map(([key]) => key)
        .sort();
    expect(keys(starpo, starpoS)).toEqual(
      keys(presetConfig('echo-trap', 'starpo'), presetConfig('echo-trap', 'starpo-s')),
    );
    expect(
      configDifferences(starpo, presetConfig('echo-trap', 'starpo')).filter(([k]) => /filter|clip|[kK]l/.test(k)),
    ).toEqual([]);
  });

  it("StarPO-S's std floor keeps a group of 4 only when two of its rollouts disagree with the rest (echo-trap's floor would keep a lone deviant)", async () => {
    // Three lakes, 4 rollouts each: one success of 4 (std 0.50), two of 4 (0.58), all four (0).
    const rewards = [1, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 1];
    const kept = async (c: RunConfig) =>
      (
        await filterGroupsByConfig(c.filter, 3, 4, {
          rawRewards: rewards,
          lossTokens: () => [],
          entropyMeans: async () => [],
        })
      ).keptGroups;
    expect(await kept(starpoS)).toEqual([1]);
    expect(await kept(presetConfig('echo-trap', 'starpo-s'))).toEqual([0, 1]);
    expect(await kept(starpo)).toEqual([0, 1, 2]);
  });

  it('is echo-trap on 8 fixed no-slip lakes with frozenlake-tiny, measuring the MI, 200 steps at 2e-3 after a 10-step warm-up', () => {
    expect(
      configDifferences(presetConfig('echo-trap', 'starpo'), starpo)
        .map(([key]) => key)
        .sort(),
    ).toEqual([
      'actor.lr',
      'actor.lrWarmupStepsRatio',
      'agent.contextWindowMode',
      'agent.envGroups',
      'agent.groupSize',
      'agent.maxActionsPerTurn',
      'agent.maxContextWindow',
      'agent.maxTurn',
      'agent.trainEnvs',
      'agent.valEnvs',
      'collapse.enabled',
      'model.warmStart',
      'rollout.maxNewTokens',
      'trainer.seed',
      'trainer.totalSteps',
    ]);
    for (const arm of [starpo, starpoS]) {
      expect([
        arm.actor.lr,
        arm.actor.lrWarmupStepsRatio * arm.trainer.totalSteps,
        arm.trainer.totalSteps,
        arm.agent.maxTurn,
      ]).toEqual([2e-3, 10, 200, 2]);
      expect([arm.collapse.enabled, arm.collapse.firstTurn, arm.model.warmStart]).toEqual([
        true,
        true,
        'warmstart/frozenlake-tiny',
      ]);
      // 8 distinct lakes, one group each, every one without slipping and with its goal one move from the start.
      expect(arm.agent.trainEnvs.map((b) => [b.tag, b.nGroups, b.config?.successRate])).toEqual(
        Array(8).fill(['FrozenLake', 1, 1]),
      );
      const maps = arm.agent.trainEnvs.map((b) => b.config?.map as string[]);
      expect(new Set(maps.map((m) => m.join('/'))).size).toBe(8);
      for (const map of maps) {
        const find = (ch: string) => {
          const r = map.findIndex((row) => row.includes(ch));
          return [r, map[r].indexOf(ch)];
        };
        const [[pr, pc], [gr, gc]] = [find('P'), find('G')];
        expect(Math.abs(pr - gr) + Math.abs(pc - gc)).toBe(1);
      }
    }
  });
});

describe('sokoban-qwen', () => {
  const c = presetConfig('sokoban-qwen');

  it("is RAGEN's paper configuration (spec §5.1, §5.2)", () => {
    expect(c.model.pretrained).toBe('Qwen/Qwen2.5-0.5B-Instruct');
    expect(c.model.promptStyle).toBe('ragen');
    expect([
      c.agent.envGroups,
      c.agent.groupSize,
      c.agent.maxTurn,
      c.agent.maxActionsPerTurn,
      c.agent.maxActionsPerTraj,
    ]).toEqual([8, 16, 5, 5, 10]);
    expect(c.agent.trainEnvs).toEqual([{ tag: 'SimpleSokoban', nGroups: 8 }]);
    expect(c.rollout.maxNewTokens).toBe(400);
    expect([c.actor.lr, c.critic.lr]).toEqual([1e-6, 1e-5]);
    expect(c.algorithm.advEstimator).toBe('gae');
    expect(c.filter.ratio).toBe(0.25);
    expect([c.algorithm.useKlInReward, c.algorithm.klCoef, c.actor.useKlLoss]).toEqual([false, 0, false]);
    expect([c.actor.clipRatioLow, c.actor.clipRatioHigh]).toEqual([0.2, 0.28]);
    expect([c.agent.valGroups, c.rollout.valTemperature]).toEqual([256, 0.5]);
  });

  it('cannot run without a local model path, and can with --set model=PATH', () => {
    expect(thrownMessage(() => assertRunnable(c))).toContain("config key 'model.path' is required");
    const withPath = applyOverrides(c, ['model=/models/Qwen2.5-0.5B-Instruct']);
    expect(withPath.model.path).toBe('/models/Qwen2.5-0.5B-Instruct');
    expect(() => assertRunnable(withPath)).not.toThrow();
  });
});
