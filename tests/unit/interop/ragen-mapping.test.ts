// The RunConfig <-> RAGEN table (src/interop/ragenMapping.ts): every field accounted for, every emitted key one that
// RAGEN has (checked against the key names the spec spells, tests/fixtures/ragen/spec-keys.json), and a round trip
// through the override list a user would run.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ENV_TAGS, makeEnv } from '../../../envs/index';
import {
  defaultRunConfig,
  describeConfig,
  mergeConfigInput,
  parseRunConfig,
  type RunConfig,
} from '../../../src/starpo/config';
import { PRESET_NAMES, resolvePreset } from '../../../src/starpo/presets';
import {
  ENV_BLOCK_FIELDS,
  ENV_CONFIG_KEYS,
  ENV_RULE_DIFFERENCES,
  FROM_CHECKPOINT,
  NOT_IN_SPEC,
  NO_RAGEN_KEY,
  SCALAR_KEYS,
  fromRagen,
  getPath,
  toRagen,
  unwrapWandbConfig,
  type RagenRunOptions,
} from '../../../src/interop/ragenMapping';
import { hydraOverrides, nestRagenValues, parseHydraOverrides, ragenConfigYaml } from '../../../src/interop/ragenHydra';
import { extractSpecKeys, type SpecKeys } from '../../../tools/ragen/spec-keys';
import YAML from 'yaml';

const SPEC_KEYS: SpecKeys = JSON.parse(
  fs.readFileSync(path.resolve(__dirname, '../../fixtures/ragen/spec-keys.json'), 'utf8'),
);
const OPTS: RagenRunOptions = {
  modelPath: '/x/qwen2-policy',
  criticPath: '/x/qwen2-critic',
  maxPositions: 1024,
  gpusPerNode: 8,
  nodes: 2,
  experimentName: 'run',
};

/** Configs that between them emit every key the table has: defaults, every preset arm, and two departures. */
function configs(): { name: string; config: RunConfig }[] {
  const out = [{ name: 'defaults', config: defaultRunConfig() }];
  for (const name of PRESET_NAMES)
    for (const arm of resolvePreset(name).arms) out.push({ name: `${name}/${arm.name}`, config: arm.config });
  // RAGEN-2 features and a non-default value in every field that maps both ways.
  out.push({
    name: 'v2 and departures',
    config: parseRunConfig(
      {
        model: { enableThink: false },
        agent: {
          trainEnvs: [
            {
              tag: 'FrozenLake',
              nGroups: 4,
              config: { size: 5, p: 0.9, successRate: 0.8 },
              maxActionsPerTraj: 7,
              maxTokens: 80,
            },
            {
              tag: 'LargerSokoban',
              nGroups: 2,
              config: { dimRoom: [7, 8], numBoxes: 2, searchDepth: 20, maxSteps: 50 },
            },
          ],
          valEnvs: [
            {
              tag: 'Bandit',
              nGroups: 3,
              config: {
                loArmName: 'Teacher',
                hiArmName: 'Trader',
                loArmScore: 0.15,
                hiArmHiScore: 2,
                hiArmLoScore: 0.5,
                hiArmHiScoreProb: 0.3,
              },
            },
          ],
          envGroups: 6,
          groupSize: 8,
          valGroups: 3,
          valGroupSize: 2,
          maxTurn: 4,
          maxActionsPerTurn: 3,
          actionSep: '|',
          formatPenalty: -0.2,
          maxContextWindow: 3,
          seedTrain: null,
          seedVal: 7,
        },
        rollout: { temperature: 0.9, topP: 0.95, topK: 50, maxNewTokens: 128, valTemperature: 0.3, valDoSample: false },
        algorithm: {
          advEstimator: 'grpo',
          gamma: 0.99,
          lambda: 0.95,
          rewardNormalization: { grouping: 'inductive', method: 'mean_std' },
          grpoLengthWeight: true,
          responseMaskOnly: false,
          useKlInReward: true,
          klCoef: 0.001,
          klEstimator: 'low_var_kl',
        },
        actor: {
          lr: 3e-5,
          betas: [0.8, 0.99],
          weightDecay: 0.1,
          gradClip: 0.5,
          clipRatioLow: 0.1,
          clipRatioHigh: 0.3,
          clipRatioC: 4,
          entropyCoeff: 0.01,
          useKlLoss: true,
          klLossCoef: 0.002,
          klLossType: 'mse',
          lossAggMode: 'seq-mean-token-sum',
          ppoMiniBatchSize: 16,
          ppoMicroBatchSize: 2,
          ppoEpochs: 2,
        },
        critic: { lr: 2e-5, betas: [0.85, 0.98], weightDecay: 0.02, gradClip: 2, cliprangeValue: 0.3 },
        filter: {
          strategy: 'top_p',
          type: 'std_rev',
          value: 0.9,
          includeZero: false,
          topPProbMode: 'softmax',
          selectionEps: 0.02,
          metric: 'reward',
          lossScaling: 'sqrt',
        },
        earlyStop: { enabled: true, emptyStopSteps: 3 },
        collapse: {
          enabled: true,
          computeFreq: 3,
          numSamples: 'all',
          firstTurn: false,
          trajectory: true,
          microBatchSize: 4,
          stdEps: 1e-4,
          emaDecay: 0.8,
        },
        trainer: { totalSteps: 50, testFreq: 0, valBeforeTrain: false, saveFreq: 5, keepCheckpoints: 2 },
      },
      'test',
    ),
  });
  return out;
}

/** A key the spec spells whole, or whose every segment the spec names. */
function inSpec(key: string): boolean {
  return SPEC_KEYS.paths.includes(key) || key.split('.').every((segment) => SPEC_KEYS.names.includes(segment));
}

const notInSpecEntry = (key: string) => key.replace(/^custom_envs\.[^.]+\./, 'custom_envs.*.');

describe('the RunConfig <-> RAGEN table accounts for every config field', () => {
  it('maps, carries in the checkpoint, or warns about each leaf of the RunConfig schema', () => {
    const mapped = new Set(SCALAR_KEYS.map((k) => k.ours));
    const leaves = describeConfig()
      .filter((r) => r.type !== 'section' && !r.key.includes('[]'))
      .map((r) => r.key);
    const missing = leaves.filter(
      (k) =>
        !mapped.has(k) &&
        !(ENV_BLOCK_FIELDS as readonly string[]).includes(k) &&
        !(k in FROM_CHECKPOINT) &&
        !(k in NO_RAGEN_KEY),
    );
    expect(missing).toEqual([]);
    // A field both mapped and "without a key" is mapped only for some configs (e.g. RAGEN-2 filter strategies).
    for (const k of Object.keys(NO_RAGEN_KEY))
      for (const s of SCALAR_KEYS.filter((e) => e.ours === k)) expect(s.when, k).toBeDefined();
    // Every path in the tables is a real field.
    const defaults = defaultRunConfig();
    for (const k of [...mapped, ...Object.keys(FROM_CHECKPOINT), ...Object.keys(NO_RAGEN_KEY), ...ENV_BLOCK_FIELDS]) {
      expect(leaves.includes(k) || getPath(defaults, k) !== undefined, k).toBe(true);
    }
  });

  it('maps or names every env config key the environments accept', () => {
    for (const [tag, family] of [
      ['SimpleSokoban', 'sokoban'],
      ['FrozenLake', 'frozenlake'],
      ['Bandit', 'bandit'],
    ] as const) {
      let valid: string[] = [];
      try {
        makeEnv(tag, { notAKey: 1 });
      } catch (err) {
        valid = /valid keys: ([^)]+)/.exec((err as Error).message)![1].split(', ');
      }
      expect(valid.length).toBeGreaterThan(2);
      const mapped = ENV_CONFIG_KEYS[family].map((m) => m.ours);
      const unmappable = valid.filter((k) => !mapped.includes(k));
      expect(
        unmappable.every((k) => k === 'level' || k === 'map'),
        `${tag}: ${unmappable}`,
      ).toBe(true);
      for (const k of mapped) expect(valid, `${tag}.${k}`).toContain(k);
    }
  });

  it("names how every env tag's rules differ from RAGEN's", () => {
    for (const tag of ENV_TAGS) {
      expect(ENV_RULE_DIFFERENCES[tag], tag).toMatch(/seed/);
    }
  });
});

describe('every key an export emits exists in RAGEN', () => {
  const emitted = new Map<string, string>();
  for (const { name, config } of configs())
    for (const key of toRagen(config, OPTS).values.keys()) if (!emitted.has(key)) emitted.set(key, name);

  it('is named by the spec, or listed in NOT_IN_SPEC with where it was checked', () => {
    expect(SPEC_KEYS.names.length).toBeGreaterThan(100);
    const unknown = [...emitted.keys()].filter((k) => !inSpec(k) && !(notInSpecEntry(k) in NOT_IN_SPEC));
    expect(unknown).toEqual([]);
  });

  it('keeps NOT_IN_SPEC minimal: each entry is emitted and really absent from the spec', () => {
    const emittedEntries = new Set([...emitted.keys()].map(notInSpecEntry));
    for (const entry of Object.keys(NOT_IN_SPEC)) {
      expect(emittedEntries.has(entry), `${entry} is never emitted`).toBe(true);
      const example = [...emitted.keys()].find((k) => notInSpecEntry(k) === entry)!;
      expect(inSpec(example), `${entry} is in the spec after all`).toBe(false);
    }
  });

  it('catches a misspelt key (the check can fail)', () => {
    expect(inSpec('actor_rollout_ref.actor.clip_ratio_high')).toBe(true);
    expect(inSpec('actor_rollout_ref.actor.clip_ratio_hi')).toBe(false);
    expect(inSpec('es_manager.train.env_group')).toBe(false);
  });

  // The spec lives in the project's shared folder beside the checkout; a copy is checked in (tools/ragen/) so that a
  // clean clone, CI included, runs this test too. Where both exist they must be the same text.
  const vendored = path.resolve(__dirname, '../../../tools/ragen/ragen-reference.md');
  const shared = [process.env.RAGEN_SPEC, path.resolve(__dirname, '../../../../shared/spec/ragen-reference.md')].find(
    (f) => f && fs.existsSync(f),
  );
  it('the checked-in key list is what tools/ragen/spec-keys.ts derives from the spec', () => {
    const spec = fs.readFileSync(vendored, 'utf8');
    if (shared) expect(spec, `${vendored} is stale: copy ${shared} over it`).toBe(fs.readFileSync(shared, 'utf8'));
    expect(extractSpecKeys(spec)).toEqual(SPEC_KEYS);
  });
});

describe('RunConfig -> RAGEN overrides -> RunConfig', () => {
  /** The effective env settings of a split: what a RAGEN es_manager would build. */
  const effectiveEnvs = (c: RunConfig, split: 'trainEnvs' | 'valEnvs') =>
    c.agent[split].map((b) => ({
      tag: b.tag,
      nGroups: b.nGroups,
      budget: b.maxActionsPerTraj ?? c.agent.maxActionsPerTraj ?? makeEnv(b.tag).spec.maxActionsPerTraj,
      maxTokens: b.maxTokens ?? makeEnv(b.tag).spec.maxTokens,
      config: withoutFixedBoard(b.config ?? {}),
    }));
  /** RAGEN draws every board from the seed: a fixed map or level cannot go there (the export warns, checked below). */
  const withoutFixedBoard = ({ map: _map, level: _level, ...rest }: Record<string, unknown>) => rest;

  for (const { name, config } of configs()) {
    it(`gives back every field that maps both ways: ${name}`, () => {
      const ragen = toRagen(config, OPTS);
      const lines = hydraOverrides(ragen);
      const { config: back, notImported } = fromRagen(parseHydraOverrides(lines));
      expect(notImported).toEqual([]);
      const again = parseRunConfig(back, 'round trip');
      const checked = SCALAR_KEYS.filter((k) => !k.when || k.when(config));
      expect(checked.length).toBeGreaterThan(40);
      for (const k of checked)
        expect(getPath(again, k.ours), `${k.ours} via ${k.ragen}`).toEqual(getPath(config, k.ours));
      expect(effectiveEnvs(again, 'trainEnvs')).toEqual(effectiveEnvs(config, 'trainEnvs'));
      const fixedBoards = config.agent.trainEnvs.flatMap((b, i) =>
        (b.config?.map ?? b.config?.level) !== undefined
          ? [`agent.trainEnvs[${i}].config.${b.config?.map !== undefined ? 'map' : 'level'}`]
          : [],
      );
      expect(ragen.warnings.map((w) => w.key).filter((k) => /\.config\.(map|level)$/.test(k))).toEqual(fixedBoards);
      expect(effectiveEnvs(again, 'valEnvs')).toEqual(effectiveEnvs(config, 'valEnvs'));
      // The YAML config file carries the same values.
      const yaml = YAML.parse(ragenConfigYaml(ragen, ['a header']));
      expect(yaml.defaults).toEqual(['base', '_self_']);
      const { defaults: _defaults, ...rest } = yaml;
      expect(rest).toEqual(nestRagenValues(ragen.values));
    });
  }

  it('writes RAGEN encodings: -1 for never, RAGEN-2 filter names, dim_x/dim_y, quoted separators, ++ for added keys', () => {
    const departures = configs().at(-1)!.config;
    const lines = hydraOverrides(toRagen(departures, OPTS));
    expect(lines).toContain('trainer.test_freq=-1');
    expect(lines).toContain("agent_proxy.action_sep='|'");
    expect(lines).toContain('++actor_rollout_ref.rollout.rollout_filter_type=smallest');
    expect(lines).toContain('++actor_rollout_ref.rollout.rollout_filter_strategy=top_p');
    expect(lines).toContain('++custom_envs.LargerSokoban.env_config.dim_x=7');
    expect(lines).toContain('++custom_envs.LargerSokoban.env_config.dim_y=8');
    expect(lines).toContain('seed.train=null');
    expect(lines).toContain('es_manager.train.env_configs.tags=[FrozenLake,LargerSokoban]');
    expect(lines).toContain('actor_rollout_ref.actor.optim.betas=[0.8,0.99]');
    expect(lines).toContain("system.CUDA_VISIBLE_DEVICES='0,1,2,3,4,5,6,7'");
    expect(lines).toContain('actor_rollout_ref.rollout.max_model_len=1024');
    const defaults = hydraOverrides(toRagen(defaultRunConfig(), { ...OPTS, gpusPerNode: 1, nodes: 1 }));
    expect(defaults).toContain('actor_rollout_ref.rollout.rollout_filter_ratio=0.25');
    expect(defaults).toContain('actor_rollout_ref.rollout.rollout_filter_type=std');
    expect(defaults.some((l) => l.includes('rollout_filter_strategy'))).toBe(false);
    expect(defaults.some((l) => l.includes('tp_size_check'))).toBe(false);
    expect(defaults).toContain("agent_proxy.action_sep='||'");
  });
});

describe('warnings: nothing is dropped silently', () => {
  it('lists every field without a RAGEN key, flags the ones RAGEN will do differently, and unmappable env settings', () => {
    const c = parseRunConfig(
      mergeConfigInput(resolvePreset('bandit-tiny').arms[0].config, {
        agent: {
          banditPerInstanceSeed: true,
          trainEnvs: [{ tag: 'Bandit', nGroups: 8 }],
          valEnvs: [
            { tag: 'Bandit', nGroups: 16, config: { loArmName: 'Owl' } },
            { tag: 'BanditTest', nGroups: 16 },
          ],
        },
        filter: { lossScaling: 'linear' },
      }),
      'test',
    );
    const { warnings } = toRagen(c, OPTS);
    const keys = warnings.map((w) => w.key);
    for (const k of Object.keys(NO_RAGEN_KEY)) expect(keys, k).toContain(k);
    const harmful = warnings.filter((w) => !w.harmless).map((w) => w.key);
    expect(harmful).toContain('agent.banditPerInstanceSeed');
    expect(harmful).toContain('model.promptStyle'); // the tiny presets use the compact prompt
    expect(harmful).toContain('filter.lossScaling'); // a RAGEN-2 key
    expect(harmful).toContain('agent.valEnvs[0]'); // Bandit configured differently in train and validation
    expect(harmful).toContain('actor.ppoMiniBatchSize'); // 8 rollouts... split over 16 GPUs
    expect(warnings.find((w) => w.key === 'trainer.seed')!.harmless).toBe(true);

    const level = parseRunConfig(
      {
        agent: {
          trainEnvs: [{ tag: 'SimpleSokoban', nGroups: 8, config: { level: '#####\n#P__#\n#_X_#\n#_O_#\n#####' } }],
        },
      },
      'test',
    );
    const w = toRagen(level, OPTS).warnings.find((x) => x.key === 'agent.trainEnvs[0].config.level');
    expect(w?.message).toMatch(/no fixed-level option/);
  });

  it('reads RAGEN tags and env_config keys it cannot represent into notImported, never silently', () => {
    const { notImported } = fromRagen({
      es_manager: { train: { env_configs: { tags: ['Countdown', 'SimpleSokoban'], n_groups: [4, 4] } } },
      custom_envs: {
        SimpleSokoban: { env_config: { dim_x: 6, dim_y: 6, no_op_penalty: -0.3, grid_vocab: { '#': 'wall' } } },
      },
    });
    expect(notImported).toEqual([
      'es_manager.train.env_configs.tags[0] = Countdown: no such env here (Bandit, BanditTest, SimpleSokoban, LargerSokoban, SokobanDifferentGridVocab, CoordSokoban, FrozenLake, CoordFrozenLake)',
      'custom_envs.SimpleSokoban.env_config.no_op_penalty: not an env config key here',
    ]);
  });

  it("maps observationFormat to RAGEN-2's observation_format and back, for Sokoban and FrozenLake blocks", () => {
    const c = parseRunConfig(
      {
        agent: {
          trainEnvs: [{ tag: 'SimpleSokoban', nGroups: 8, config: { observationFormat: 'coord' } }],
          valEnvs: [{ tag: 'FrozenLake', nGroups: 4, config: { observationFormat: 'grid_coord' } }],
          valGroups: 4,
        },
      },
      'test',
    );
    const ragen = toRagen(c, OPTS);
    const lines = hydraOverrides(ragen);
    expect(lines).toContain('++custom_envs.SimpleSokoban.env_config.observation_format=coord');
    expect(lines).toContain('++custom_envs.FrozenLake.env_config.observation_format=grid_coord');
    // A RAGEN-2 key: flagged, not dropped.
    const flagged = ragen.warnings.find((w) => w.key === 'agent.trainEnvs[0].config.observationFormat');
    expect(flagged?.message).toMatch(/observation_format is a RAGEN-2 key/);
    expect(flagged?.harmless).toBe(false);
    const back = fromRagen(parseHydraOverrides(lines));
    expect(back.notImported).toEqual([]);
    expect(back.config.agent?.trainEnvs?.[0]?.config).toEqual({ observationFormat: 'coord' });
    expect(back.config.agent?.valEnvs?.[0]?.config).toEqual({ observationFormat: 'grid_coord' });
    // RAGEN-2's own CoordSokoban entry reads back as a config this project accepts.
    const v2 = fromRagen({
      es_manager: { train: { env_configs: { tags: ['CoordSokoban'], n_groups: [8] } } },
      custom_envs: {
        CoordSokoban: {
          max_tokens: 120,
          env_config: { dim_x: 6, dim_y: 6, num_boxes: 1, max_steps: 100, observation_format: 'grid_coord' },
        },
      },
    });
    expect(v2.notImported).toEqual([]);
    expect(v2.config.agent?.trainEnvs?.[0]).toEqual({
      tag: 'CoordSokoban',
      nGroups: 8,
      maxTokens: 120,
      config: { dimRoom: [6, 6], numBoxes: 1, maxSteps: 100, observationFormat: 'grid_coord' },
    });
    expect(() => makeEnv('CoordSokoban', v2.config.agent!.trainEnvs![0].config)).not.toThrow();
  });

  it("exports the Coord tags as RAGEN-2 tags, pinning CoordFrozenLake's lake to this project's (RAGEN-2 defaults to its v2 lake)", () => {
    const c = parseRunConfig(
      {
        agent: {
          trainEnvs: [{ tag: 'CoordFrozenLake', nGroups: 8 }],
          valEnvs: [{ tag: 'CoordSokoban', nGroups: 4 }],
          valGroups: 4,
        },
      },
      'test',
    );
    const ragen = toRagen(c, OPTS);
    expect(ragen.values.get('custom_envs.CoordFrozenLake.env_config.p')).toBe(0.8);
    expect(ragen.values.get('custom_envs.CoordFrozenLake.env_config.success_rate')).toBe(1 / 3);
    // CoordSokoban's RAGEN-2 defaults are ours: nothing to pin.
    expect([...ragen.values.keys()].some((k) => k.startsWith('custom_envs.CoordSokoban.env_config'))).toBe(false);
    for (const key of ['agent.trainEnvs[0].tag', 'agent.valEnvs[0].tag']) {
      expect(ragen.warnings.find((w) => w.key === key)?.message, key).toMatch(/is a RAGEN-2 env tag/);
    }
    // Reading the export back gives the run's blocks, without the pinned defaults.
    const back = fromRagen(parseHydraOverrides(hydraOverrides(ragen)));
    expect(back.notImported).toEqual([]);
    expect(back.config.agent?.trainEnvs).toEqual([{ tag: 'CoordFrozenLake', nGroups: 8 }]);
    // A run on RAGEN-2's own lake keeps its values.
    const v2Lake = parseRunConfig(
      { agent: { trainEnvs: [{ tag: 'CoordFrozenLake', nGroups: 8, config: { p: 0.9, successRate: 0.8 } }] } },
      'test',
    );
    expect(toRagen(v2Lake, OPTS).values.get('custom_envs.CoordFrozenLake.env_config.success_rate')).toBe(0.8);
    expect(
      fromRagen(parseHydraOverrides(hydraOverrides(toRagen(v2Lake, OPTS)))).config.agent?.trainEnvs?.[0]?.config,
    ).toEqual({ p: 0.9, successRate: 0.8 });
  });

  it('resolves base.yaml interpolations and W&B-wrapped configs', () => {
    const { config } = fromRagen({
      ppo_mini_batch_size: 16,
      micro_batch_size_per_gpu: '${ppo_mini_batch_size}',
      seed: { train: 5, val: 9 },
    });
    expect(config.actor?.ppoMicroBatchSize).toBe(16);
    expect(config.agent?.seedVal).toBe(9);
    // W&B's config.yaml wraps each top-level key as {desc, value}.
    const wandb = {
      _wandb: { value: { cli_version: '0.19' } },
      seed: { desc: null, value: { train: 1, val: 2 } },
      ppo_mini_batch_size: { desc: null, value: 8 },
    };
    expect(fromRagen(unwrapWandbConfig(wandb)).config).toEqual({
      agent: { seedTrain: 1, seedVal: 2 },
      actor: { ppoMiniBatchSize: 8 },
    });
    expect(unwrapWandbConfig({ seed: { train: 1 } })).toEqual({ seed: { train: 1 } }); // a plain Hydra config is left as is
  });
});

describe('LoRA <-> RAGEN config/base-lora.yaml', () => {
  it("exports lora.rank / alpha / target_modules (rank 0 when off) and reads base-lora.yaml's values back", () => {
    const off = toRagen(parseRunConfig({}, 'default'), OPTS).values;
    expect(off.get('lora.rank')).toBe(0);
    expect(off.has('lora.alpha')).toBe(false);
    const on = toRagen(
      parseRunConfig({ lora: { enabled: true }, actor: { lr: 1e-5 }, critic: { lr: 1e-4 } }, 'lora'),
      OPTS,
    ).values;
    expect([on.get('lora.rank'), on.get('lora.alpha'), on.get('lora.target_modules')]).toEqual([64, 64, 'all-linear']);
    const some = toRagen(
      parseRunConfig({ lora: { enabled: true, targetModules: ['q_proj', 'v_proj'] } }, 'lora'),
      OPTS,
    ).values;
    expect(some.get('lora.target_modules')).toEqual(['q_proj', 'v_proj']);
    // config/base-lora.yaml's own values, with its interpolations.
    const { config } = fromRagen({
      lora: { rank: 64, alpha: 64, target_modules: 'all-linear' },
      actor_rollout_ref: { model: { lora_rank: '${lora.rank}' }, actor: { optim: { lr: 1e-5 } } },
      critic: { optim: { lr: 1e-4 } },
    });
    const c = parseRunConfig(config, 'base-lora');
    expect(c.lora).toEqual({
      enabled: true,
      rank: 64,
      alpha: 64,
      targetModules: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'],
    });
    expect([c.actor.lr, c.critic.lr]).toEqual([1e-5, 1e-4]);
    expect(
      parseRunConfig(fromRagen({ lora: { rank: 0, alpha: 16, target_modules: 'all-linear' } }).config, 'base').lora
        .enabled,
    ).toBe(false);
  });
});
