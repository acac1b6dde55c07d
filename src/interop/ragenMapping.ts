// The one table between a RunConfig and RAGEN's Hydra config (config/base.yaml + config/envs.yaml + veRL's
// ppo_trainer.yaml): `ragen export --to ragen` reads it one way (toRagen), `ragen import-metrics --ragen-config` and
// the round-trip tests read it the other way (fromRagen). Every RunConfig field is accounted for exactly once:
//   * SCALAR_KEYS       a field with a RAGEN key (value transforms where the encodings differ, e.g. 0 vs −1 = never);
//   * env blocks        agent.trainEnvs / valEnvs / maxActionsPerTraj become es_manager.<split>.env_configs plus
//                       custom_envs.<Tag> entries (ENV_CONFIG_KEYS maps each env's camelCase config keys);
//   * FROM_CHECKPOINT   fields the exported model directory carries (its shape, weights and tokenizer);
//   * NO_RAGEN_KEY      fields RAGEN has no key for: each export lists them as warnings, saying whether RAGEN's
//                       own behaviour equals this run's setting.
// Keys are RAGEN v1's (RAGEN-AI/RAGEN, the spec's default); a key marked `v2` exists only in RAGEN-2
// (mll-lab-nu/RAGEN) and is emitted, with a warning, only when the run uses that feature.
// Pure TypeScript (no fs): the browser may use it too.
import { ENV_TAGS, FROZENLAKE_DEFAULTS, envFamily as familyOfEnvTag, type EnvFamily } from '../../envs/index';
import { type EnvBlock, type RunConfig, type RunConfigInput } from '../starpo/config';
import { LORA_TARGET_MODULES } from '../model/config';

/** One RunConfig field with a RAGEN key. */
export interface ScalarKey {
  /** Dotted RunConfig path, e.g. 'actor.clipRatioHigh'. */
  ours: string;
  /** Dotted RAGEN (Hydra) path, e.g. 'actor_rollout_ref.actor.clip_ratio_high'. */
  ragen: string;
  /** Our value -> RAGEN's (default: unchanged). */
  toRagen?: (value: unknown) => unknown;
  /** RAGEN's value -> ours (default: unchanged). */
  fromRagen?: (value: unknown) => unknown;
  /** Emit only for configs where this holds (default: always). */
  when?: (c: RunConfig) => boolean;
  /** The key exists only in RAGEN-2. */
  v2?: true;
}

const BASE_YAML = "RAGEN's config/base.yaml";
const VERL_YAML = "veRL's trainer/config/ppo_trainer.yaml";

/**
 * RAGEN keys this module emits that the spec (spec/ragen-reference.md) does not spell out, with where each was
 * checked instead (`*` stands for an env tag). tests/unit/interop/ragen-mapping.test.ts checks every other emitted key
 * against the key names extracted from the spec, and that this list holds nothing the spec already names.
 */
export const NOT_IN_SPEC: Record<string, string> = {
  'actor_rollout_ref.rollout.val_kwargs.temperature': BASE_YAML,
  'actor_rollout_ref.rollout.val_kwargs.do_sample': BASE_YAML,
  'algorithm.gamma': BASE_YAML,
  'algorithm.lam': BASE_YAML,
  'actor_rollout_ref.actor.optim.betas': BASE_YAML,
  'actor_rollout_ref.actor.optim.weight_decay': VERL_YAML,
  'critic.optim.betas': BASE_YAML,
  'critic.optim.weight_decay': VERL_YAML,
  'critic.model.path': BASE_YAML,
  'trainer.max_actor_ckpt_to_keep': "RAGEN-2's config/base.yaml",
  'trainer.experiment_name': BASE_YAML,
  'trainer.nnodes': VERL_YAML,
  'system.CUDA_VISIBLE_DEVICES': BASE_YAML,
  'collapse_detection.first_turn_enabled': "RAGEN-2's config/base.yaml",
  'collapse_detection.multi_turn_enabled': "RAGEN-2's config/base.yaml",
  'collapse_detection.micro_batch_size': "RAGEN-2's config/base.yaml",
  'collapse_detection.std_eps': "RAGEN-2's ragen/trainer/agent_trainer.py (collapse_cfg.get('std_eps', 1e-3))",
  'collapse_detection.ema_decay': "RAGEN-2's ragen/trainer/agent_trainer.py (collapse_cfg.get('ema_decay', 0.9))",
  'custom_envs.*.env_config.p': "RAGEN's FrozenLakeEnvConfig (p = frozen-cell probability)",
  'custom_envs.*.env_config.dim_x': "RAGEN's SokobanEnvConfig (dim_room = (dim_x, dim_y)) and config/envs.yaml",
  'custom_envs.*.env_config.dim_y': "RAGEN's SokobanEnvConfig (dim_room = (dim_x, dim_y)) and config/envs.yaml",
};

/** 0 = never here; RAGEN / veRL write −1 for never. */
const zeroIsNever = {
  toRagen: (v: unknown) => (v === 0 ? -1 : v),
  fromRagen: (v: unknown) => (typeof v === 'number' && v <= 0 ? 0 : v),
};
const ratioStrategy = (c: RunConfig) => c.filter.strategy === 'ratio';
const v2Strategy = (c: RunConfig) => c.filter.strategy !== 'ratio';
const collapseOn = (c: RunConfig) => c.collapse.enabled;
const loraOn = (c: RunConfig) => c.lora.enabled;

export const SCALAR_KEYS: readonly ScalarKey[] = [
  { ours: 'model.enableThink', ragen: 'agent_proxy.enable_think' },
  { ours: 'agent.envGroups', ragen: 'es_manager.train.env_groups' },
  { ours: 'agent.groupSize', ragen: 'es_manager.train.group_size' },
  { ours: 'agent.valGroups', ragen: 'es_manager.val.env_groups' },
  { ours: 'agent.valGroupSize', ragen: 'es_manager.val.group_size' },
  { ours: 'agent.maxTurn', ragen: 'agent_proxy.max_turn' },
  { ours: 'agent.maxActionsPerTurn', ragen: 'agent_proxy.max_actions_per_turn' },
  { ours: 'agent.actionSep', ragen: 'agent_proxy.action_sep' },
  { ours: 'agent.formatPenalty', ragen: 'es_manager.format_penalty' },
  { ours: 'agent.maxContextWindow', ragen: 'agent_proxy.max_context_window' },
  { ours: 'agent.contextWindowMode', ragen: 'agent_proxy.context_window_mode' },
  { ours: 'agent.seedTrain', ragen: 'seed.train' },
  { ours: 'agent.seedVal', ragen: 'seed.val' },
  { ours: 'rollout.temperature', ragen: 'actor_rollout_ref.rollout.temperature' },
  { ours: 'rollout.topP', ragen: 'actor_rollout_ref.rollout.top_p' },
  { ours: 'rollout.topK', ragen: 'actor_rollout_ref.rollout.top_k' },
  { ours: 'rollout.maxNewTokens', ragen: 'actor_rollout_ref.rollout.response_length' },
  { ours: 'rollout.valTemperature', ragen: 'actor_rollout_ref.rollout.val_kwargs.temperature' },
  { ours: 'rollout.valDoSample', ragen: 'actor_rollout_ref.rollout.val_kwargs.do_sample' },
  { ours: 'algorithm.advEstimator', ragen: 'algorithm.adv_estimator' },
  { ours: 'algorithm.gamma', ragen: 'algorithm.gamma' },
  { ours: 'algorithm.lambda', ragen: 'algorithm.lam' },
  { ours: 'algorithm.rewardNormalization.grouping', ragen: 'agent_proxy.reward_normalization.grouping' },
  { ours: 'algorithm.rewardNormalization.method', ragen: 'agent_proxy.reward_normalization.method' },
  { ours: 'algorithm.grpoLengthWeight', ragen: 'grpo_advantage_length_weight' },
  { ours: 'algorithm.responseMaskOnly', ragen: 'enable_response_mask' },
  { ours: 'algorithm.useKlInReward', ragen: 'algorithm.use_kl_in_reward' },
  { ours: 'algorithm.klCoef', ragen: 'algorithm.kl_ctrl.kl_coef' },
  { ours: 'algorithm.klEstimator', ragen: 'algorithm.kl_penalty' },
  { ours: 'actor.lr', ragen: 'actor_rollout_ref.actor.optim.lr' },
  { ours: 'actor.lrWarmupStepsRatio', ragen: 'actor_rollout_ref.actor.optim.lr_warmup_steps_ratio' },
  { ours: 'actor.betas', ragen: 'actor_rollout_ref.actor.optim.betas' },
  { ours: 'actor.weightDecay', ragen: 'actor_rollout_ref.actor.optim.weight_decay' },
  { ours: 'actor.gradClip', ragen: 'actor_rollout_ref.actor.grad_clip' },
  { ours: 'actor.clipRatioLow', ragen: 'actor_rollout_ref.actor.clip_ratio_low' },
  { ours: 'actor.clipRatioHigh', ragen: 'actor_rollout_ref.actor.clip_ratio_high' },
  { ours: 'actor.clipRatioC', ragen: 'actor_rollout_ref.actor.clip_ratio_c' },
  { ours: 'actor.entropyCoeff', ragen: 'actor_rollout_ref.actor.entropy_coeff' },
  { ours: 'actor.useKlLoss', ragen: 'actor_rollout_ref.actor.use_kl_loss' },
  { ours: 'actor.klLossCoef', ragen: 'actor_rollout_ref.actor.kl_loss_coef' },
  { ours: 'actor.klLossType', ragen: 'actor_rollout_ref.actor.kl_loss_type' },
  { ours: 'actor.lossAggMode', ragen: 'actor_rollout_ref.actor.loss_agg_mode' },
  // base.yaml's top-level batch keys feed the actor and the critic through interpolation.
  { ours: 'actor.ppoMiniBatchSize', ragen: 'ppo_mini_batch_size' },
  { ours: 'actor.ppoMicroBatchSize', ragen: 'micro_batch_size_per_gpu' },
  { ours: 'actor.ppoEpochs', ragen: 'actor_rollout_ref.actor.ppo_epochs' },
  { ours: 'critic.lr', ragen: 'critic.optim.lr' },
  { ours: 'critic.betas', ragen: 'critic.optim.betas' },
  { ours: 'critic.weightDecay', ragen: 'critic.optim.weight_decay' },
  { ours: 'critic.gradClip', ragen: 'critic.grad_clip' },
  { ours: 'critic.cliprangeValue', ragen: 'critic.cliprange_value' },
  // LoRA as config/base-lora.yaml writes it. RAGEN's rank 0 means full fine-tuning (and some RAGEN versions ship
  // base.yaml with LoRA on, so the rank is always written); ours is lora.enabled, the rank keeping its default then.
  {
    ours: 'lora.enabled',
    ragen: 'lora.rank',
    toRagen: () => 0,
    fromRagen: (r) => Number(r) > 0,
    when: (c) => !c.lora.enabled,
  },
  { ours: 'lora.rank', ragen: 'lora.rank', fromRagen: (r) => (Number(r) > 0 ? r : 64), when: loraOn },
  { ours: 'lora.alpha', ragen: 'lora.alpha', when: loraOn },
  {
    ours: 'lora.targetModules',
    ragen: 'lora.target_modules',
    when: loraOn,
    toRagen: (v) => (LORA_TARGET_MODULES.every((m) => (v as string[]).includes(m)) ? 'all-linear' : v),
    fromRagen: (v) => (v === 'all-linear' ? [...LORA_TARGET_MODULES] : v),
  },
  // StarPO-S's filter is v1's rollout_filter_ratio / _type; RAGEN-2's SNR-adaptive strategies have their own keys.
  { ours: 'filter.ratio', ragen: 'actor_rollout_ref.rollout.rollout_filter_ratio', when: ratioStrategy },
  { ours: 'filter.type', ragen: 'actor_rollout_ref.rollout.rollout_filter_type', when: ratioStrategy },
  { ours: 'filter.strategy', ragen: 'actor_rollout_ref.rollout.rollout_filter_strategy', when: v2Strategy, v2: true },
  {
    ours: 'filter.type',
    ragen: 'actor_rollout_ref.rollout.rollout_filter_type',
    when: v2Strategy,
    v2: true,
    // RAGEN-2 spells std / std_rev as largest / smallest.
    toRagen: (v) => (v === 'std_rev' ? 'smallest' : 'largest'),
  },
  { ours: 'filter.value', ragen: 'actor_rollout_ref.rollout.rollout_filter_value', when: v2Strategy, v2: true },
  {
    ours: 'filter.includeZero',
    ragen: 'actor_rollout_ref.rollout.rollout_filter_include_zero',
    when: v2Strategy,
    v2: true,
  },
  {
    ours: 'filter.topPProbMode',
    ragen: 'actor_rollout_ref.rollout.rollout_filter_top_p_prob_mode',
    when: v2Strategy,
    v2: true,
  },
  {
    ours: 'filter.selectionEps',
    ragen: 'actor_rollout_ref.rollout.rollout_filter_selection_eps',
    when: v2Strategy,
    v2: true,
  },
  { ours: 'filter.metric', ragen: 'actor_rollout_ref.rollout.rollout_filter_metric', when: v2Strategy, v2: true },
  {
    ours: 'filter.lossScaling',
    ragen: 'actor_rollout_ref.actor.filter_loss_scaling',
    when: (c) => c.filter.lossScaling !== 'none',
    v2: true,
  },
  {
    ours: 'earlyStop.emptyStopSteps',
    ragen: 'actor_rollout_ref.rollout.rollout_filter_empty_stop_steps',
    when: (c) => c.earlyStop.enabled,
    v2: true,
  },
  // RAGEN-2's collapse diagnostics: emitted only when on (RAGEN v1 has no such section).
  { ours: 'collapse.computeFreq', ragen: 'collapse_detection.compute_freq', when: collapseOn, v2: true },
  { ours: 'collapse.numSamples', ragen: 'collapse_detection.num_samples', when: collapseOn, v2: true },
  {
    ours: 'collapse.firstTurn',
    ragen: 'collapse_detection.first_turn_enabled',
    when: collapseOn,
    v2: true,
    fromRagen: (v) => v === true,
  },
  {
    ours: 'collapse.trajectory',
    ragen: 'collapse_detection.multi_turn_enabled',
    when: collapseOn,
    v2: true,
    fromRagen: (v) => v === true,
  },
  {
    ours: 'collapse.microBatchSize',
    ragen: 'collapse_detection.micro_batch_size',
    v2: true,
    when: (c) => c.collapse.enabled && c.collapse.microBatchSize !== null,
  },
  { ours: 'collapse.stdEps', ragen: 'collapse_detection.std_eps', when: collapseOn, v2: true },
  { ours: 'collapse.emaDecay', ragen: 'collapse_detection.ema_decay', when: collapseOn, v2: true },
  { ours: 'trainer.totalSteps', ragen: 'trainer.total_training_steps' },
  { ours: 'trainer.testFreq', ragen: 'trainer.test_freq', ...zeroIsNever },
  { ours: 'trainer.valBeforeTrain', ragen: 'trainer.val_before_train' },
  { ours: 'trainer.saveFreq', ragen: 'trainer.save_freq', ...zeroIsNever },
  {
    ours: 'trainer.keepCheckpoints',
    ragen: 'trainer.max_actor_ckpt_to_keep',
    when: (c) => c.trainer.keepCheckpoints > 0,
    v2: true,
    fromRagen: (v) => (v === null || v === undefined ? 0 : v),
  },
];

/** The reverse direction of the filter type: v1 std / std_rev and RAGEN-2 largest / smallest. */
const FILTER_TYPE_FROM_RAGEN: Record<string, string> = {
  std: 'std',
  std_rev: 'std_rev',
  largest: 'std',
  smallest: 'std_rev',
};

/** Our env config key -> RAGEN's `custom_envs.<Tag>.env_config` key(s), per env family. */
interface EnvConfigKey {
  ours: string;
  /** RAGEN keys and how our value splits into them (dimRoom [rows, cols] -> dim_x, dim_y). */
  toRagen: (value: unknown) => Record<string, unknown>;
  /** RAGEN keys read back (all must be present). */
  ragenKeys: readonly string[];
  fromRagen: (values: Record<string, unknown>) => unknown;
  v2?: true;
}

const same = (ours: string, ragen: string, extra: Partial<EnvConfigKey> = {}): EnvConfigKey => ({
  ours,
  ragenKeys: [ragen],
  toRagen: (v) => ({ [ragen]: v }),
  fromRagen: (r) => r[ragen],
  ...extra,
});

export const ENV_CONFIG_KEYS: Record<'sokoban' | 'frozenlake' | 'bandit', readonly EnvConfigKey[]> = {
  sokoban: [
    // envs.yaml sets dim_x / dim_y, which SokobanEnvConfig turns into dim_room = (dim_x, dim_y) = (rows, cols):
    // a dim_room override would be undone by them.
    {
      ours: 'dimRoom',
      ragenKeys: ['dim_x', 'dim_y'],
      toRagen: (v) => ({ dim_x: (v as number[])[0], dim_y: (v as number[])[1] }),
      fromRagen: (r) => [r.dim_x, r.dim_y],
    },
    same('numBoxes', 'num_boxes'),
    same('searchDepth', 'search_depth'),
    same('maxSteps', 'max_steps'),
    // RAGEN-2's SokobanEnvConfig.observation_format ('grid' | 'coord' | 'grid_coord'); v1 renders the grid only.
    same('observationFormat', 'observation_format', { v2: true }),
  ],
  frozenlake: [
    same('size', 'size'),
    same('p', 'p'),
    // RAGEN v1's FrozenLake is gym's slippery lake (1/3 fixed); success_rate is RAGEN-2's.
    same('successRate', 'success_rate', { v2: true }),
    same('observationFormat', 'observation_format', { v2: true }),
  ],
  bandit: [
    same('loArmName', 'lo_arm_name'),
    same('hiArmName', 'hi_arm_name'),
    same('loArmScore', 'lo_arm_score'),
    same('hiArmHiScore', 'hi_arm_hiscore'),
    same('hiArmLoScore', 'hi_arm_loscore'),
    same('hiArmHiScoreProb', 'hi_arm_hiscore_prob'),
  ],
};

/** Env config keys with no RAGEN equivalent (a fixed level or map replaces RAGEN's generator). */
const ENV_CONFIG_UNMAPPABLE: Record<string, string> = {
  level: 'RAGEN generates every Sokoban level from the seed; it has no fixed-level option',
  map: 'RAGEN generates every FrozenLake map from the seed; it has no fixed-map option',
};

/** RAGEN env_config keys that an env tag implies here (read back without a warning, not needed). */
const IMPLIED_BY_TAG = new Set(['grid_lookup', 'grid_vocab', 'render_mode', 'action_lookup', 'action_space_start']);

/** The env family of a tag (envs/index.ts), which picks its row of ENV_CONFIG_KEYS. */
export function envFamily(tag: string): EnvFamily {
  return familyOfEnvTag(tag);
}

/** Env tags that only RAGEN-2 (mll-lab-nu/RAGEN config/envs.yaml) has: RAGEN v1 has no custom_envs entry for them. */
export const V2_ONLY_TAGS: ReadonlySet<string> = new Set(['CoordSokoban', 'CoordFrozenLake']);

/**
 * Env config that an export writes for a tag even when the run leaves it at the default, because RAGEN's own
 * default for that tag differs from ours: RAGEN-2 plays CoordFrozenLake on its v2 lake (p 0.9, success_rate 0.8),
 * this project on RAGEN v1's (p 0.8, success_rate 1/3).
 */
export const PINNED_ENV_CONFIG: Readonly<Record<string, Readonly<Record<string, unknown>>>> = {
  CoordFrozenLake: {
    p: FROZENLAKE_DEFAULTS.CoordFrozenLake.p,
    successRate: FROZENLAKE_DEFAULTS.CoordFrozenLake.successRate,
  },
};

/** Fields the exported model directory carries (config.json, weights, tokenizer.json): no RAGEN key needed. */
export const FROM_CHECKPOINT: Record<string, string> = {
  'model.pretrained': 'the exported model directory replaces it as model_path',
  'model.path': 'the exported model directory replaces it as model_path',
  'model.warmStart': 'the exported weights already contain the warm start and the training',
  'model.tiny.hiddenSize': 'the exported config.json holds the model shape',
  'model.tiny.numLayers': 'the exported config.json holds the model shape',
  'model.tiny.numHeads': 'the exported config.json holds the model shape',
  'model.tiny.numKvHeads': 'the exported config.json holds the model shape',
  'model.tiny.intermediateSize': 'the exported config.json holds the model shape',
  'model.tiny.ropeTheta': 'the exported config.json holds the model shape',
  'model.tiny.maxPositions': "the exported config.json's max_position_embeddings (also caps rollout max_model_len)",
};

/** A RunConfig field RAGEN has no key for: why, and whether RAGEN behaves as this run's value does anyway. */
export interface NoRagenKey {
  why: string;
  /** True when RAGEN's fixed behaviour equals what this config asks for (the warning is then informational). */
  sameAsRagen: (c: RunConfig) => boolean;
}

const always = () => true;

export const NO_RAGEN_KEY: Record<string, NoRagenKey> = {
  'model.promptStyle': {
    why: "RAGEN always builds its own prompt (RAGEN's text, Qwen chat template): a model trained on the 'compact' prompt meets a prompt it never saw, so expect its success to drop until it adapts",
    sameAsRagen: (c) => c.model.promptStyle === 'ragen',
  },
  'agent.turnNumbers': {
    why: "RAGEN numbers the turns inside the context window (a one-turn window always says turn 1); 'episode' shows each turn's number in the episode",
    sameAsRagen: (c) => c.agent.turnNumbers === 'window',
  },
  'agent.groundingBonus': {
    why: "RAGEN rewards only the env and the format; a bonus for true claims in the reasoning is this project's (the mechanism lesson)",
    sameAsRagen: (c) => c.agent.groundingBonus === 0,
  },
  'agent.banditPerInstanceSeed': {
    why: 'RAGEN v1 resets every member of a group with the group seed (shared Bandit draw); only RAGEN-2 offsets seeds per instance',
    sameAsRagen: (c) => !c.agent.banditPerInstanceSeed,
  },
  'model.gradientCheckpointing': {
    why: 'how memory is traded for compute in the update; the maths is the same',
    sameAsRagen: always,
  },
  'model.sharePrefix': {
    why: 'how much compute the update spends on the prompt prefix rows repeat; the maths is the same',
    sameAsRagen: always,
  },
  'rollout.maxBatchSize': {
    why: 'how many rollouts are generated at once; the samples are the same (vLLM schedules its own batches)',
    sameAsRagen: always,
  },
  'rollout.engine': {
    why: 'how rollouts are scheduled (turn by turn, or continuous batching as vLLM does); the samples are the same',
    sameAsRagen: always,
  },
  'filter.value': { why: 'only RAGEN-2 strategies read it (emitted with them)', sameAsRagen: always },
  'filter.includeZero': { why: 'only RAGEN-2 strategies read it (emitted with them)', sameAsRagen: always },
  'filter.minScore': {
    why: "a floor under the kept groups' scores is ours (the echo-trap lesson); RAGEN-2 only drops zero scores (include_zero)",
    sameAsRagen: (c) => c.filter.strategy === 'ratio' || c.filter.minScore === 0,
  },
  'filter.topPProbMode': { why: 'only RAGEN-2 strategies read it (emitted with them)', sameAsRagen: always },
  'filter.selectionEps': { why: 'only RAGEN-2 strategies read it (emitted with them)', sameAsRagen: always },
  'filter.metric': { why: 'only RAGEN-2 strategies read it (emitted with them)', sameAsRagen: always },
  'algorithm.stepAdvantage.weight': {
    why: "GiGPO's step-level advantage is verl-agent's (algorithm.gigpo.step_advantage_w), not RAGEN's: RAGEN credits every turn of a trajectory alike",
    sameAsRagen: (c) => c.algorithm.stepAdvantage.weight === 0,
  },
  'algorithm.stepAdvantage.gamma': {
    why: 'read only with stepAdvantage.weight > 0 (GiGPO, no RAGEN key)',
    sameAsRagen: always,
  },
  'algorithm.stepAdvantage.method': {
    why: 'read only with stepAdvantage.weight > 0 (GiGPO, no RAGEN key)',
    sameAsRagen: always,
  },
  'earlyStop.enabled': {
    why: 'RAGEN v1 never stops early; RAGEN-2 applies its own fixed early-stopping rules',
    sameAsRagen: (c) => !c.earlyStop.enabled,
  },
  'earlyStop.varianceBaselineSteps': {
    why: "RAGEN-2's reward-variance rule is fixed (10 steps), no key",
    sameAsRagen: (c) => !c.earlyStop.enabled || c.earlyStop.varianceBaselineSteps === 10,
  },
  'earlyStop.varianceCollapseSteps': {
    why: "RAGEN-2's reward-variance rule is fixed (10 steps), no key",
    sameAsRagen: (c) => !c.earlyStop.enabled || c.earlyStop.varianceCollapseSteps === 10,
  },
  'earlyStop.varianceCollapseRatio': {
    why: "RAGEN-2's reward-variance rule is fixed (10 %), no key",
    sameAsRagen: (c) => !c.earlyStop.enabled || c.earlyStop.varianceCollapseRatio === 0.1,
  },
  'earlyStop.valSuccessThreshold': {
    why: "RAGEN-2's validation rule is fixed (1 %), no key",
    sameAsRagen: (c) => !c.earlyStop.enabled || c.earlyStop.valSuccessThreshold === 0.01,
  },
  'earlyStop.valCollapseValidations': {
    why: "RAGEN-2's validation rule is fixed (5 validations), no key",
    sameAsRagen: (c) => !c.earlyStop.enabled || c.earlyStop.valCollapseValidations === 5,
  },
  'collapse.enabled': {
    why: 'RAGEN v1 has no collapse diagnostics; RAGEN-2 runs them when collapse_detection.first_turn_enabled or multi_turn_enabled is true (emitted when on)',
    sameAsRagen: (c) => !c.collapse.enabled,
  },
  'collapse.microBatchSize': {
    why: "null (= actor.ppoMicroBatchSize) leaves collapse_detection.micro_batch_size at RAGEN-2's 128; it only bounds memory, the metrics are the same",
    sameAsRagen: always,
  },
  'trainer.seed': {
    why: 'RAGEN seeds no model initialisation or token sampling (vLLM samples unseeded); env seeds are seed.train / seed.val',
    sameAsRagen: always,
  },
  'trainer.backend': { why: 'RAGEN runs on CUDA (FSDP + vLLM)', sameAsRagen: always },
  'actor.maxStepKl': {
    why: "RAGEN's actor takes every optimizer step; it has no trust region that undoes a step by its KL",
    sameAsRagen: (c) => c.actor.maxStepKl === 0,
  },
  'actor.maxSuccessLogProbDrop': {
    why: "RAGEN's actor takes every optimizer step; it has no trust region that undoes a step by its successes' likelihood",
    sameAsRagen: (c) => c.actor.maxSuccessLogProbDrop === 0,
  },
  'trainer.stopAfterCollapse': {
    why: 'RAGEN has no stop on a training-success collapse: a run trains every step',
    sameAsRagen: (c) => c.trainer.stopAfterCollapse === 0,
  },
  'trainer.logRollouts': {
    why: 'RAGEN logs 20 validation generations to W&B (trainer.generations_to_log_to_wandb), not rollouts.jsonl',
    sameAsRagen: always,
  },
  'echoTrap.baselineSteps': {
    why: "the echo-trap early warning is this project's monitoring; RAGEN logs the raw signals only",
    sameAsRagen: always,
  },
  'echoTrap.fraction': { why: 'echo-trap monitoring only (no RAGEN equivalent)', sameAsRagen: always },
  'echoTrap.entropyFraction': { why: 'echo-trap monitoring only (no RAGEN equivalent)', sameAsRagen: always },
  'echoTrap.miFraction': { why: 'echo-trap monitoring only (no RAGEN equivalent)', sameAsRagen: always },
  'echoTrap.miBaselineValues': { why: 'echo-trap monitoring only (no RAGEN equivalent)', sameAsRagen: always },
  'echoTrap.miSample': { why: 'echo-trap monitoring only (no RAGEN equivalent)', sameAsRagen: always },
  'echoTrap.patience': { why: 'echo-trap monitoring only (no RAGEN equivalent)', sameAsRagen: always },
  'echoTrap.signals': { why: 'echo-trap monitoring only (no RAGEN equivalent)', sameAsRagen: always },
  'echoTrap.gradSpikeFactor': { why: 'echo-trap monitoring only (no RAGEN equivalent)', sameAsRagen: always },
  'echoTrap.gradMedianWindow': { why: 'echo-trap monitoring only (no RAGEN equivalent)', sameAsRagen: always },
  'echoTrap.gradMinHistory': { why: 'echo-trap monitoring only (no RAGEN equivalent)', sameAsRagen: always },
};

/** Fields the env-block mapping handles (es_manager.*.env_configs and custom_envs.<Tag>). */
export const ENV_BLOCK_FIELDS = ['agent.trainEnvs', 'agent.valEnvs', 'agent.maxActionsPerTraj'] as const;

/**
 * How each tag's rules differ from RAGEN's own env code (spec §2, §10.16): the same rules and distributions, but
 * not the same level for the same seed. Named in every export so that nobody compares runs seed by seed.
 */
export const ENV_RULE_DIFFERENCES: Record<string, string> = {
  Bandit:
    "arm order and the high arm's payoff come from this project's seeded PRNG, not NumPy's: the same seed gives another " +
    'draw in RAGEN (the distribution is the same: 50 % order swap, payoff 1.0 with probability 0.25)',
  BanditTest: 'as Bandit: another draw per seed in RAGEN, same distribution',
  SimpleSokoban:
    "levels come from this project's seeded generator (RAGEN uses Python random + NumPy, and re-seeds failed " +
    "generations with Python's salted string hash): the same seed gives a different level in RAGEN; generation rules, " +
    'reward and dynamics are the same',
  LargerSokoban: 'as SimpleSokoban: a different 8x8 level per seed in RAGEN, same generator rules',
  SokobanDifferentGridVocab: 'as SimpleSokoban: a different level per seed in RAGEN, same vocabulary and rules',
  CoordSokoban:
    'as SimpleSokoban: a different level per seed in RAGEN-2, same generator rules, same coordinate and grid rendering',
  FrozenLake:
    'the map and the slips come from two independent seeded streams here; RAGEN draws both from one NumPy stream ' +
    '(slips weakly correlated with the map, spec §10.16): a different map per seed in RAGEN, same map distribution and slip rule',
  CoordFrozenLake:
    "as FrozenLake: a different map per seed in RAGEN-2; the export pins p and success_rate to this run's lake, since " +
    "RAGEN-2's own CoordFrozenLake defaults to its v2 lake (p 0.9, success_rate 0.8)",
};

// ---------------------------------------------------------------------------------------------------------------
// RunConfig -> RAGEN
// ---------------------------------------------------------------------------------------------------------------

/** One thing a RAGEN run will not do as this run did. `key` is a RunConfig path (or `<block>.config.<key>`). */
export interface RagenWarning {
  key: string;
  value: unknown;
  message: string;
  /** False when RAGEN will behave differently from this run; true for informational notes. */
  harmless: boolean;
}

export interface RagenConfig {
  /** RAGEN path -> value, in emission order. */
  values: Map<string, unknown>;
  /** RAGEN paths that RAGEN v1's config does not have (Hydra needs `++` for them on a command line). */
  added: Set<string>;
  warnings: RagenWarning[];
  /** The env tags of the run (train and validation), for the rule-difference notes. */
  tags: string[];
}

export function getPath(obj: unknown, path: string): unknown {
  let node = obj;
  for (const segment of path.split('.')) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<string, unknown>)[segment];
  }
  return node;
}

function setPath(obj: Record<string, unknown>, path: string, value: unknown): void {
  const parts = path.split('.');
  let node = obj;
  for (const segment of parts.slice(0, -1)) {
    if (node[segment] === null || typeof node[segment] !== 'object') node[segment] = {};
    node = node[segment] as Record<string, unknown>;
  }
  node[parts[parts.length - 1]] = value;
}

const effectiveBudget = (c: RunConfig, b: EnvBlock) => b.maxActionsPerTraj ?? c.agent.maxActionsPerTraj ?? null;

/** What an export adds besides the run's config: where the model is, and the cluster it runs on. */
export interface RagenRunOptions {
  /** model_path: the exported actor (RAGEN's actor, reference and, without criticPath, critic start from it). */
  modelPath: string;
  /** critic.model.path: the exported critic of a PPO run, so the value model is not re-initialised. */
  criticPath?: string | null;
  /** The model's max_position_embeddings: vLLM refuses a max_model_len above it (RAGEN's default is 3600). */
  maxPositions: number;
  /** trainer.n_gpus_per_node and system.CUDA_VISIBLE_DEVICES (0 … n−1). */
  gpusPerNode: number;
  /** trainer.nnodes. */
  nodes: number;
  /** trainer.experiment_name (the W&B run name). */
  experimentName: string;
}

/** RAGEN's default rollout max_model_len (spec §5.1). */
export const RAGEN_MAX_MODEL_LEN = 3600;

/**
 * The RAGEN config values for `c`, with a warning for everything RAGEN cannot express or will do differently.
 */
export function toRagen(c: RunConfig, opts: RagenRunOptions): RagenConfig {
  const values = new Map<string, unknown>();
  const added = new Set<string>();
  const warnings: RagenWarning[] = [];
  const warn = (key: string, value: unknown, message: string, harmless = false) =>
    warnings.push({ key, value, message, harmless });

  values.set('model_path', opts.modelPath);
  if (opts.criticPath) values.set('critic.model.path', opts.criticPath);
  values.set('actor_rollout_ref.rollout.max_model_len', Math.min(RAGEN_MAX_MODEL_LEN, opts.maxPositions));
  values.set('trainer.experiment_name', opts.experimentName);
  values.set('trainer.nnodes', opts.nodes);
  values.set('trainer.n_gpus_per_node', opts.gpusPerNode);
  values.set('system.CUDA_VISIBLE_DEVICES', Array.from({ length: opts.gpusPerNode }, (_, i) => i).join(','));
  if (opts.gpusPerNode > 1) {
    // RAGEN asserts tensor-parallel size == GPU count unless told not to; a small model runs TP 1 on each GPU.
    values.set('actor_rollout_ref.rollout.tp_size_check', false);
  }
  const gpus = opts.gpusPerNode * opts.nodes;
  if (c.actor.ppoMiniBatchSize % gpus !== 0 || (c.actor.ppoMiniBatchSize / gpus) % c.actor.ppoMicroBatchSize !== 0) {
    warn(
      'actor.ppoMiniBatchSize',
      c.actor.ppoMiniBatchSize,
      `veRL splits ppo_mini_batch_size across the ${gpus} GPU(s) and each share must be a multiple of micro_batch_size_per_gpu ` +
        `(${c.actor.ppoMicroBatchSize}): ${c.actor.ppoMiniBatchSize} is not; raise it (and envGroups x groupSize x filter ratio with it)`,
    );
  }
  for (const k of SCALAR_KEYS) {
    if (k.when && !k.when(c)) continue;
    const ours = getPath(c, k.ours);
    values.set(k.ragen, k.toRagen ? k.toRagen(ours) : ours);
    if (k.v2) {
      added.add(k.ragen);
      warn(
        k.ours,
        ours,
        `emitted as ${k.ragen}, a RAGEN-2 key: RAGEN v1 rejects or ignores it (run this export on mll-lab-nu/RAGEN)`,
      );
    }
  }

  // Env blocks -> es_manager.<split>.env_configs, and each tag's custom_envs entry.
  const perTag = new Map<string, { from: string; entry: Record<string, unknown> }>();
  for (const [split, blocks] of [
    ['train', c.agent.trainEnvs],
    ['val', c.agent.valEnvs],
  ] as const) {
    values.set(
      `es_manager.${split}.env_configs.tags`,
      blocks.map((b) => b.tag),
    );
    values.set(
      `es_manager.${split}.env_configs.n_groups`,
      blocks.map((b) => b.nGroups),
    );
    blocks.forEach((b, i) => {
      const where = `agent.${split}Envs[${i}]`;
      const entry: Record<string, unknown> = {};
      const budget = effectiveBudget(c, b);
      if (budget !== null) entry.max_actions_per_traj = budget;
      if (b.maxTokens !== undefined) entry.max_tokens = b.maxTokens;
      const envConfig: Record<string, unknown> = {};
      if (V2_ONLY_TAGS.has(b.tag)) {
        warn(
          `${where}.tag`,
          b.tag,
          `${b.tag} is a RAGEN-2 env tag (mll-lab-nu/RAGEN config/envs.yaml): RAGEN v1 has no such custom_envs entry`,
        );
      }
      for (const [key, value] of Object.entries({ ...(PINNED_ENV_CONFIG[b.tag] ?? {}), ...(b.config ?? {}) })) {
        if (value === undefined) continue;
        const mapping = ENV_CONFIG_KEYS[envFamily(b.tag)].find((m) => m.ours === key);
        if (!mapping) {
          warn(
            `${where}.config.${key}`,
            value,
            `${b.tag}: ${ENV_CONFIG_UNMAPPABLE[key] ?? `RAGEN has no env_config key for '${key}'`}; dropped from the RAGEN config`,
          );
          continue;
        }
        Object.assign(envConfig, mapping.toRagen(value));
        if (mapping.v2)
          warn(
            `${where}.config.${key}`,
            value,
            `${b.tag}: env_config.${mapping.ragenKeys.join('/')} is a RAGEN-2 key; RAGEN v1's ${b.tag} config rejects it`,
          );
      }
      if (Object.keys(envConfig).length) entry.env_config = envConfig;
      const seen = perTag.get(b.tag);
      if (!seen) perTag.set(b.tag, { from: where, entry });
      else if (JSON.stringify(seen.entry) !== JSON.stringify(entry)) {
        warn(
          where,
          entry,
          `${b.tag} is configured differently in ${seen.from}; RAGEN configures env tags, not blocks (custom_envs.${b.tag}), so ${seen.from}'s settings apply to both`,
        );
      }
    });
  }
  for (const [tag, { entry }] of perTag) {
    if (entry.max_actions_per_traj !== undefined)
      values.set(`custom_envs.${tag}.max_actions_per_traj`, entry.max_actions_per_traj);
    if (entry.max_tokens !== undefined) values.set(`custom_envs.${tag}.max_tokens`, entry.max_tokens);
    for (const [key, value] of Object.entries((entry.env_config as Record<string, unknown>) ?? {})) {
      const path = `custom_envs.${tag}.env_config.${key}`;
      values.set(path, value);
      added.add(path); // env_config may be null in envs.yaml (FrozenLake): a plain override could not add to it
    }
  }

  for (const [key, info] of Object.entries(NO_RAGEN_KEY)) {
    // Fields emitted through a RAGEN-2 key above are not "without a key" for this config.
    if (SCALAR_KEYS.some((k) => k.ours === key && (!k.when || k.when(c)))) continue;
    const value = getPath(c, key);
    const same = info.sameAsRagen(c);
    warn(key, value, `no RAGEN key: ${info.why}`, same);
  }
  const tags = [...new Set([...c.agent.trainEnvs, ...c.agent.valEnvs].map((b) => b.tag))];
  return { values, added, warnings, tags };
}

// ---------------------------------------------------------------------------------------------------------------
// RAGEN -> RunConfig
// ---------------------------------------------------------------------------------------------------------------

/**
 * Reads a RAGEN config (a Hydra-composed config.yaml, W&B's config, or the values of an export's override list)
 * back into a partial RunConfig, through the same table. Keys it does not find keep our defaults; what cannot be
 * represented (an env tag this project lacks, an env_config key it does not know) is listed in `notImported`.
 */
export function fromRagen(ragen: Record<string, unknown>): { config: RunConfigInput; notImported: string[] } {
  const get = (path: string) => resolveInterpolation(ragen, getPath(ragen, path));
  const out: Record<string, unknown> = {};
  const notImported: string[] = [];
  const filterStrategy = get('actor_rollout_ref.rollout.rollout_filter_strategy');
  const v2 = typeof filterStrategy === 'string';
  for (const k of SCALAR_KEYS) {
    // The filter keys exist in two versions: read the one matching the strategy the config names.
    if (k.ours.startsWith('filter.') && k.when === ratioStrategy && v2) continue;
    if (k.ours.startsWith('filter.') && k.when === v2Strategy && !v2) continue;
    const value = get(k.ragen);
    if (value === undefined) continue;
    let ours = k.fromRagen ? k.fromRagen(value) : value;
    if (k.ours === 'filter.type') ours = FILTER_TYPE_FROM_RAGEN[String(value)] ?? value;
    setPath(out, k.ours, ours);
  }
  if (get('actor_rollout_ref.rollout.rollout_filter_empty_stop_steps') !== undefined)
    setPath(out, 'earlyStop.enabled', true);

  const collapseSwitches = [get('collapse_detection.first_turn_enabled'), get('collapse_detection.multi_turn_enabled')];
  if (collapseSwitches.some((v) => v !== undefined))
    setPath(
      out,
      'collapse.enabled',
      collapseSwitches.some((v) => v === true),
    );

  for (const split of ['train', 'val'] as const) {
    const tags = get(`es_manager.${split}.env_configs.tags`);
    const nGroups = get(`es_manager.${split}.env_configs.n_groups`);
    if (!Array.isArray(tags)) continue;
    const blocks: Record<string, unknown>[] = [];
    tags.forEach((tag: unknown, i: number) => {
      const name = String(tag);
      if (!ENV_TAGS.includes(name)) {
        notImported.push(
          `es_manager.${split}.env_configs.tags[${i}] = ${name}: no such env here (${ENV_TAGS.join(', ')})`,
        );
        return;
      }
      const block: Record<string, unknown> = { tag: name, nGroups: Array.isArray(nGroups) ? nGroups[i] : undefined };
      const entry = get(`custom_envs.${name}`) as Record<string, unknown> | undefined;
      if (entry && typeof entry === 'object') {
        if (typeof entry.max_actions_per_traj === 'number') block.maxActionsPerTraj = entry.max_actions_per_traj;
        if (typeof entry.max_tokens === 'number') block.maxTokens = entry.max_tokens;
        const envConfig = entry.env_config;
        if (envConfig && typeof envConfig === 'object') {
          const config: Record<string, unknown> = {};
          const used = new Set<string>();
          for (const m of ENV_CONFIG_KEYS[envFamily(name)]) {
            const raw = Object.fromEntries(
              m.ragenKeys.map((key) => [key, (envConfig as Record<string, unknown>)[key]]),
            );
            if (m.ragenKeys.every((key) => raw[key] !== undefined && raw[key] !== null)) {
              config[m.ours] = m.fromRagen(raw);
              m.ragenKeys.forEach((key) => used.add(key));
            }
          }
          // RAGEN's SokobanEnvConfig also takes dim_room directly.
          const dimRoom = (envConfig as Record<string, unknown>).dim_room;
          if (config.dimRoom === undefined && Array.isArray(dimRoom)) {
            config.dimRoom = dimRoom;
            used.add('dim_room');
          }
          for (const key of Object.keys(envConfig)) {
            if (!used.has(key) && !IMPLIED_BY_TAG.has(key))
              notImported.push(`custom_envs.${name}.env_config.${key}: not an env config key here`);
          }
          // What an export pins only because RAGEN's default differs is this tag's default here: leave it out.
          for (const [key, value] of Object.entries(PINNED_ENV_CONFIG[name] ?? {}))
            if (config[key] === value) delete config[key];
          if (Object.keys(config).length) block.config = config;
        }
      }
      blocks.push(block);
    });
    if (blocks.length) setPath(out, `agent.${split}Envs`, blocks);
  }
  return { config: out as RunConfigInput, notImported };
}

/** `${a.b}` (OmegaConf's interpolation, as a Hydra-composed config.yaml keeps it) resolved against the same config. */
function resolveInterpolation(root: Record<string, unknown>, value: unknown, depth = 0): unknown {
  if (typeof value !== 'string' || depth > 8) return value;
  const m = /^\$\{([\w.]+)\}$/.exec(value.trim());
  return m ? resolveInterpolation(root, getPath(root, m[1]), depth + 1) : value;
}

/**
 * A RAGEN config as written by Hydra (a nested object) or by W&B (each top-level key wrapped as
 * `{desc, value}`), unwrapped to the nested object.
 */
export function unwrapWandbConfig(raw: Record<string, unknown>): Record<string, unknown> {
  const entries = Object.entries(raw).filter(([k]) => !k.startsWith('_'));
  const wrapped =
    entries.length > 0 && entries.every(([, v]) => v !== null && typeof v === 'object' && 'value' in (v as object));
  return wrapped ? Object.fromEntries(entries.map(([k, v]) => [k, (v as { value: unknown }).value])) : raw;
}
