import { describe, expect, it } from 'vitest';
import {
  ConfigError,
  applyOverrides,
  assertRunnable,
  configNotes,
  configWarnings,
  defaultRunConfig,
  didYouMean,
  envBlocks,
  loadConfigText,
  parseRunConfig,
  type RunConfig,
} from '../../../src/starpo/config';

/** The ConfigError thrown by f (fails the test if none is thrown). */
function configError(f: () => unknown): ConfigError {
  try {
    f();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error('expected a ConfigError, nothing was thrown');
}

describe('defaultRunConfig: RAGEN v1 base.yaml + veRL defaults (spec §5.1)', () => {
  const c = defaultRunConfig();

  it('has the batch, seeds and agent limits of §5.1', () => {
    expect([c.agent.envGroups, c.agent.groupSize]).toEqual([8, 16]);
    expect([c.agent.valGroups, c.agent.valGroupSize]).toEqual([256, 1]);
    expect([c.agent.seedTrain, c.agent.seedVal]).toEqual([10000, 123]);
    expect([c.agent.maxTurn, c.agent.maxActionsPerTurn, c.agent.actionSep]).toEqual([5, 5, '||']);
    expect(c.agent.formatPenalty).toBe(-0.1);
    expect(c.agent.maxContextWindow).toBe(-1);
    expect(c.agent.trainEnvs).toEqual([{ tag: 'SimpleSokoban', nGroups: 8 }]);
    expect(c.agent.valEnvs).toEqual([{ tag: 'SimpleSokoban', nGroups: 256 }]);
    expect(c.model.pretrained).toBe('Qwen/Qwen2.5-0.5B-Instruct');
    expect(c.model.enableThink).toBe(true);
  });

  it('has the rollout settings of §5.1', () => {
    expect([c.rollout.temperature, c.rollout.topP, c.rollout.topK, c.rollout.maxNewTokens]).toEqual([
      1.0, 1.0, -1, 400,
    ]);
    expect([c.rollout.valTemperature, c.rollout.valDoSample]).toEqual([0.5, true]);
    expect([c.filter.strategy, c.filter.ratio, c.filter.type]).toEqual(['ratio', 0.25, 'std']);
  });

  it('has the loss and optimiser settings of §5.1 (StarPO-S: no KL, clip 0.2 / 0.28)', () => {
    expect([c.actor.clipRatioLow, c.actor.clipRatioHigh, c.actor.clipRatioC]).toEqual([0.2, 0.28, 3.0]);
    expect(c.actor.entropyCoeff).toBe(0.001);
    expect([c.actor.useKlLoss, c.actor.klLossCoef, c.actor.klLossType]).toEqual([false, 0, 'kl']);
    expect(c.actor.lossAggMode).toBe('token-mean');
    expect([c.actor.gradClip, c.critic.gradClip, c.critic.cliprangeValue]).toEqual([1.0, 1.0, 0.5]);
    expect([c.actor.lr, c.critic.lr]).toEqual([1e-6, 1e-5]);
    expect(c.actor.betas).toEqual([0.9, 0.999]);
    expect(c.actor.weightDecay).toBe(0.01);
    expect([c.actor.ppoMiniBatchSize, c.actor.ppoMicroBatchSize, c.actor.ppoEpochs]).toEqual([32, 1, 1]);
    expect([c.algorithm.advEstimator, c.algorithm.gamma, c.algorithm.lambda]).toEqual(['gae', 1.0, 1.0]);
    expect([c.algorithm.useKlInReward, c.algorithm.klCoef, c.algorithm.klEstimator]).toEqual([false, 0, 'kl']);
    expect(c.algorithm.rewardNormalization).toEqual({ grouping: 'state', method: 'identity' });
    expect(c.algorithm.responseMaskOnly).toBe(true);
    expect(c.algorithm.grpoLengthWeight).toBe(false);
  });

  it('has the trainer settings of §5.1', () => {
    expect([c.trainer.totalSteps, c.trainer.testFreq, c.trainer.valBeforeTrain]).toEqual([200, 10, true]);
  });

  it('is what an empty config parses to, and parses unchanged', () => {
    expect(parseRunConfig({})).toEqual(defaultRunConfig());
    expect(parseRunConfig(undefined)).toEqual(defaultRunConfig());
    expect(parseRunConfig(defaultRunConfig())).toEqual(defaultRunConfig());
  });

  it('returns a fresh object each call', () => {
    const a = defaultRunConfig();
    a.agent.trainEnvs[0].nGroups = 1;
    a.actor.betas[0] = 0;
    expect(defaultRunConfig().agent.trainEnvs[0].nGroups).toBe(8);
    expect(defaultRunConfig().actor.betas[0]).toBe(0.9);
  });
});

describe('parseRunConfig: partial configs over the defaults', () => {
  it('merges nested sections key by key and replaces lists', () => {
    const c = parseRunConfig({ actor: { lr: 3e-5 }, agent: { trainEnvs: [{ tag: 'FrozenLake', nGroups: 8 }] } });
    expect(c.actor.lr).toBe(3e-5);
    expect(c.actor.clipRatioHigh).toBe(0.28);
    expect(c.agent.trainEnvs).toEqual([{ tag: 'FrozenLake', nGroups: 8 }]);
    expect(c.agent.groupSize).toBe(16);
  });

  it('refuses a __proto__ key anywhere, also inside an env config or --set, where it used to vanish silently', () => {
    expect(configError(() => loadConfigText('actor:\n  __proto__: {lr: 5}\n', 'yaml')).message).toContain(
      "config key 'actor.__proto__' is not allowed",
    );
    const env =
      'agent:\n  trainEnvs:\n    - tag: SimpleSokoban\n      nGroups: 8\n      config:\n        __proto__: {numBoxes: 2}\n';
    expect(configError(() => loadConfigText(env, 'yaml')).message).toContain(
      "config key 'agent.trainEnvs[0].config.__proto__' is not allowed",
    );
    const json =
      '{"agent": {"trainEnvs": [{"tag": "SimpleSokoban", "nGroups": 8, "config": {"__proto__": {"numBoxes": 2}}}]}}';
    expect(configError(() => loadConfigText(json, 'json', 'run.json')).message).toBe(
      "invalid run config (run.json): config key 'agent.trainEnvs[0].config.__proto__' is not allowed",
    );
    expect(
      configError(() => applyOverrides(defaultRunConfig(), ['agent.trainEnvs.0.config.__proto__=1'])).message,
    ).toMatch(/__proto__.* is not allowed/);
    expect(configError(() => applyOverrides(defaultRunConfig(), ['actor={__proto__: {lr: 3}}'])).message).toMatch(
      /__proto__' is not allowed/,
    );
  });

  it('reads a YAML file with an unknown tag or a syntax error as one ConfigError line naming the file', () => {
    expect(configError(() => loadConfigText('actor: !fast 1e-3\n', 'yaml', 'run.yaml')).message).toMatch(
      /^could not read the run config run\.yaml as YAML: .*!fast/,
    );
    const broken = configError(() => loadConfigText('actor:\n  lr: [1, 2\n', 'yaml', 'run.yaml')).message;
    expect(broken).toMatch(/^could not read the run config run\.yaml as YAML: /);
    expect(broken.split('\n')).toHaveLength(1);
  });

  it('refuses absurdly deep nesting with one line naming the source, not a stack overflow', () => {
    const deep = '{"actor": {"x": ' + '{"a":'.repeat(5000) + '1' + '}'.repeat(5000) + '}}';
    const err = configError(() => loadConfigText(deep, 'json', 'deep.json'));
    expect(err.message).toMatch(/^invalid run config \(deep\.json\): nested deeper than 32 levels at 'actor\.x\.a\.a/);
    expect(err.message.split('\n')).toHaveLength(1);
  });

  it('refuses a sampling temperature too small to divide float32 logits by (1e-45 used to be accepted)', () => {
    expect(configError(() => parseRunConfig({ rollout: { temperature: 1e-45 } })).message).toContain(
      "config key 'rollout.temperature': must be >= 0.001",
    );
    expect(configError(() => parseRunConfig({ rollout: { valTemperature: 0 } })).message).toContain(
      "config key 'rollout.valTemperature': must be >= 0.001",
    );
    expect(parseRunConfig({ rollout: { temperature: 0.001 } }).rollout.temperature).toBe(0.001);
  });

  it('does not modify its input', () => {
    const input = { actor: { lr: 3e-5 } };
    parseRunConfig(input);
    expect(input).toEqual({ actor: { lr: 3e-5 } });
  });

  it('rejects a non-object config', () => {
    expect(configError(() => parseRunConfig([1, 2])).message).toMatch(/expected an object of sections, got an array/);
    expect(configError(() => parseRunConfig('actor')).message).toMatch(/got string "actor"/);
  });
});

describe('unknown keys', () => {
  it('names the full key path and suggests the closest key', () => {
    const err = configError(() => parseRunConfig({ actor: { clipRatioHihg: 0.3 } }));
    expect(err.message).toContain("unknown config key 'actor.clipRatioHihg' (did you mean 'clipRatioHigh'?)");
  });

  it("suggests the camelCase key for RAGEN's snake_case spelling", () => {
    const err = configError(() => parseRunConfig({ actor: { clip_ratio_high: 0.3 } }));
    expect(err.message).toContain("(did you mean 'clipRatioHigh'?)");
  });

  it('lists the valid keys when nothing is close', () => {
    const err = configError(() => parseRunConfig({ trainer: { wandbProject: 'x' } }));
    expect(err.message).toContain("unknown config key 'trainer.wandbProject'");
    expect(err.message).toContain("valid keys under 'trainer': totalSteps, testFreq");
  });

  it('catches unknown top-level sections and keys inside env blocks', () => {
    expect(configError(() => parseRunConfig({ actr: {} })).message).toContain(
      "unknown config key 'actr' (did you mean 'actor'?)",
    );
    const err = configError(() =>
      parseRunConfig({ agent: { trainEnvs: [{ tag: 'SimpleSokoban', nGroups: 8, nGroup: 8 }] } }),
    );
    expect(err.message).toContain("unknown config key 'agent.trainEnvs[0].nGroup' (did you mean 'nGroups'?)");
  });
});

describe('wrongly typed values', () => {
  it('names the key, the expected type and the value given', () => {
    const err = configError(() => parseRunConfig({ actor: { clipRatioHigh: 'x' } }));
    expect(err.message).toContain(`config key 'actor.clipRatioHigh': expected number, got string "x"`);
  });

  it('requires integers where counts are meant', () => {
    expect(configError(() => parseRunConfig({ agent: { groupSize: 2.5 } })).message).toContain(
      "config key 'agent.groupSize': expected an integer, got number 2.5",
    );
  });

  it('lists the choices of an enum and suggests one', () => {
    const err = configError(() => parseRunConfig({ actor: { lossAggMode: 'token_mean' } }));
    expect(err.message).toContain("config key 'actor.lossAggMode': expected one of 'token-mean'");
    expect(err.message).toContain("(did you mean 'token-mean'?)");
  });

  it('rejects null where it is not allowed, and says where it is', () => {
    expect(configError(() => parseRunConfig({ rollout: { temperature: null } })).message).toContain(
      "config key 'rollout.temperature': expected number, got null",
    );
    expect(configError(() => parseRunConfig({ model: { path: 5 } })).message).toContain(
      "config key 'model.path': expected string or null, got number 5",
    );
  });

  it('checks ranges, tuples, missing keys in list items and whole sections', () => {
    expect(configError(() => parseRunConfig({ filter: { ratio: 1.5 } })).message).toContain(
      "config key 'filter.ratio': must be <= 1, got number 1.5",
    );
    expect(configError(() => parseRunConfig({ actor: { clipRatioC: 1 } })).message).toContain(
      "config key 'actor.clipRatioC': must be > 1",
    );
    expect(configError(() => parseRunConfig({ agent: { formatPenalty: 0.1 } })).message).toContain(
      "'agent.formatPenalty': must be <= 0",
    );
    expect(configError(() => parseRunConfig({ actor: { betas: [0.9] } })).message).toContain(
      "config key 'actor.betas'",
    );
    expect(configError(() => parseRunConfig({ rollout: { topK: 0 } })).message).toContain(
      "'rollout.topK': must be -1 (off) or at least 1",
    );
    expect(configError(() => parseRunConfig({ agent: { trainEnvs: [{ tag: 'Bandit' }] } })).message).toContain(
      "config key 'agent.trainEnvs[0].nGroups': expected an integer, got nothing (the key is missing)",
    );
    expect(configError(() => parseRunConfig({ actor: 5 })).message).toContain(
      "config key 'actor': expected an object, got number 5",
    );
  });

  it('reports every problem at once, one line each', () => {
    const err = configError(() =>
      parseRunConfig({ actor: { lr: 'fast', clipRatioHihg: 0.3 }, trainer: { backend: 'webgl' } }),
    );
    expect(err.problems).toHaveLength(3);
    expect(err.message).toContain('3 problems');
    expect(err.message).toContain("'trainer.backend': expected one of 'auto', 'webgpu', 'wasm', 'cpu'");
  });

  it('quotes the source in the message', () => {
    expect(configError(() => parseRunConfig({ actor: { lr: -1 } }, 'runs/a.yaml')).message).toMatch(
      /^invalid run config \(runs\/a\.yaml\): /,
    );
  });
});

describe('cross-field rules', () => {
  it('requires known env tags, with a suggestion', () => {
    const err = configError(() => parseRunConfig({ agent: { trainEnvs: [{ tag: 'SimpleSokobn', nGroups: 8 }] } }));
    expect(err.message).toContain(
      "config key 'agent.trainEnvs[0].tag': unknown env tag 'SimpleSokobn' (did you mean 'SimpleSokoban'?)",
    );
  });

  it("passes each block's env config through the environment's own checks", () => {
    const err = configError(() =>
      parseRunConfig({ agent: { valEnvs: [{ tag: 'FrozenLake', nGroups: 256, config: { sizee: 4 } }] } }),
    );
    expect(err.message).toContain("config key 'agent.valEnvs[0].config': env FrozenLake rejects this config");
    expect(err.message).toContain('sizee');
    const ok = parseRunConfig({
      agent: { valEnvs: [{ tag: 'FrozenLake', nGroups: 256, config: { size: 4, p: 0.9 } }] },
    });
    expect(ok.agent.valEnvs[0].config).toEqual({ size: 4, p: 0.9 });
  });

  it('refuses, before any work, an env config the generator cannot satisfy or a level that cannot be solved', () => {
    // These used to pass and then crash at the first reset of the run.
    const boxes = configError(() =>
      parseRunConfig({ agent: { trainEnvs: [{ tag: 'SimpleSokoban', nGroups: 8, config: { numBoxes: 7 } }] } }),
    );
    expect(boxes.message).toContain(
      "config key 'agent.trainEnvs[0].config': env SimpleSokoban rejects this config: Sokoban: no level for a 6x6 room with 7 boxes",
    );
    const room = configError(() =>
      parseRunConfig({ agent: { valEnvs: [{ tag: 'SimpleSokoban', nGroups: 256, config: { dimRoom: [500, 500] } }] } }),
    );
    expect(room.message).toContain("config key 'agent.valEnvs[0].config'");
    expect(room.message).toContain('two integers from 3 to 20');
    const level = configError(() =>
      parseRunConfig({
        agent: { trainEnvs: [{ tag: 'SimpleSokoban', nGroups: 8, config: { level: '#####\n#P_X#\n#__O#\n#####' } }] },
      }),
    );
    expect(level.message).toContain('the level cannot be solved');
  });

  it('requires the nGroups of each split to sum to its group count', () => {
    const train = configError(() =>
      parseRunConfig({
        agent: {
          trainEnvs: [
            { tag: 'Bandit', nGroups: 4 },
            { tag: 'BanditTest', nGroups: 2 },
          ],
        },
      }),
    );
    expect(train.message).toContain('the nGroups of trainEnvs sum to 6, but agent.envGroups is 8');
    const val = configError(() => parseRunConfig({ agent: { valGroups: 100 } }));
    expect(val.message).toContain('the nGroups of valEnvs sum to 256, but agent.valGroups is 100');
    const split = parseRunConfig({
      agent: {
        trainEnvs: [
          { tag: 'SimpleSokoban', nGroups: 6 },
          { tag: 'FrozenLake', nGroups: 2 },
        ],
      },
    });
    expect(split.agent.trainEnvs).toHaveLength(2);
  });

  it("applies RAGEN's filter check: at least one kept group that fills a mini-batch", () => {
    expect(configError(() => parseRunConfig({ filter: { ratio: 0.1 } })).message).toMatch(
      /'filter\.ratio': .*keeps no group/,
    );
    // 8 x 16 x 0.125 = 16 < 32
    expect(configError(() => parseRunConfig({ filter: { ratio: 0.125 } })).message).toMatch(
      /'filter\.ratio': .*fewer than the mini-batch size 32/,
    );
    expect(parseRunConfig({ filter: { ratio: 0.125 }, actor: { ppoMiniBatchSize: 16 } }).filter.ratio).toBe(0.125);
  });

  it('requires the micro-batch to divide the mini-batch', () => {
    expect(configError(() => parseRunConfig({ actor: { ppoMicroBatchSize: 5 } })).message).toContain(
      "'actor.ppoMicroBatchSize': ppoMicroBatchSize 5 must divide ppoMiniBatchSize 32",
    );
    expect(parseRunConfig({ actor: { ppoMicroBatchSize: 4 } }).actor.ppoMicroBatchSize).toBe(4);
  });

  it('checks the v2 filter value against its strategy', () => {
    expect(configError(() => parseRunConfig({ filter: { strategy: 'top_k_abs', value: 2.5 } })).message).toContain(
      "'filter.value': top_k_abs",
    );
    expect(configError(() => parseRunConfig({ filter: { strategy: 'top_k', value: 2 } })).message).toContain(
      "'filter.value': top_k",
    );
    expect(parseRunConfig({ filter: { strategy: 'top_p', value: 0.9, includeZero: false } }).filter.strategy).toBe(
      'top_p',
    );
    expect(
      configError(() => parseRunConfig({ filter: { strategy: 'top_p' }, actor: { ppoMiniBatchSize: 256 } })).message,
    ).toContain('exceeds the 128 trajectories');
  });

  it('refuses GRPO on raw rewards (spec §10.5) and GRPO groups of one', () => {
    expect(configError(() => parseRunConfig({ algorithm: { advEstimator: 'grpo' } })).message).toContain(
      "'algorithm.rewardNormalization.method': advEstimator 'grpo' with rewardNormalization.method 'identity'",
    );
    const grpo = { advEstimator: 'grpo', rewardNormalization: { method: 'mean_std' } } as const;
    expect(parseRunConfig({ algorithm: grpo }).algorithm.advEstimator).toBe('grpo');
    expect(
      parseRunConfig({ algorithm: { advEstimator: 'grpo', rewardNormalization: { method: 'mean' } } }).algorithm
        .rewardNormalization.method,
    ).toBe('mean');
    const one = { envGroups: 32, groupSize: 1, trainEnvs: [{ tag: 'SimpleSokoban', nGroups: 32 }] };
    expect(configError(() => parseRunConfig({ algorithm: grpo, agent: one, filter: { ratio: 1 } })).message).toContain(
      "'agent.groupSize'",
    );
    const batch = { ...grpo, rewardNormalization: { grouping: 'batch', method: 'mean_std' } } as const;
    expect(parseRunConfig({ algorithm: batch, agent: one, filter: { ratio: 1 } }).agent.groupSize).toBe(1);
  });

  it("takes GiGPO's step-level advantage only with GRPO and one sample per turn", () => {
    const grpo = { advEstimator: 'grpo', rewardNormalization: { method: 'mean_std' } } as const;
    const stepAdvantage = { weight: 1 };
    const singleTurn = { contextWindowMode: 'single_turn' } as const;
    expect(
      parseRunConfig({ algorithm: { ...grpo, stepAdvantage }, agent: singleTurn }).algorithm.stepAdvantage,
    ).toEqual({ weight: 1, gamma: 0.95, method: 'mean_std' });
    expect(configError(() => parseRunConfig({ algorithm: { stepAdvantage }, agent: singleTurn })).message).toContain(
      "it needs advEstimator 'grpo', not 'gae'",
    );
    expect(configError(() => parseRunConfig({ algorithm: { ...grpo, stepAdvantage } })).message).toContain(
      "it needs agent.contextWindowMode 'single_turn'",
    );
    expect(parseRunConfig({}).algorithm.stepAdvantage.weight).toBe(0);
  });

  it('checks the tiny model shape', () => {
    expect(configError(() => parseRunConfig({ model: { tiny: { numHeads: 3 } } })).message).toContain(
      'numHeads 3 must divide hiddenSize 64',
    );
    expect(configError(() => parseRunConfig({ model: { tiny: { numKvHeads: 3 } } })).message).toContain(
      'numKvHeads 3 must divide numHeads 4',
    );
    expect(
      configError(() => parseRunConfig({ model: { tiny: { hiddenSize: 36, numHeads: 4, numKvHeads: 1 } } })).message,
    ).toContain('must be even');
  });

  it('runs only once every field has the right type', () => {
    // The sum rule is broken too, but only the type error is reported: cross-field rules need typed values.
    const err = configError(() => parseRunConfig({ agent: { envGroups: 'eight' } }));
    expect(err.problems).toEqual(['config key \'agent.envGroups\': expected an integer, got string "eight"']);
  });
});

describe('configWarnings, assertRunnable, envBlocks', () => {
  it('warns about KL coefficients without their switch, and the reverse', () => {
    expect(configWarnings(parseRunConfig({ algorithm: { klCoef: 0.001 } })).join('\n')).toContain(
      'useKlInReward is false',
    );
    expect(configWarnings(parseRunConfig({ algorithm: { useKlInReward: true } })).join('\n')).toContain('klCoef is 0');
    expect(configWarnings(parseRunConfig({ actor: { klLossCoef: 0.001 } })).join('\n')).toContain('useKlLoss is false');
  });

  it('notes, without warning, that clip-higher is inert when the filtered batch is one mini-batch (spec §10.7)', () => {
    expect(configNotes(defaultRunConfig()).join('\n')).toContain('clip-higher');
    expect(configWarnings(defaultRunConfig()).join('\n')).not.toContain('clip-higher'); // RAGEN's defaults: nothing to act on
    // Unfiltered 128 trajectories = 4 mini-batches: clipping acts.
    expect(configNotes(parseRunConfig({ filter: { ratio: 1 } })).join('\n')).not.toContain('clip-higher');
    // single_turn: the same 32 trajectories of up to 5 turns are up to 160 samples, several mini-batches.
    expect(configNotes(parseRunConfig({ agent: { contextWindowMode: 'single_turn' } })).join('\n')).not.toContain(
      'clip-higher',
    );
    expect(
      configNotes(parseRunConfig({ agent: { contextWindowMode: 'single_turn', maxTurn: 1 } })).join('\n'),
    ).toContain('clip-higher');
  });

  it('requires a local path for a pretrained model before running', () => {
    const err = configError(() => assertRunnable(defaultRunConfig()));
    expect(err.message).toContain("'model.path' is required");
    expect(err.message).toContain('--set model=/path/to/Qwen2.5-0.5B-Instruct');
    expect(() => assertRunnable(parseRunConfig({ model: { path: '/models/qwen' } }))).not.toThrow();
    expect(() => assertRunnable(parseRunConfig({ model: { pretrained: null } }))).not.toThrow();
  });

  it('resolves per-block action budgets and Bandit per-instance seeds for the agent', () => {
    const c = parseRunConfig({
      agent: {
        maxActionsPerTraj: 6,
        banditPerInstanceSeed: true,
        trainEnvs: [
          { tag: 'Bandit', nGroups: 4 },
          { tag: 'SimpleSokoban', nGroups: 4, maxActionsPerTraj: 8, config: { dimRoom: [6, 6] } },
        ],
      },
    });
    expect(envBlocks(c, 'train')).toEqual([
      { tag: 'Bandit', nGroups: 4, maxActionsPerTraj: 6, seedOffsetPerInstance: true },
      { tag: 'SimpleSokoban', nGroups: 4, maxActionsPerTraj: 8, config: { dimRoom: [6, 6] } },
    ]);
    expect(envBlocks(defaultRunConfig(), 'val')).toEqual([{ tag: 'SimpleSokoban', nGroups: 256 }]);
  });
});

describe('loadConfigText', () => {
  it('reads YAML, with numbers such as 1e-6 as numbers', () => {
    const c = loadConfigText(
      [
        '# a FrozenLake run',
        'agent:',
        '  trainEnvs:',
        '    - { tag: FrozenLake, nGroups: 8 }',
        'actor:',
        '  lr: 1e-6',
        '  clipRatioHigh: 0.2',
        '',
      ].join('\n'),
      'yaml',
    );
    expect(c.agent.trainEnvs).toEqual([{ tag: 'FrozenLake', nGroups: 8 }]);
    expect(c.actor.lr).toBe(1e-6);
    expect(c.actor.clipRatioHigh).toBe(0.2);
  });

  it('reads JSON, and an empty YAML file is the defaults', () => {
    expect(loadConfigText('{"trainer": {"totalSteps": 5}}', 'json').trainer.totalSteps).toBe(5);
    expect(loadConfigText('', 'yaml')).toEqual(defaultRunConfig());
  });

  it('round-trips a resolved config through YAML and JSON (config.json of a run reloads)', () => {
    const c: RunConfig = parseRunConfig({
      agent: { trainEnvs: [{ tag: 'FrozenLake', nGroups: 8, config: { p: 0.9 } }] },
    });
    expect(loadConfigText(JSON.stringify(c, null, 2), 'json')).toEqual(c);
  });

  it('names the file and the format when the text is unreadable, and validates the rest', () => {
    expect(configError(() => loadConfigText('actor: [1, 2', 'yaml', 'my.yaml')).message).toMatch(
      /could not read the run config my\.yaml as YAML/,
    );
    expect(configError(() => loadConfigText('{"actor": ', 'json')).message).toMatch(/as JSON/);
    expect(configError(() => loadConfigText('- 1\n- 2\n', 'yaml')).message).toContain('expected an object of sections');
    expect(configError(() => loadConfigText('actor:\n  lr: fast\n', 'yaml', 'my.yaml')).message).toContain(
      `invalid run config (my.yaml): config key 'actor.lr': expected number, got string "fast"`,
    );
  });
});

describe('applyOverrides (--set)', () => {
  const base = defaultRunConfig();

  it('sets nested numbers, booleans and nulls read as YAML', () => {
    const c = applyOverrides(base, [
      'actor.clipRatioHigh=0.2',
      'actor.lr=1e-4',
      'trainer.valBeforeTrain=false',
      'agent.seedTrain=null',
    ]);
    expect(c.actor.clipRatioHigh).toBe(0.2);
    expect(c.actor.lr).toBe(1e-4);
    expect(c.trainer.valBeforeTrain).toBe(false);
    expect(c.agent.seedTrain).toBeNull();
  });

  it('reads lists and objects in YAML flow syntax, merging objects into sections', () => {
    const c = applyOverrides(base, [
      'actor.betas=[0.8, 0.95]',
      'agent.trainEnvs=[{tag: Bandit, nGroups: 4}, {tag: BanditTest, nGroups: 4}]',
      'algorithm.rewardNormalization={method: mean_std}',
    ]);
    expect(c.actor.betas).toEqual([0.8, 0.95]);
    expect(c.agent.trainEnvs.map((b) => b.tag)).toEqual(['Bandit', 'BanditTest']);
    expect(c.algorithm.rewardNormalization).toEqual({ grouping: 'state', method: 'mean_std' });
  });

  it('addresses list items by index', () => {
    const c = applyOverrides(base, ['agent.envGroups=4', 'agent.trainEnvs.0.nGroups=4', 'actor.ppoMiniBatchSize=16']);
    expect(c.agent.trainEnvs[0].nGroups).toBe(4);
    expect(applyOverrides(base, ['agent.trainEnvs.0.config.dimRoom=[7, 7]']).agent.trainEnvs[0].config).toEqual({
      dimRoom: [7, 7],
    });
    expect(configError(() => applyOverrides(base, ['agent.trainEnvs.3.nGroups=4'])).message).toContain(
      'index 3 is past the end',
    );
  });

  it('treats model=PATH as model.path, and keeps strings with slashes and spaces', () => {
    expect(applyOverrides(base, ['model=/models/Qwen2.5-0.5B-Instruct']).model.path).toBe(
      '/models/Qwen2.5-0.5B-Instruct',
    );
    expect(applyOverrides(base, ['model.path=/my models/q']).model.path).toBe('/my models/q');
  });

  it('applies overrides in order and leaves the input untouched', () => {
    const before = JSON.stringify(base);
    expect(applyOverrides(base, ['trainer.totalSteps=5', 'trainer.totalSteps=7']).trainer.totalSteps).toBe(7);
    expect(JSON.stringify(base)).toBe(before);
  });

  it('rejects unknown keys, listing the valid ones and a suggestion', () => {
    const err = configError(() => applyOverrides(base, ['actor.clipRatioHihg=0.3']));
    expect(err.message).toContain(
      "unknown config key 'actor.clipRatioHihg' in --set actor.clipRatioHihg=0.3 (did you mean 'clipRatioHigh'?)",
    );
    expect(err.message).toContain("valid keys under 'actor': lr, lrWarmupStepsRatio, betas, weightDecay");
    expect(configError(() => applyOverrides(base, ['steps=5'])).message).toContain("unknown config key 'steps'");
    expect(configError(() => applyOverrides(base, ['actor.lr.x=5'])).message).toContain(
      "unknown config key 'actor.lr.x'",
    );
  });

  it('validates the result, naming the key', () => {
    expect(configError(() => applyOverrides(base, ['actor.lr=fast'])).message).toContain(
      `'actor.lr': expected number, got string "fast"`,
    );
    expect(configError(() => applyOverrides(base, ['agent.envGroups=4'])).message).toContain(
      'sum to 8, but agent.envGroups is 4',
    );
  });

  it('requires key=value', () => {
    expect(configError(() => applyOverrides(base, ['actor.lr'])).message).toContain(
      "--set expects key=value, got 'actor.lr'",
    );
    expect(configError(() => applyOverrides(base, ['=3'])).message).toContain('--set expects key=value');
  });
});

describe('didYouMean', () => {
  it('suggests within a few edits only', () => {
    expect(didYouMean('groupsize', ['groupSize', 'envGroups'])).toBe(" (did you mean 'groupSize'?)");
    expect(didYouMean('temperatur', ['temperature', 'topP'])).toBe(" (did you mean 'temperature'?)");
    expect(didYouMean('wandb', ['temperature', 'topP'])).toBe('');
  });
});
