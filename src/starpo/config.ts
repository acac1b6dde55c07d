// The run configuration (`RunConfig`): every knob of a StarPO / StarPO-S run, validated before any work starts.
//
// The browser worker and the Node CLI build the same Trainer from the same RunConfig, so this file is pure
// TypeScript (zod + yaml, no tfjs, no fs). It holds:
//   * the zod schema, one section per part of RAGEN (model, agent, rollout, algorithm, actor, critic, filter,
//     earlyStop, trainer, collapse, echoTrap); every field says what it means, its unit, RAGEN's default and the RAGEN /
//     veRL key it maps to. docs/config.md is generated from these texts (tests/unit/starpo/config-doc.test.ts);
//   * defaultRunConfig(): RAGEN v1's config/base.yaml merged with veRL's defaults (spec §5.1), i.e. StarPO-S on
//     SimpleSokoban with Qwen2.5-0.5B-Instruct. Where RAGEN has two versions (v1 code / paper / v2) the v1 code
//     value is the default and the other is an option; the field's text says which;
//   * parseRunConfig / loadConfigText: a partial config (a YAML or JSON file, a preset) laid over those defaults,
//     then checked: unknown keys (with a "did you mean" suggestion), wrong types and cross-field rules all stop the
//     run with a ConfigError whose message names the key;
//   * applyOverrides: the CLI's `--set key.path=value` (values read as YAML scalars / flow collections);
//   * describeConfig / renderConfigDoc: the reference table of docs/config.md.
// Presets live in ./presets.ts.
import { z } from 'zod';
import YAML from 'yaml';
import { ENV_TAGS, assertEnvPlayable } from '../../envs/index';
import type { AgentFormat } from '../agent/index';
import { BACKEND_CHOICES } from '../model/backendNames';
import { MIN_TEMPERATURE } from '../model/config';
import { checkFilterConfigV1 } from './filter';

// ---------------------------------------------------------------------------------------------------------------
// Schema
// ---------------------------------------------------------------------------------------------------------------

/** veRL's `loss_agg_mode`s: how per-token losses become one number (each is explained at losses.ts aggregateLoss). */
export const LOSS_AGG_MODES = ['token-mean', 'seq-mean-token-mean', 'seq-mean-token-sum', 'seq-mean-token-sum-norm'] as const;
export type LossAggMode = (typeof LOSS_AGG_MODES)[number];

/** KL estimators of the in-reward penalty and the KL loss (each is explained at the top of kl.ts). */
export const KL_ESTIMATORS = ['kl', 'abs', 'mse', 'low_var_kl'] as const;
export type KlEstimator = (typeof KL_ESTIMATORS)[number];

const positiveInt = () => z.int().min(1);
const nonNegativeInt = () => z.int().min(0);
const probability = () => z.number().min(0).max(1);

/** Shape of a freshly initialised tiny Qwen2-style model (vocabulary size comes from the tokenizer). */
const TinyModelSchema = z.strictObject({
  hiddenSize: positiveInt().describe('Width of the residual stream (HF `hidden_size`; Qwen2.5-0.5B: 896).'),
  numLayers: positiveInt().describe('Decoder layers (HF `num_hidden_layers`; Qwen2.5-0.5B: 24).'),
  numHeads: positiveInt().describe('Query heads (HF `num_attention_heads`; Qwen2.5-0.5B: 14). Must divide hiddenSize.'),
  numKvHeads: positiveInt().describe(
    'Key/value heads of grouped-query attention (HF `num_key_value_heads`; Qwen2.5-0.5B: 2). Must divide numHeads.',
  ),
  intermediateSize: positiveInt().describe('Inner width of the SwiGLU MLP (HF `intermediate_size`; Qwen2.5-0.5B: 4864).'),
  ropeTheta: z.number().positive().describe('Rotary embedding base (HF `rope_theta`; Qwen2.5: 1000000).'),
  maxPositions: positiveInt().describe(
    'Longest sequence in tokens, prompt and all turns together (HF `max_position_embeddings`; RAGEN `max_model_len` 3600).',
  ),
});

const ModelSchema = z.strictObject({
  pretrained: z
    .string()
    .min(1)
    .nullable()
    .describe(
      'The Hugging Face model this run starts from, e.g. Qwen/Qwen2.5-0.5B-Instruct (RAGEN `model_path`, the actor, ' +
        'critic and reference all start from it). Nothing is downloaded: when set, `model.path` must point to a local ' +
        'copy before the run starts. null = a tiny model (see `model.tiny`, `model.warmStart`).',
    ),
  path: z
    .string()
    .min(1)
    .nullable()
    .describe(
      'Local checkpoint directory in Hugging Face Qwen2 format (config.json, model.safetensors, tokenizer.json). When ' +
        'set, the model (shape, weights, tokenizer) is loaded from here and `tiny` / `warmStart` are ignored. ' +
        '`--set model=PATH` is a shorthand for this key. No RAGEN equivalent (RAGEN downloads `model_path`).',
    ),
  warmStart: z
    .string()
    .min(1)
    .nullable()
    .describe(
      'Warm-start checkpoint of a tiny model, relative to `public/` (served at the site root in the browser), made by ' +
        '`ragen warmstart` (supervised fine-tuning on solver demonstrations). null = random initialisation, which ' +
        'cannot emit the <think>/<answer> format. No RAGEN equivalent (RAGEN starts from an instruct model).',
    ),
  tiny: TinyModelSchema.describe(
    'Shape used when a tiny model is created from scratch (`ragen warmstart`, or no warmStart). A checkpoint brings ' +
      'its own config.json, which wins when one is loaded.',
  ),
  promptStyle: z
    .enum(['ragen', 'compact'])
    .describe(
      "'ragen' = RAGEN's exact prompt text and the Qwen chat template (for Qwen checkpoints); 'compact' = a short " +
        'prompt over the tiny vocabulary built from the environments\' text (for tiny models). No RAGEN key.',
    ),
  enableThink: z
    .boolean()
    .describe(
      'Ask for `<think>…</think><answer>…</answer>` and force the `<think>` prefix; false = `<answer>` only, the ' +
        "paper's NoThinking ablation (RAGEN `agent_proxy.enable_think`, true).",
    ),
  gradientCheckpointing: z
    .boolean()
    .describe(
      'Recompute each decoder layer in the backward pass instead of keeping its activations (actor and critic): about a ' +
        'third more update compute for a fraction of the memory; the same numbers to float rounding. Off by default ' +
        '(the tiny models need no saving), on in sokoban-qwen as in RAGEN (`actor_rollout_ref.model.' +
        'enable_gradient_checkpointing`, true; not exported: it changes memory, not maths).',
    ),
});

/** One block of env groups sharing a tag (RAGEN `es_manager.<split>.env_configs.tags` / `n_groups`). */
const EnvBlockSchema = z.strictObject({
  tag: z.string().describe(`Environment tag, one of: ${ENV_TAGS.join(', ')} (RAGEN \`custom_envs\` key).`),
  nGroups: positiveInt().describe('Env groups of this tag (RAGEN `n_groups`); the blocks of a split must sum to its group count.'),
  config: z
    .record(z.string(), z.unknown())
    .optional()
    .describe(
      "Env config, camelCase of RAGEN's `custom_envs.<Tag>.env_config` (e.g. Sokoban `dimRoom`, `numBoxes`; FrozenLake " +
        "`size`, `p`, `successRate`; both `observationFormat`: 'grid', 'coord' or 'grid_coord', RAGEN-2's " +
        '`observation_format`; Bandit arm names/scores). Omitted = the tag\'s RAGEN defaults. Checked by the env ' +
        'before any work, with one trial reset: rooms and maps at most 20 cells a side, a `level` must be solvable, ' +
        'a `map` must have a path, and the generator must manage to build a level from the config.',
    ),
  maxActionsPerTraj: positiveInt()
    .optional()
    .describe('Primitive-action budget per episode for this block (RAGEN `custom_envs.<Tag>.max_actions_per_traj`). Omitted = agent.maxActionsPerTraj, else the tag\'s default.'),
  maxTokens: positiveInt()
    .optional()
    .describe('N of "Max response length: N words (tokens)." in the prompt (RAGEN `custom_envs.<Tag>.max_tokens`; grid envs 100). Omitted = the tag\'s default.'),
});

const AgentSchema = z.strictObject({
  trainEnvs: z
    .array(EnvBlockSchema)
    .min(1)
    .describe('Training env blocks, in group order (RAGEN `es_manager.train.env_configs`; default SimpleSokoban × 8).'),
  valEnvs: z
    .array(EnvBlockSchema)
    .min(1)
    .describe('Validation env blocks (RAGEN `es_manager.val.env_configs`; default SimpleSokoban × 256).'),
  envGroups: positiveInt().describe(
    'P: env groups per training step, i.e. distinct initial states (RAGEN `es_manager.train.env_groups`, 8).',
  ),
  groupSize: positiveInt().describe(
    'N: rollouts per env group, all reset with the same seed (RAGEN `es_manager.train.group_size`, 16). P × N ' +
      'trajectories per step.',
  ),
  valGroups: positiveInt().describe('Validation env groups = fixed initial states, seeds seedVal … seedVal+valGroups−1 (RAGEN `es_manager.val.env_groups`, 256).'),
  valGroupSize: positiveInt().describe('Rollouts per validation group (RAGEN `es_manager.val.group_size`, 1).'),
  maxTurn: positiveInt().describe('K: most turns (LLM calls) per episode (RAGEN `agent_proxy.max_turn`, 5; Bandit 1).'),
  maxActionsPerTurn: positiveInt().describe(
    'Most primitive actions kept from one answer (split on actionSep); extra ones are dropped (RAGEN ' +
      '`agent_proxy.max_actions_per_turn`, 5; v2: 2).',
  ),
  maxActionsPerTraj: positiveInt()
    .nullable()
    .describe(
      'Primitive-action budget per episode for every block without its own (RAGEN `custom_envs.<Tag>.max_actions_per_traj`). ' +
        'null = each tag\'s RAGEN default: Sokoban and FrozenLake 10, Bandit 1.',
    ),
  actionSep: z.string().min(1).describe('Separator between actions in an answer (RAGEN `agent_proxy.action_sep`, `||`).'),
  formatPenalty: z
    .number()
    .max(0)
    .describe(
      'Added to the trajectory reward once per turn whose answer was malformed or held an invalid action (RAGEN ' +
        '`es_manager.format_penalty`, −0.1). Not seen by the uncertainty filter.',
    ),
  maxContextWindow: z
    .int()
    .refine((v) => v === -1 || v >= 1, 'must be -1 (full history) or at least 1')
    .describe(
      'Render only the last k history records (turns) in the prompt; −1 = the full history (RAGEN ' +
        '`agent_proxy.max_context_window`, −1).',
    ),
  turnNumbers: z
    .enum(['window', 'episode'])
    .describe(
      "How the prompt numbers the turns it shows. 'window' (RAGEN): from 1 inside the context window, so with " +
        "maxContextWindow 1 every prompt says turn 1. 'episode': each turn's number in the episode, so a policy that " +
        'sees one turn can still tell how many turns it has left (RAGEN has no key; its prompts number inside the window).',
    ),
  contextWindowMode: z
    .enum(['full', 'single_turn'])
    .describe(
      "How a trajectory is trained (RAGEN-2 `agent_proxy.context_window_mode`; RAGEN v1 has only 'full'). 'full' = " +
        "one sequence per trajectory: its whole dialogue (or the last maxContextWindow turns of it). 'single_turn' = " +
        'one sample per turn, its prompt as the policy saw it when answering (the last maxContextWindow turns), only ' +
        "that turn's response trained, every sample with its trajectory's score; the uncertainty filter still keeps " +
        'whole env groups, and mini-batches count samples (a step makes more optimizer steps). With maxContextWindow ' +
        '1 every sample is one observation and one answer: short sequences, the same prompt shape in every turn.',
    ),
  seedTrain: nonNegativeInt()
    .nullable()
    .describe(
      'Base seed of training resets: reset k gives group i the seed seedTrain + envGroups·k + i (RAGEN `seed.train`, ' +
        '10000). null = a random base seed per reset, as RAGEN without a seed.',
    ),
  seedVal: nonNegativeInt().describe('Base seed of the fixed validation set (RAGEN `seed.val`, 123 → seeds 123…378).'),
  banditPerInstanceSeed: z
    .boolean()
    .describe(
      'false = RAGEN v1: every member of a group is reset with the group seed, so in Bandit all N rollouts see the ' +
        'same hi-arm draw (spec §10.10). true = RAGEN v2\'s fix: member j uses group seed + j. Bandit tags only.',
    ),
});

const RolloutSchema = z.strictObject({
  temperature: z
    .number()
    .min(MIN_TEMPERATURE)
    .describe(
      `Sampling temperature of training rollouts, at least ${MIN_TEMPERATURE}; the update scores the actor and the reference ` +
        'at it too, as veRL does (RAGEN `actor_rollout_ref.rollout.temperature`, 1.0).',
    ),
  topP: z.number().gt(0).max(1).describe('Nucleus sampling mass; 1 = off (RAGEN `actor_rollout_ref.rollout.top_p`, 1.0).'),
  topK: z
    .int()
    .refine((v) => v === -1 || v >= 1, 'must be -1 (off) or at least 1')
    .describe('Sample among the k most likely tokens; −1 = off (RAGEN `actor_rollout_ref.rollout.top_k`, −1).'),
  maxNewTokens: positiveInt().describe(
    'Most tokens generated per turn; generation also stops at the end-of-turn token (RAGEN ' +
      '`actor_rollout_ref.rollout.response_length`, 400; Bandit 500).',
  ),
  valTemperature: z
    .number()
    .min(MIN_TEMPERATURE)
    .describe(
      `Temperature of validation rollouts, at least ${MIN_TEMPERATURE}; greedy validation is valDoSample false ` +
        '(RAGEN `actor_rollout_ref.rollout.val_kwargs.temperature`, 0.5).',
    ),
  valDoSample: z
    .boolean()
    .describe('Sample during validation; false = greedy (RAGEN `actor_rollout_ref.rollout.val_kwargs.do_sample`, true).'),
  maxBatchSize: positiveInt().describe(
    'Most rollouts generated together in one batch (one batched prefill and decode, each batch keeping its KV cache ' +
      'across turns; batches run one after another). Bounds the prefill and decode temporaries, which grow with it; ' +
      'the same tokens whatever its value. Default 128, the paper step (8 env groups x 16). No RAGEN key (vLLM ' +
      'schedules its own batches).',
  ),
});

const AlgorithmSchema = z.strictObject({
  advEstimator: z
    .enum(['gae', 'grpo'])
    .describe(
      "'gae' = PPO with a critic, token-level GAE then whitening (RAGEN default, StarPO-S); 'grpo' = no critic, " +
        'group-normalised trajectory reward broadcast over its tokens; needs rewardNormalization.method mean_std (GRPO) ' +
        'or mean (Dr.GRPO) (RAGEN `algorithm.adv_estimator`, gae).',
    ),
  gamma: probability().describe('Discount γ of GAE over tokens (RAGEN `algorithm.gamma`, 1.0).'),
  lambda: probability().describe('GAE λ (RAGEN `algorithm.lam`, 1.0). With γ = λ = 1 and a terminal reward, A_t = R − V_t.'),
  rewardNormalization: z
    .strictObject({
      grouping: z
        .enum(['state', 'inductive', 'batch'])
        .describe(
          "Which trajectories are normalised together: 'state' = one env group, 'inductive' = one env tag, 'batch' = " +
            'all (RAGEN `agent_proxy.reward_normalization.grouping`, state).',
        ),
      method: z
        .enum(['identity', 'mean_std', 'asym_clip', 'mean'])
        .describe(
          "'identity' = raw rewards; 'mean_std' = (R − mean)/(std + 1e−6), unbiased std, zeros when std ≤ 1e−6; " +
            "'asym_clip' = mean_std clamped to [−1, 3]; 'mean' = R − mean. Applied after the format penalty " +
            '(RAGEN `agent_proxy.reward_normalization.method`, identity).',
        ),
    })
    .describe('Trajectory-reward normalisation before advantages (RAGEN `agent_proxy.reward_normalization`).'),
  grpoLengthWeight: z
    .boolean()
    .describe(
      "GRPO only: divide each trajectory's advantage by its loss-token count relative to the batch mean (RAGEN " +
        '`grpo_advantage_length_weight`, false).',
    ),
  stepAdvantage: z
    .strictObject({
      weight: z
        .number()
        .min(0)
        .describe(
          "ω: each turn sample's advantage is the episode-level GRPO advantage plus ω × its step-level advantage; 0 = " +
            'off (plain GRPO). Needs advEstimator grpo and agent.contextWindowMode single_turn (GiGPO uses 1.0).',
        ),
      gamma: probability().describe('Discount γ of the turn rewards in the return-to-go of each turn (GiGPO 0.95).'),
      method: z
        .enum(['mean_std', 'mean'])
        .describe("Normalisation of the returns-to-go within an anchor-state group: 'mean_std' or 'mean' (GiGPO mean_std_norm / mean_norm)."),
    })
    .describe(
      "GiGPO's step-level credit (Feng et al. 2025; verl-agent, not RAGEN): turns of one env group that start from the " +
        'same observation form an anchor-state group, and a turn is credited by how its return-to-go compares with the ' +
        'others from that state. A format penalty counts in the last turn of its trajectory.',
    ),
  responseMaskOnly: z
    .boolean()
    .describe(
      'true = the loss covers assistant turns only (RAGEN `enable_response_mask`, true since 2025-05); false = the ' +
        "April-2025 paper's setting, everything after the system prompt (env states and reward messages too).",
    ),
  useKlInReward: z
    .boolean()
    .describe(
      'Fold a KL penalty −klCoef·KL(π_old‖π_ref) into the per-token reward (RAGEN `algorithm.use_kl_in_reward`, ' +
        "false). Vanilla StarPO (PPO) as run for the paper: true with klCoef 0.001.",
    ),
  klCoef: z
    .number()
    .min(0)
    .describe('Coefficient β of the in-reward KL penalty, fixed controller (RAGEN `algorithm.kl_ctrl.kl_coef`, 0.0; vanilla 0.001).'),
  klEstimator: z
    .enum(KL_ESTIMATORS)
    .describe("KL estimator of the in-reward penalty: 'kl' = k1 (log π − log π_ref), 'low_var_kl' = k3 (RAGEN `algorithm.kl_penalty`, kl)."),
});

const betas = () =>
  z
    .tuple([z.number().min(0).lt(1), z.number().min(0).lt(1)])
    .describe('AdamW (β1, β2) (veRL optim default [0.9, 0.999]).');

const ActorSchema = z.strictObject({
  lr: z.number().positive().describe('AdamW learning rate of the policy, constant, no warm-up (RAGEN `actor_rollout_ref.actor.optim.lr`, 1e−6).'),
  betas: betas(),
  weightDecay: z.number().min(0).describe('AdamW decoupled weight decay (veRL `actor.optim.weight_decay`, 0.01).'),
  gradClip: z.number().positive().describe('Clip the global gradient norm to this; a non-finite norm skips the step (RAGEN `actor_rollout_ref.actor.grad_clip`, 1.0).'),
  clipRatioLow: z
    .number()
    .positive()
    .lt(1)
    .describe('ε_low: the importance ratio is clipped below at 1 − ε_low (RAGEN `actor_rollout_ref.actor.clip_ratio_low`, 0.2).'),
  clipRatioHigh: z
    .number()
    .positive()
    .describe(
      'ε_high: clipped above at 1 + ε_high; StarPO-S "clip-higher" 0.28, vanilla StarPO 0.2 (RAGEN ' +
        '`actor_rollout_ref.actor.clip_ratio_high`, 0.28).',
    ),
  clipRatioC: z
    .number()
    .gt(1)
    .describe('Dual-clip constant c (> 1): for A < 0 the token loss is capped at −A·c (RAGEN `actor_rollout_ref.actor.clip_ratio_c`, 3.0).'),
  entropyCoeff: z.number().min(0).describe('Entropy bonus: actor loss = pg_loss − coeff·entropy (RAGEN `actor_rollout_ref.actor.entropy_coeff`, 0.001).'),
  useKlLoss: z.boolean().describe('Add a KL(π‖π_ref) term to the actor loss, as GRPO runs do (RAGEN `actor_rollout_ref.actor.use_kl_loss`, false).'),
  klLossCoef: z.number().min(0).describe('Coefficient of that KL loss (RAGEN `actor_rollout_ref.actor.kl_loss_coef`, 0.0; vanilla GRPO 0.001).'),
  klLossType: z
    .enum(KL_ESTIMATORS)
    .describe('Estimator of the KL loss (RAGEN `actor_rollout_ref.actor.kl_loss_type`, kl).'),
  lossAggMode: z
    .enum(LOSS_AGG_MODES)
    .describe(
      'How token losses become one number: token-mean over the micro-batch\'s loss tokens (RAGEN default), or a mean ' +
        'over sequences of token means / sums (RAGEN `actor_rollout_ref.actor.loss_agg_mode`, token-mean).',
    ),
  ppoMiniBatchSize: positiveInt().describe(
    'Trajectories per optimizer step; the kept batch is split into mini-batches (RAGEN ' +
      '`actor_rollout_ref.actor.ppo_mini_batch_size`, 32; also used by the critic).',
  ),
  ppoMicroBatchSize: positiveInt().describe(
    'Trajectories per forward/backward pass, gradients accumulated up to a mini-batch: a memory knob that must divide ' +
      'ppoMiniBatchSize (RAGEN `micro_batch_size_per_gpu`, 1; paper: 4).',
  ),
  ppoEpochs: positiveInt().describe('Passes over each rollout batch (RAGEN `actor_rollout_ref.actor.ppo_epochs`, 1).'),
});

const CriticSchema = z
  .strictObject({
    lr: z.number().positive().describe('AdamW learning rate of the value model (RAGEN `critic.optim.lr`, 1e−5).'),
    betas: betas(),
    weightDecay: z.number().min(0).describe('AdamW weight decay of the critic (veRL `critic.optim.weight_decay`, 0.01).'),
    gradClip: z.number().positive().describe('Global gradient-norm clip of the critic (RAGEN `critic.grad_clip`, 1.0).'),
    cliprangeValue: z
      .number()
      .positive()
      .describe('Value clipping: V is kept within V_old ± this in the clipped value loss (RAGEN `critic.cliprange_value`, 0.5).'),
  })
  .describe('The value model of PPO (advEstimator gae); mini/micro-batching follow the actor. Ignored by grpo.');

const FilterSchema = z.strictObject({
  strategy: z
    .enum(['ratio', 'top_p', 'top_k', 'top_k_abs', 'min_p'])
    .describe(
      "'ratio' = RAGEN v1's StarPO-S filter: keep floor(ratio × envGroups) groups ranked by in-group reward std (the " +
        "default). The others are RAGEN-2's SNR-adaptive filter (`actor_rollout_ref.rollout.rollout_filter_strategy`), " +
        'parameterised by `value`.',
    ),
  ratio: z
    .number()
    .gt(0)
    .max(1)
    .describe(
      'strategy ratio: fraction of env groups kept; 0.25 = StarPO-S (8 → 2 groups), 1 = no filter, vanilla StarPO ' +
        '(RAGEN `actor_rollout_ref.rollout.rollout_filter_ratio`, 0.25).',
    ),
  type: z
    .enum(['std', 'std_rev'])
    .describe(
      "'std' keeps the most uncertain groups (largest score), 'std_rev' the least (an ablation) (RAGEN " +
        "`rollout_filter_type`, std; v2 spells them largest / smallest).",
    ),
  value: z
    .number()
    .positive()
    .describe(
      'v2 strategies only: top_p mass (≥ 1 keeps all), top_k fraction of groups, top_k_abs group count, min_p ratio ' +
        'to the best score (RAGEN-2 `rollout_filter_value`, 1.0).',
    ),
  includeZero: z
    .boolean()
    .describe('v2 only: false = never keep a group whose score is 0 (RAGEN-2 `rollout_filter_include_zero`, true; recommended false).'),
  topPProbMode: z
    .enum(['linear', 'softmax'])
    .describe("v2 top_p only: cumulative share of the raw scores ('linear') or of their softmax (RAGEN-2 `rollout_filter_top_p_prob_mode`, linear)."),
  selectionEps: z.number().min(0).describe('v2 linear top_p only: the threshold is value·Σscores − eps (RAGEN-2 `rollout_filter_selection_eps`, 0.01).'),
  metric: z
    .enum(['reward_variance', 'reward', 'reward_sum', 'entropy', 'entropy_variance', 'length'])
    .describe(
      "v2 only: the per-group score ranked; 'reward_variance' = in-group reward std, the v1 criterion (RAGEN-2 " +
        '`rollout_filter_metric`, reward_variance).',
    ),
  lossScaling: z
    .enum(['none', 'linear', 'sqrt'])
    .describe('v2 only: scale advantages by the kept fraction of groups or its square root (RAGEN-2 `filter_loss_scaling`, none).'),
});

const EarlyStopSchema = z.strictObject({
  enabled: z
    .boolean()
    .describe('Stop a run that entered a regime it cannot learn from (RAGEN-2 trainer; off here by default for parity with RAGEN v1).'),
  emptyStopSteps: nonNegativeInt().describe('Stop after this many consecutive steps whose filter kept nothing; 0 = never (RAGEN-2 `rollout_filter_empty_stop_steps`, 5).'),
  varianceBaselineSteps: nonNegativeInt().describe('Reward-variance collapse: baseline = mean in-group reward std of the first this-many steps; 0 = rule off (RAGEN-2, 10).'),
  varianceCollapseSteps: positiveInt().describe('…stop when this many consecutive later steps are below the threshold (RAGEN-2, 10).'),
  varianceCollapseRatio: probability().describe('…threshold as a fraction of the baseline (RAGEN-2, 0.1).'),
  valSuccessThreshold: probability().describe('Validation collapse: a success rate below this counts as collapsed (RAGEN-2, 0.01).'),
  valCollapseValidations: nonNegativeInt().describe('…stop after this many consecutive collapsed validations of one env; 0 = rule off (RAGEN-2, 5).'),
});

const TrainerSchema = z.strictObject({
  totalSteps: positiveInt().describe('Rollout-then-update iterations (RAGEN `trainer.total_training_steps`, 200). CLI `--steps`.'),
  testFreq: nonNegativeInt().describe('Validate every k steps and after the last one; 0 = never (RAGEN `trainer.test_freq`, 10).'),
  valBeforeTrain: z.boolean().describe('Validate once before the first update (RAGEN `trainer.val_before_train`, true).'),
  saveFreq: nonNegativeInt().describe(
    'Write checkpoints/step-N every k steps and after the last one; 0 = never (RAGEN `trainer.save_freq`, −1 = never).',
  ),
  keepCheckpoints: nonNegativeInt().describe('Keep only the newest k checkpoints; 0 = keep all (RAGEN-2 `max_actor_ckpt_to_keep`, all).'),
  seed: nonNegativeInt().describe('Seed of model initialisation and token sampling (RAGEN: none; env seeds are agent.seedTrain/seedVal). CLI `--seed`.'),
  backend: z.enum(BACKEND_CHOICES).describe("tfjs backend; 'auto' = webgpu on a GPU adapter (a software one such as SwiftShader is passed over), else wasm, else cpu, announced (no RAGEN equivalent). CLI `--backend`."),
  logRollouts: nonNegativeInt().describe('Sample trajectories per step written to rollouts.jsonl with their think/answer text (RAGEN logs 20 val generations).'),
});

const CollapseSchema = z
  .strictObject({
    enabled: z
      .boolean()
      .describe(
        "Compute RAGEN-2's collapse diagnostics (src/metrics/collapse.ts): the mutual information between prompts and " +
          'reasoning from a cross-scored log-prob matrix. RAGEN v1 has none, so off by default; RAGEN-2 turns it on with ' +
          '`collapse_detection.first_turn_enabled` / `multi_turn_enabled`. Costs extra forward passes on the diagnosed steps.',
      ),
    computeFreq: positiveInt().describe('Diagnose step 1 and every k-th step (RAGEN-2 `collapse_detection.compute_freq`, 5).'),
    numSamples: z
      .union([positiveInt(), z.literal('all')])
      .describe(
        "(x, z) pairs sampled per strategy, or 'all' (RAGEN-2 `collapse_detection.num_samples`, 64). Cost: first-turn " +
          'samples × env groups scored sequences, trajectory samples × trajectory samples (each sample is its own prompt).',
      ),
    firstTurn: z
      .boolean()
      .describe('Log `collapse_first_turn_sample/*`: first turns, one prompt per env group (RAGEN-2 `collapse_detection.first_turn_enabled`, true).'),
    trajectory: z
      .boolean()
      .describe(
        'Log `collapse_trajectory_sample/*` and `collapse/valid_thinking_rate`: a trajectory, then one of its turns, ' +
          'uniformly (RAGEN-2 `collapse_detection.multi_turn_enabled`, true).',
      ),
    microBatchSize: positiveInt()
      .nullable()
      .describe(
        'Sequences per forward pass of the cross-scoring (all with the same prompt); null = actor.ppoMicroBatchSize, ' +
          'which already fits the memory of a training pass (RAGEN-2 `collapse_detection.micro_batch_size`, 128).',
      ),
    stdEps: z.number().positive().describe('ε in the MI z-score (matched − marginal) / (std(marginal) + ε) (RAGEN-2 `collapse_detection.std_eps`, 1e−3).'),
    emaDecay: z
      .number()
      .min(0)
      .lt(1)
      .describe('Decay of the moving average of std(marginal) in `mi_zscore_ema` (RAGEN-2 `collapse_detection.ema_decay`, 0.9).'),
  })
  .describe("RAGEN-2's collapse diagnostics (spec §4.7): is the reasoning still input-dependent? Needs model.enableThink.");

const EchoTrapSchema = z
  .strictObject({
    baselineSteps: positiveInt().describe('Steps averaged into the baselines of in-group reward std and entropy (their first finite values).'),
    fraction: z.number().gt(0).max(1).describe('In-group reward std is low below this fraction of its baseline; the warning always needs it low.'),
    entropyFraction: z.number().gt(0).max(1).describe('Entropy (`actor/entropy_loss`) is low below this fraction of its baseline.'),
    miFraction: z
      .number()
      .gt(0)
      .max(1)
      .describe('The MI z-score EMA of the collapse diagnostics is low below this fraction of its baseline (needs collapse.enabled).'),
    miBaselineValues: positiveInt().describe(
      'MI measurements averaged into its baseline (it is measured every collapse.computeFreq steps, from step 1).',
    ),
    miSample: z
      .enum(['first_turn', 'trajectory'])
      .describe("Which collapse sample the MI signal reads: `collapse_first_turn_sample/mi_zscore_ema` or `collapse_trajectory_sample/...`."),
    patience: positiveInt().describe('Consecutive low steps before the warning fires.'),
    signals: z
      .enum(['reward_std_and_entropy_or_mi', 'reward_std_and_entropy', 'reward_std'])
      .describe(
        "What must be low besides the reward std: entropy or the MI z-score EMA, whichever is known (the paper's early " +
          "warning plus RAGEN-2's template collapse); entropy (the paper's); nothing (RAGEN-2's reward-variance collapse rule).",
      ),
    gradSpikeFactor: z.number().gt(1).describe('A gradient norm above this multiple of its running median is a spike (collapse confirmed).'),
    gradMedianWindow: positiveInt().describe('Previous finite gradient norms in that running median.'),
    gradMinHistory: positiveInt().describe('No spike is flagged before this many gradient norms were seen.'),
  })
  .describe(
    "The echo-trap early warning of src/metrics/echoTrap.ts (paper App. B.3: reward std and entropy drop before collapse; " +
      "RAGEN-2: input dependence of the reasoning drops). Logs `echo_trap/warning` and `echo_trap/signal` (what fired). Not in RAGEN's config.",
  );

export const RunConfigSchema = z
  .strictObject({
    model: ModelSchema.describe('The policy: a tiny model or a local Hugging Face Qwen2 checkpoint, and its prompt format.'),
    agent: AgentSchema.describe("The multi-turn agent: env groups, turn and action budgets, seeds (RAGEN `es_manager` + `agent_proxy`)."),
    rollout: RolloutSchema.describe('Token sampling during rollouts (RAGEN `actor_rollout_ref.rollout`).'),
    algorithm: AlgorithmSchema.describe('Advantages, reward normalisation, loss mask and KL-in-reward (RAGEN `algorithm` + `agent_proxy`).'),
    actor: ActorSchema.describe('The PPO policy update (RAGEN `actor_rollout_ref.actor`).'),
    critic: CriticSchema,
    filter: FilterSchema.describe('StarPO-S uncertainty filtering of env groups by in-group reward std (spec §4.5, §4.7).'),
    earlyStop: EarlyStopSchema.describe("RAGEN-2's early stopping (spec §4.7); consumed by src/starpo/earlyStop.ts."),
    trainer: TrainerSchema.describe('The training loop, validation, checkpoints and backend (RAGEN `trainer`).'),
    collapse: CollapseSchema,
    echoTrap: EchoTrapSchema,
  })
  .superRefine((config, ctx) => {
    for (const problem of crossFieldProblems(config)) ctx.addIssue({ code: 'custom', path: problem.path, message: problem.message });
  });

export type RunConfig = z.output<typeof RunConfigSchema>;
export type ModelConfig = RunConfig['model'];
export type AgentConfig = RunConfig['agent'];
export type EnvBlock = AgentConfig['trainEnvs'][number];
export type RolloutConfig = RunConfig['rollout'];
export type AlgorithmConfig = RunConfig['algorithm'];
export type ActorConfig = RunConfig['actor'];
export type CriticConfig = RunConfig['critic'];
export type FilterConfig = RunConfig['filter'];
export type EarlyStopSettings = RunConfig['earlyStop'];
export type TrainerConfig = RunConfig['trainer'];
export type CollapseConfig = RunConfig['collapse'];
export type EchoTrapSettings = RunConfig['echoTrap'];

/** Any part of a RunConfig, as written in a config file or a preset; missing keys come from the defaults. */
export type DeepPartial<T> = T extends readonly unknown[]
  ? T
  : T extends object
    ? { [K in keyof T]?: DeepPartial<T[K]> }
    : T;
export type RunConfigInput = DeepPartial<RunConfig>;

// ---------------------------------------------------------------------------------------------------------------
// RAGEN's defaults
// ---------------------------------------------------------------------------------------------------------------

/**
 * RAGEN v1's config/base.yaml merged with veRL's defaults (spec §5.1): StarPO-S (PPO + critic, top-25 % filter,
 * no KL, clip 0.2/0.28) on SimpleSokoban with Qwen2.5-0.5B-Instruct, 8 × 16 rollouts, 5 turns × 5 actions.
 * It parses, but cannot run until `model.path` names a local copy of the model (assertRunnable).
 * A fresh object each call: callers may mutate it.
 */
export function defaultRunConfig(): RunConfig {
  return {
    model: {
      pretrained: 'Qwen/Qwen2.5-0.5B-Instruct',
      path: null,
      warmStart: null,
      tiny: { hiddenSize: 64, numLayers: 2, numHeads: 4, numKvHeads: 2, intermediateSize: 192, ropeTheta: 10000, maxPositions: 1024 },
      promptStyle: 'ragen',
      enableThink: true,
      gradientCheckpointing: false,
    },
    agent: {
      trainEnvs: [{ tag: 'SimpleSokoban', nGroups: 8 }],
      valEnvs: [{ tag: 'SimpleSokoban', nGroups: 256 }],
      envGroups: 8,
      groupSize: 16,
      valGroups: 256,
      valGroupSize: 1,
      maxTurn: 5,
      maxActionsPerTurn: 5,
      maxActionsPerTraj: null,
      actionSep: '||',
      formatPenalty: -0.1,
      maxContextWindow: -1,
      turnNumbers: 'window',
      contextWindowMode: 'full',
      seedTrain: 10000,
      seedVal: 123,
      banditPerInstanceSeed: false,
    },
    rollout: { temperature: 1.0, topP: 1.0, topK: -1, maxNewTokens: 400, valTemperature: 0.5, valDoSample: true, maxBatchSize: 128 },
    algorithm: {
      advEstimator: 'gae',
      gamma: 1.0,
      lambda: 1.0,
      rewardNormalization: { grouping: 'state', method: 'identity' },
      grpoLengthWeight: false,
      stepAdvantage: { weight: 0, gamma: 0.95, method: 'mean_std' },
      responseMaskOnly: true,
      useKlInReward: false,
      klCoef: 0.0,
      klEstimator: 'kl',
    },
    actor: {
      lr: 1e-6,
      betas: [0.9, 0.999],
      weightDecay: 0.01,
      gradClip: 1.0,
      clipRatioLow: 0.2,
      clipRatioHigh: 0.28,
      clipRatioC: 3.0,
      entropyCoeff: 0.001,
      useKlLoss: false,
      klLossCoef: 0.0,
      klLossType: 'kl',
      lossAggMode: 'token-mean',
      ppoMiniBatchSize: 32,
      ppoMicroBatchSize: 1,
      ppoEpochs: 1,
    },
    critic: { lr: 1e-5, betas: [0.9, 0.999], weightDecay: 0.01, gradClip: 1.0, cliprangeValue: 0.5 },
    filter: {
      strategy: 'ratio',
      ratio: 0.25,
      type: 'std',
      value: 1.0,
      includeZero: true,
      topPProbMode: 'linear',
      selectionEps: 0.01,
      metric: 'reward_variance',
      lossScaling: 'none',
    },
    earlyStop: {
      enabled: false,
      emptyStopSteps: 5,
      varianceBaselineSteps: 10,
      varianceCollapseSteps: 10,
      varianceCollapseRatio: 0.1,
      valSuccessThreshold: 0.01,
      valCollapseValidations: 5,
    },
    trainer: {
      totalSteps: 200,
      testFreq: 10,
      valBeforeTrain: true,
      saveFreq: 0,
      keepCheckpoints: 0,
      seed: 0,
      backend: 'auto',
      logRollouts: 4,
    },
    collapse: { enabled: false, computeFreq: 5, numSamples: 64, firstTurn: true, trajectory: true, microBatchSize: null, stdEps: 1e-3, emaDecay: 0.9 },
    echoTrap: {
      baselineSteps: 5,
      fraction: 0.3,
      entropyFraction: 0.3,
      miFraction: 0.3,
      miBaselineValues: 2,
      miSample: 'first_turn',
      patience: 2,
      signals: 'reward_std_and_entropy_or_mi',
      gradSpikeFactor: 5,
      gradMedianWindow: 20,
      gradMinHistory: 5,
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Cross-field rules (run after every field has the right type)
// ---------------------------------------------------------------------------------------------------------------

interface Problem {
  path: (string | number)[];
  message: string;
}

function crossFieldProblems(c: RunConfig): Problem[] {
  const problems: Problem[] = [];
  const add = (path: (string | number)[], message: string) => problems.push({ path, message });

  // Env blocks: known tags, a config the env accepts and can generate a level / map from (one trial reset with the
  // split's first seed), and group counts that add up (RAGEN asserts the sums).
  for (const split of ['trainEnvs', 'valEnvs'] as const) {
    c.agent[split].forEach((block, i) => {
      if (!ENV_TAGS.includes(block.tag)) {
        add(['agent', split, i, 'tag'], `unknown env tag '${block.tag}'${didYouMean(block.tag, ENV_TAGS)} (valid tags: ${ENV_TAGS.join(', ')})`);
      } else if (block.config !== undefined) {
        try {
          assertEnvPlayable(block.tag, block.config, split === 'trainEnvs' ? (c.agent.seedTrain ?? 0) : c.agent.seedVal);
        } catch (err) {
          add(['agent', split, i, 'config'], `env ${block.tag} rejects this config: ${(err as Error).message}`);
        }
      }
    });
  }
  const sumGroups = (blocks: readonly EnvBlock[]) => blocks.reduce((sum, b) => sum + b.nGroups, 0);
  if (sumGroups(c.agent.trainEnvs) !== c.agent.envGroups) {
    add(['agent', 'trainEnvs'], `the nGroups of trainEnvs sum to ${sumGroups(c.agent.trainEnvs)}, but agent.envGroups is ${c.agent.envGroups}`);
  }
  if (sumGroups(c.agent.valEnvs) !== c.agent.valGroups) {
    add(['agent', 'valEnvs'], `the nGroups of valEnvs sum to ${sumGroups(c.agent.valEnvs)}, but agent.valGroups is ${c.agent.valGroups}`);
  }

  // Tiny model shape: heads split the width evenly, K/V heads are shared by whole groups of query heads, and
  // rotary embeddings rotate pairs of dimensions.
  const t = c.model.tiny;
  if (t.hiddenSize % t.numHeads !== 0) {
    add(['model', 'tiny', 'numHeads'], `numHeads ${t.numHeads} must divide hiddenSize ${t.hiddenSize}`);
  } else if ((t.hiddenSize / t.numHeads) % 2 !== 0) {
    add(['model', 'tiny', 'hiddenSize'], `head size hiddenSize/numHeads = ${t.hiddenSize / t.numHeads} must be even (rotary embeddings)`);
  }
  if (t.numHeads % t.numKvHeads !== 0) add(['model', 'tiny', 'numKvHeads'], `numKvHeads ${t.numKvHeads} must divide numHeads ${t.numHeads}`);

  // Batching: veRL asserts mini % micro == 0; RAGEN asserts the filtered batch fills at least one mini-batch.
  const { ppoMiniBatchSize: mini, ppoMicroBatchSize: micro } = c.actor;
  if (mini % micro !== 0) add(['actor', 'ppoMicroBatchSize'], `ppoMicroBatchSize ${micro} must divide ppoMiniBatchSize ${mini}`);
  const trajectories = c.agent.envGroups * c.agent.groupSize;
  if (c.filter.strategy === 'ratio') {
    try {
      checkFilterConfigV1({ numGroups: c.agent.envGroups, groupSize: c.agent.groupSize, ratio: c.filter.ratio, miniBatchSize: mini });
    } catch (err) {
      add(['filter', 'ratio'], (err as Error).message);
    }
  } else {
    if (trajectories < mini) {
      add(['actor', 'ppoMiniBatchSize'], `ppoMiniBatchSize ${mini} exceeds the ${trajectories} trajectories of a step (envGroups × groupSize)`);
    }
    const v = c.filter.value;
    if (c.filter.strategy === 'top_k' && v > 1) add(['filter', 'value'], `top_k keeps a fraction of the groups: value must be in (0, 1], got ${v}`);
    if (c.filter.strategy === 'top_k_abs' && (!Number.isInteger(v) || v > c.agent.envGroups)) {
      add(['filter', 'value'], `top_k_abs keeps a number of groups: value must be an integer from 1 to envGroups ${c.agent.envGroups}, got ${v}`);
    }
    if (c.filter.strategy === 'min_p' && v > 1) add(['filter', 'value'], `min_p is a ratio to the best score: value must be in (0, 1], got ${v}`);
  }

  if (c.algorithm.stepAdvantage.weight > 0) {
    if (c.algorithm.advEstimator !== 'grpo') {
      add(['algorithm', 'stepAdvantage', 'weight'], `stepAdvantage.weight ${c.algorithm.stepAdvantage.weight} adds to GRPO's episode-level advantage: it needs advEstimator 'grpo', not '${c.algorithm.advEstimator}'`);
    }
    if (c.agent.contextWindowMode !== 'single_turn') {
      add(['algorithm', 'stepAdvantage', 'weight'], "stepAdvantage.weight > 0 credits each turn on its own: it needs agent.contextWindowMode 'single_turn' (one training sample per turn)");
    }
  }

  // GRPO without group normalisation trains on raw rewards: RAGEN v1 does this silently (spec §10.5). We refuse:
  // a user who picks grpo wants a group baseline, and 'mean' (Dr.GRPO) or 'mean_std' (GRPO) give one.
  if (c.algorithm.advEstimator === 'grpo') {
    const { method, grouping } = c.algorithm.rewardNormalization;
    if (method === 'identity') {
      add(
        ['algorithm', 'rewardNormalization', 'method'],
        "advEstimator 'grpo' with rewardNormalization.method 'identity' would train on raw rewards (RAGEN v1's silent " +
          "pitfall, spec §10.5): use 'mean_std' (GRPO) or 'mean' (Dr.GRPO)",
      );
    } else if (grouping === 'state' && c.agent.groupSize === 1) {
      add(
        ['agent', 'groupSize'],
        "advEstimator 'grpo' normalises within each env group, but groupSize is 1, so there is nothing to compare " +
          "against: raise groupSize or use rewardNormalization.grouping 'inductive' / 'batch'",
      );
    }
  }
  return problems;
}

/**
 * Settings that are legal but probably not what the user meant; the CLI prints them, the UI may show them.
 * (Errors are in crossFieldProblems; these never stop a run.)
 */
export function configWarnings(c: RunConfig): string[] {
  const warnings: string[] = [];
  if (c.algorithm.useKlInReward && c.algorithm.klCoef === 0) warnings.push('algorithm.useKlInReward is true but klCoef is 0: no KL penalty is applied');
  if (!c.algorithm.useKlInReward && c.algorithm.klCoef > 0) {
    warnings.push(`algorithm.klCoef is ${c.algorithm.klCoef} but useKlInReward is false: the coefficient is ignored (spec §4.6)`);
  }
  if (c.actor.useKlLoss && c.actor.klLossCoef === 0) warnings.push('actor.useKlLoss is true but klLossCoef is 0: no KL loss is applied');
  if (!c.actor.useKlLoss && c.actor.klLossCoef > 0) warnings.push(`actor.klLossCoef is ${c.actor.klLossCoef} but useKlLoss is false: the coefficient is ignored`);
  if (c.filter.strategy === 'ratio' && c.actor.ppoEpochs === 1 && c.actor.clipRatioHigh !== c.actor.clipRatioLow) {
    const kept = Math.floor(c.filter.ratio * c.agent.envGroups + 1e-9) * c.agent.groupSize;
    // single_turn trains one sample per turn: several turns per trajectory fill several mini-batches.
    const samplesPerTrajectory = c.agent.contextWindowMode === 'single_turn' ? c.agent.maxTurn : 1;
    if (kept * samplesPerTrajectory <= c.actor.ppoMiniBatchSize) {
      warnings.push(
        `the filtered batch (${kept} trajectories) is one mini-batch (${c.actor.ppoMiniBatchSize}), so each rollout gets one ` +
          'optimizer step at ratio 1 and PPO clipping, clip-higher included, never acts (spec §10.7)',
      );
    }
  }
  if (c.model.path !== null && c.model.warmStart !== null) warnings.push('model.path is set, so model.warmStart is ignored');
  if (c.collapse.enabled && !c.model.enableThink) warnings.push('collapse.enabled is true but model.enableThink is false: there is no reasoning to diagnose, so nothing is computed (as RAGEN-2)');
  if (c.collapse.enabled && !c.collapse.firstTurn && !c.collapse.trajectory) warnings.push('collapse.enabled is true but both collapse.firstTurn and collapse.trajectory are false: nothing is computed');
  return warnings;
}

/**
 * Throws a ConfigError when a valid config still cannot start, e.g. a preset for a pretrained model whose local
 * copy was not given. Call it after overrides, before any work.
 */
export function assertRunnable(c: RunConfig): void {
  if (c.model.pretrained !== null && c.model.path === null) {
    const dir = c.model.pretrained.split('/').pop();
    throw new ConfigError(
      `config key 'model.path' is required: this run starts from ${c.model.pretrained}, which is not downloaded; ` +
        `pass --set model=/path/to/${dir} (a directory with config.json, model.safetensors and tokenizer.json)`,
      [],
    );
  }
}

/**
 * The env blocks of a split in the shape src/agent's EnvGroupManager takes (its TagBlock): each block's own
 * budget, else agent.maxActionsPerTraj, else (undefined) the tag's default; Bandit blocks get per-instance seeds
 * when agent.banditPerInstanceSeed is set.
 */
export function envBlocks(
  c: RunConfig,
  split: 'train' | 'val',
): { tag: string; nGroups: number; config?: Record<string, unknown>; maxActionsPerTraj?: number; maxTokens?: number; seedOffsetPerInstance?: boolean }[] {
  const blocks = split === 'train' ? c.agent.trainEnvs : c.agent.valEnvs;
  return blocks.map((b) => {
    const out: ReturnType<typeof envBlocks>[number] = { tag: b.tag, nGroups: b.nGroups };
    if (b.config !== undefined) out.config = structuredClone(b.config);
    const budget = b.maxActionsPerTraj ?? c.agent.maxActionsPerTraj;
    if (budget !== null && budget !== undefined) out.maxActionsPerTraj = budget;
    if (b.maxTokens !== undefined) out.maxTokens = b.maxTokens;
    if (c.agent.banditPerInstanceSeed && b.tag.startsWith('Bandit')) out.seedOffsetPerInstance = true;
    return out;
  });
}

/** How the run's agent talks (prompt and answer format, limits): what every rollout of the run is played with. */
export function agentFormatFromConfig(c: RunConfig): AgentFormat {
  return {
    maxTurn: c.agent.maxTurn,
    maxActionsPerTurn: c.agent.maxActionsPerTurn,
    enableThink: c.model.enableThink,
    actionSep: c.agent.actionSep,
    promptStyle: c.model.promptStyle,
    maxContextWindow: c.agent.maxContextWindow,
    turnNumbers: c.agent.turnNumbers,
    contextWindowMode: c.agent.contextWindowMode,
    responseMaskOnly: c.algorithm.responseMaskOnly,
    responseLength: c.rollout.maxNewTokens,
    formatPenalty: c.agent.formatPenalty,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Parsing, with errors that name the key
// ---------------------------------------------------------------------------------------------------------------

/** A config that cannot be used. `problems` lists every issue found, one line each. */
export class ConfigError extends Error {
  constructor(
    message: string,
    readonly problems: string[],
  ) {
    super(message);
    this.name = 'ConfigError';
  }
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * `over` laid onto `base`: nested objects merge key by key, everything else (numbers, strings, arrays, null)
 * replaces. Neither input is modified.
 */
export function mergeConfigInput<T>(base: T, over: unknown): T {
  if (!isPlainObject(base) || !isPlainObject(over)) return structuredClone(over === undefined ? base : over) as T;
  const out: Record<string, unknown> = structuredClone(base);
  for (const [key, value] of Object.entries(over)) {
    if (value === undefined) continue;
    // defineProperty, not `out[key] =`: a `__proto__` key from a config file must stay a plain (unknown) key.
    const merged = Object.hasOwn(out, key) ? mergeConfigInput(out[key], value) : structuredClone(value);
    Object.defineProperty(out, key, { value: merged, enumerable: true, writable: true, configurable: true });
  }
  return out as T;
}

/** Deeper than this, a config is not a run config (the real one nests 4 levels), and recursion would overflow. */
const MAX_CONFIG_DEPTH = 32;

/**
 * Throws a ConfigError naming the key when raw config input (a parsed file) nests deeper than MAX_CONFIG_DEPTH or
 * holds a `__proto__` key: JavaScript objects drop such a key on assignment, so it would vanish silently instead
 * of being reported. Walks without recursion, so even absurd nesting gets this one-line answer.
 */
export function checkConfigShape(obj: unknown, source?: string): void {
  const where = source ? ` (${source})` : '';
  const stack: { value: unknown; path: (string | number)[] }[] = [{ value: obj, path: [] }];
  while (stack.length > 0) {
    const { value, path } = stack.pop()!;
    if (typeof value !== 'object' || value === null) continue;
    if (path.length >= MAX_CONFIG_DEPTH) {
      throw new ConfigError(`invalid run config${where}: nested deeper than ${MAX_CONFIG_DEPTH} levels at '${truncate(keyName(path))}'`, []);
    }
    for (const key of Object.keys(value)) {
      if (key === '__proto__') throw new ConfigError(`invalid run config${where}: config key '${keyName([...path, key])}' is not allowed`, []);
      stack.push({ value: (value as Record<string, unknown>)[key], path: [...path, Array.isArray(value) ? Number(key) : key] });
    }
  }
}

/**
 * Validates a (partial) config laid over defaultRunConfig() and returns the complete RunConfig. Throws a
 * ConfigError naming every unknown key (with a suggestion), wrongly typed value and broken cross-field rule.
 * `source` (a file name, 'preset bandit-tiny', '--set') is quoted in the message.
 */
export function parseRunConfig(obj: unknown, source?: string): RunConfig {
  const where = source ? ` (${source})` : '';
  if (obj === null || obj === undefined) obj = {};
  if (!isPlainObject(obj)) {
    throw new ConfigError(`invalid run config${where}: expected an object of sections, got ${describeValue(obj)}`, []);
  }
  checkConfigShape(obj, source);
  const merged = mergeConfigInput(defaultRunConfig(), obj);
  const result = RunConfigSchema.safeParse(merged, { reportInput: true });
  if (result.success) return result.data;
  const problems = result.error.issues.flatMap(describeIssue);
  const body = problems.length === 1 ? problems[0] : `${problems.length} problems:\n  - ${problems.join('\n  - ')}`;
  throw new ConfigError(`invalid run config${where}: ${body}`, problems);
}

/** Reads a config file's text (YAML or JSON) and validates it like parseRunConfig. */
export function loadConfigText(text: string, format: 'yaml' | 'json', source?: string): RunConfig {
  return parseRunConfig(readConfigText(text, format, source), source);
}

/**
 * The plain value of a config file's text (not validated yet: see parseRunConfig). Throws a ConfigError of one line
 * naming the source: a syntax error (YAML's own message quotes the line below; only its first line is kept), or a
 * YAML warning such as an unknown `!tag`, which would otherwise print a warning and read the value as a string.
 */
export function readConfigText(text: string, format: 'yaml' | 'json', source?: string): unknown {
  const fail = (why: string) =>
    new ConfigError(`could not read the run config${source ? ` ${source}` : ''} as ${format.toUpperCase()}: ${why.split('\n')[0].replace(/:$/, '')}`, []);
  if (format === 'json') {
    try {
      return JSON.parse(text);
    } catch (err) {
      throw fail((err as Error).message);
    }
  }
  let doc: ReturnType<typeof YAML.parseDocument>;
  try {
    doc = YAML.parseDocument(text, { logLevel: 'silent' });
  } catch (err) {
    throw fail((err as Error).message);
  }
  const problem = doc.errors[0] ?? doc.warnings[0];
  if (problem) throw fail(problem.message);
  try {
    return doc.toJS({ maxAliasCount: 100 });
  } catch (err) {
    throw fail((err as Error).message);
  }
}

function keyName(path: readonly PropertyKey[]): string {
  return path.map((p) => (typeof p === 'number' ? `[${p}]` : String(p))).join('.').replace(/\.\[/g, '[');
}

function describeValue(v: unknown): string {
  if (v === undefined) return 'nothing (the key is missing)';
  if (v === null) return 'null';
  if (Array.isArray(v)) return `an array ${truncate(JSON.stringify(v))}`;
  if (typeof v === 'string') return `string ${JSON.stringify(truncate(v))}`;
  if (typeof v === 'object') return 'an object';
  return `${typeof v} ${String(v)}`;
}

function truncate(s: string, max = 60): string {
  return s.length > max ? `${s.slice(0, max)}…` : s;
}

function describeIssue(issue: z.core.$ZodIssue): string[] {
  const key = keyName(issue.path);
  const at = `config key '${key}'`;
  switch (issue.code) {
    case 'unrecognized_keys':
      return issue.keys.map((k) => {
        const valid = Object.keys(objectShapeAt(issue.path) ?? {});
        const full = key ? `${key}.${k}` : k;
        const hint = didYouMean(k, valid);
        return `unknown config key '${full}'${hint || ` (valid keys${key ? ` under '${key}'` : ''}: ${valid.join(', ')})`}`;
      });
    case 'invalid_type': {
      const schema = schemaAt(issue.path);
      const isInt = schema !== undefined && (unwrap(schema) as unknown as { isInt?: boolean }).isInt === true;
      const expected = issue.expected === 'int' || isInt ? 'an integer' : issue.expected === 'object' ? 'an object' : issue.expected;
      const nullable = schema?._zod.def.type === 'nullable' ? ' or null' : '';
      return [`${at}: expected ${expected}${nullable}, got ${describeValue(issue.input)}`];
    }
    case 'invalid_value': {
      const options = issue.values.map((v) => `'${String(v)}'`).join(', ');
      const hint = typeof issue.input === 'string' ? didYouMean(issue.input, issue.values.map(String)) : '';
      return [`${at}: expected one of ${options}, got ${describeValue(issue.input)}${hint}`];
    }
    case 'too_small':
    case 'too_big': {
      const small = issue.code === 'too_small';
      const bound = small ? issue.minimum : issue.maximum;
      if (issue.origin === 'array') return [`${at}: expected ${small ? 'at least' : 'at most'} ${bound} item(s), got ${describeValue(issue.input)}`];
      if (issue.origin === 'string') return [`${at}: must not be empty`];
      const op = small ? (issue.inclusive ? '>=' : '>') : issue.inclusive ? '<=' : '<';
      return [`${at}: must be ${op} ${bound}, got ${describeValue(issue.input)}`];
    }
    case 'custom':
      return [`${at}: ${issue.message}`];
    default:
      return [`${at}: ${issue.message}`];
  }
}

// --- walking the schema by key path (for suggestions, --set and the docs) ---

type AnySchema = z.core.$ZodType;

/** The schema with optional / nullable / refinement wrappers removed. */
function unwrap(schema: AnySchema): AnySchema {
  let s = schema;
  for (;;) {
    const def = s._zod.def as { type: string; innerType?: AnySchema; in?: AnySchema };
    if (def.innerType && ['optional', 'nullable', 'default', 'prefault', 'readonly', 'nonoptional', 'catch'].includes(def.type)) s = def.innerType;
    else if (def.type === 'pipe' && def.in) s = def.in;
    else return s;
  }
}

function childSchema(schema: AnySchema, segment: PropertyKey): AnySchema | undefined {
  const def = unwrap(schema)._zod.def as { type: string; shape?: Record<string, AnySchema>; element?: AnySchema; items?: AnySchema[]; valueType?: AnySchema };
  if (def.type === 'object') return def.shape && Object.hasOwn(def.shape, String(segment)) ? def.shape[String(segment)] : undefined;
  if (def.type === 'array' && /^\d+$/.test(String(segment))) return def.element;
  if (def.type === 'tuple' && /^\d+$/.test(String(segment))) return def.items?.[Number(segment)];
  if (def.type === 'record') return def.valueType;
  return undefined;
}

function schemaAt(path: readonly PropertyKey[]): AnySchema | undefined {
  let s: AnySchema | undefined = RunConfigSchema;
  for (const segment of path) {
    if (!s) return undefined;
    s = childSchema(s, segment);
  }
  return s;
}

function objectShapeAt(path: readonly PropertyKey[]): Record<string, AnySchema> | undefined {
  const s = schemaAt(path);
  if (!s) return undefined;
  const def = unwrap(s)._zod.def as { type: string; shape?: Record<string, AnySchema> };
  return def.type === 'object' ? def.shape : undefined;
}

// --- "did you mean" ---

function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = row;
  }
  return prev[b.length];
}

/** ` (did you mean 'x'?)` for the closest candidate within a few edits (snake_case and case ignored), else ''. */
export function didYouMean(word: string, candidates: readonly string[]): string {
  // RAGEN users will type snake_case keys (clip_ratio_high): compare with separators and case removed.
  const norm = (s: string) => s.toLowerCase().replace(/[_\-.]/g, '');
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of candidates) {
    const d = editDistance(norm(word), norm(candidate));
    if (d < bestDistance) [best, bestDistance] = [candidate, d];
  }
  const allowed = Math.max(1, Math.floor(norm(word).length / 3));
  return best !== undefined && bestDistance <= allowed ? ` (did you mean '${best}'?)` : '';
}

// ---------------------------------------------------------------------------------------------------------------
// --set overrides
// ---------------------------------------------------------------------------------------------------------------

/**
 * Applies `--set key.path=value` overrides and re-validates. Values are read as YAML (`0.28`, `1e-6`, `true`,
 * `null`, `[1, 2]`, `{tag: Bandit, nGroups: 8}`); a value YAML cannot read stays a plain string. Array items are
 * addressed by index (`agent.trainEnvs.0.nGroups=4`). An object value merges into an object key; anything else
 * replaces. `model=PATH` is a shorthand for `model.path=PATH`. Unknown keys are rejected with the valid keys listed.
 */
export function applyOverrides(config: RunConfig | RunConfigInput, overrides: readonly string[]): RunConfig {
  let out: Record<string, unknown> = structuredClone(config) as Record<string, unknown>;
  for (const override of overrides) {
    const eq = override.indexOf('=');
    if (eq <= 0) throw new ConfigError(`--set expects key=value, got '${override}'`, []);
    let key = override.slice(0, eq).trim();
    const raw = override.slice(eq + 1);
    if (key === 'model') key = 'model.path';
    const path = key.split('.');
    checkOverridePath(path, override);
    let value: unknown = raw;
    try {
      // A value YAML cannot read cleanly (a syntax error, or a warning such as an unknown `!tag`) stays a string.
      const doc = YAML.parseDocument(raw, { logLevel: 'silent' });
      if (doc.errors.length === 0 && doc.warnings.length === 0) value = doc.toJS();
    } catch {
      value = raw;
    }
    checkConfigShape(value, `--set ${override}`);
    out = setAtPath(out, path, value, override);
  }
  return parseRunConfig(out, overrides.length ? `--set ${overrides.join(' ')}` : undefined);
}

function checkOverridePath(path: string[], override: string): void {
  let schema: AnySchema = RunConfigSchema;
  for (let i = 0; i < path.length; i++) {
    const segment = path[i];
    if (segment === '__proto__') throw new ConfigError(`config key '${path.slice(0, i + 1).join('.')}' in --set ${override} is not allowed`, []);
    const child = childSchema(schema, segment);
    if (!child) {
      const parent = path.slice(0, i).join('.');
      const shape = objectShapeAt(path.slice(0, i));
      const valid = shape ? Object.keys(shape) : [];
      const what = valid.length ? `valid keys${parent ? ` under '${parent}'` : ''}: ${valid.join(', ')}` : `'${parent}' has no sub-keys`;
      throw new ConfigError(`unknown config key '${path.slice(0, i + 1).join('.')}' in --set ${override}${didYouMean(segment, valid)}; ${what}`, []);
    }
    schema = child;
  }
}

function setAtPath(root: Record<string, unknown>, path: string[], value: unknown, override: string): Record<string, unknown> {
  let node: unknown = root;
  for (let i = 0; i < path.length; i++) {
    const container = node as Record<string, unknown>;
    const segment = path[i];
    if (Array.isArray(container) && Number(segment) >= container.length) {
      throw new ConfigError(
        `cannot apply --set ${override}: index ${segment} is past the end of '${path.slice(0, i).join('.')}' (length ${container.length})`,
        [],
      );
    }
    if (i === path.length - 1) {
      const old = container[segment];
      container[segment] = isPlainObject(old) && isPlainObject(value) ? mergeConfigInput(old, value) : value;
      break;
    }
    // An optional section not written yet (an env block's `config`): the path was checked against the schema.
    if (container[segment] === undefined) container[segment] = {};
    node = container[segment];
    if (typeof node !== 'object' || node === null) {
      throw new ConfigError(`cannot apply --set ${override}: '${path.slice(0, i + 1).join('.')}' is ${describeValue(node)}, not a section`, []);
    }
  }
  return root;
}

// ---------------------------------------------------------------------------------------------------------------
// Reference documentation (docs/config.md)
// ---------------------------------------------------------------------------------------------------------------

export interface ConfigDocRow {
  /** Dotted key path; list items as `[]`, e.g. `agent.trainEnvs[].tag`. */
  key: string;
  /** Type in words: `number`, `integer`, `'a' | 'b'`, `string | null`, … */
  type: string;
  /** The default (defaultRunConfig), as JSON; '' for keys inside list items. */
  default: string;
  description: string;
}

function typeName(schema: AnySchema): string {
  const def = schema._zod.def as { type: string; innerType?: AnySchema; entries?: Record<string, string>; items?: AnySchema[]; element?: AnySchema };
  switch (def.type) {
    case 'nullable':
      return `${typeName(def.innerType!)} | null`;
    case 'optional':
      return `${typeName(def.innerType!)} (optional)`;
    case 'number':
      return (schema as unknown as { isInt?: boolean }).isInt ? 'integer' : 'number';
    case 'enum':
      return Object.values(def.entries!).map((v) => `'${v}'`).join(' | ');
    case 'tuple':
      return `[${def.items!.map(typeName).join(', ')}]`;
    case 'array':
      return unwrap(def.element!)._zod.def.type === 'object' ? 'list of objects' : `list of ${typeName(def.element!)}`;
    case 'record':
      return 'object';
    case 'union':
      return (def as unknown as { options: AnySchema[] }).options.map(typeName).join(' | ');
    case 'literal':
      return (def as unknown as { values: unknown[] }).values.map((v) => JSON.stringify(v).replace(/"/g, "'")).join(' | ');
    case 'object':
      return 'section';
    default:
      return def.type;
  }
}

function descriptionOf(schema: AnySchema): string {
  let s: AnySchema | undefined = schema;
  while (s) {
    const d = (s as unknown as { description?: string }).description;
    if (d) return d;
    const inner: AnySchema | undefined = (s._zod.def as { innerType?: AnySchema }).innerType;
    s = inner;
  }
  return '';
}

/** One row per key of the schema, in declaration order, with the RAGEN defaults. */
export function describeConfig(): ConfigDocRow[] {
  const rows: ConfigDocRow[] = [];
  const defaults = defaultRunConfig() as unknown as Record<string, unknown>;
  const visit = (schema: AnySchema, key: string, defaultValue: unknown, inList: boolean) => {
    const def = unwrap(schema)._zod.def as { type: string; shape?: Record<string, AnySchema>; element?: AnySchema };
    if (def.type === 'object') {
      rows.push({ key, type: 'section', default: '', description: descriptionOf(schema) });
      for (const [k, child] of Object.entries(def.shape!)) {
        visit(child, `${key}.${k}`, inList ? undefined : (defaultValue as Record<string, unknown>)[k], inList);
      }
      return;
    }
    rows.push({ key, type: typeName(schema), default: inList ? '' : JSON.stringify(defaultValue), description: descriptionOf(schema) });
    if (def.type === 'array' && unwrap(def.element!)._zod.def.type === 'object') {
      const itemShape = (unwrap(def.element!)._zod.def as unknown as { shape: Record<string, AnySchema> }).shape;
      for (const [k, child] of Object.entries(itemShape)) visit(child, `${key}[].${k}`, undefined, true);
    }
  };
  for (const [section, schema] of Object.entries(RunConfigSchema.shape)) visit(schema, section, defaults[section], false);
  return rows;
}

/** Leaf keys whose values differ between two configs (lists compared whole), as `[key, JSON value]` pairs. */
export function configDifferences(config: RunConfig, base: RunConfig = defaultRunConfig()): [string, string][] {
  const out: [string, string][] = [];
  const walk = (a: unknown, b: unknown, key: string) => {
    if (isPlainObject(a) && isPlainObject(b)) {
      for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) walk(a[k], b[k], key ? `${key}.${k}` : k);
    } else if (JSON.stringify(a) !== JSON.stringify(b)) {
      out.push([key, a === undefined ? '(unset)' : JSON.stringify(a)]);
    }
  };
  walk(config, base, '');
  return out;
}

const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');

/**
 * The text of docs/config.md: how configs are given, the rules checked, a table per section, and each preset's
 * departures from the defaults (pass the resolved presets; config.ts does not import presets.ts).
 */
export function renderConfigDoc(presets: readonly { name: string; summary: string; arms: readonly { name: string; config: RunConfig }[] }[] = []): string {
  const lines: string[] = [
    '# Run configuration reference',
    '',
    '<!-- Generated from the schema in src/starpo/config.ts and the presets in src/starpo/presets.ts.',
    '     Do not edit by hand: run `UPDATE_DOCS=1 npx vitest run tests/unit/starpo/config-doc.test.ts`. -->',
    '',
    'A run is described by one `RunConfig`; the browser playground and the `ragen` CLI build the same trainer from it.',
    'It can come from:',
    '',
    '- a preset: `npx ragen train --preset bandit-tiny` (list below);',
    '- a YAML or JSON file with any subset of the keys below (`loadConfigText`); missing keys take the defaults;',
    '- `--set key.path=value` overrides on top of either, e.g. `--set actor.lr=3e-5 --set agent.trainEnvs=[{tag: FrozenLake, nGroups: 8}]`.',
    '  Values are read as YAML (numbers, `true`/`false`, `null`, `[a, b]`, `{k: v}`); list items by index',
    '  (`agent.trainEnvs.0.nGroups=4`); `--set model=PATH` is short for `--set model.path=PATH`.',
    '  The CLI flags map to keys: `--steps` → `trainer.totalSteps`, `--seed` → `trainer.seed`, `--backend` → `trainer.backend`.',
    '',
    "Defaults are RAGEN v1's `config/base.yaml` merged with veRL's defaults (StarPO-S, PPO with a critic, on",
    'SimpleSokoban with Qwen2.5-0.5B-Instruct). Where RAGEN has two versions, the v1 code value is the default and the',
    'other (the paper, or RAGEN-2 = v2) is an option; each key says which. Keys are camelCase; the RAGEN / veRL key',
    'each one maps to is named in its description.',
    '',
    '## Validation',
    '',
    'Nothing runs until the whole config is valid. Every problem is reported at once, each naming its key:',
    '',
    "- unknown keys, with a suggestion for typos and RAGEN's snake_case spellings (`clip_ratio_high` → `clipRatioHigh`);",
    '- wrongly typed or out-of-range values, and unknown choices;',
    '- env tags must exist and each block\'s `config` must be accepted by the environment;',
    '- the `nGroups` of `agent.trainEnvs` must sum to `agent.envGroups`, those of `agent.valEnvs` to `agent.valGroups`;',
    '- filter `ratio`: floor(ratio × envGroups) ≥ 1 group, and the kept trajectories must fill one `actor.ppoMiniBatchSize`',
    "  (RAGEN's assert envGroups × groupSize × ratio ≥ ppo_mini_batch_size, checked on the kept count really produced);",
    '- `actor.ppoMicroBatchSize` must divide `actor.ppoMiniBatchSize`;',
    "- `algorithm.advEstimator: grpo` requires reward normalisation (`mean_std` = GRPO, `mean` = Dr.GRPO): with `identity`",
    "  RAGEN v1 silently trains GRPO on raw rewards; we refuse it. With grouping `state` it also needs groupSize > 1;",
    '- the tiny model shape: numHeads divides hiddenSize with an even head size, numKvHeads divides numHeads.',
    '',
    'Legal but suspicious settings produce warnings (`configWarnings`), e.g. a KL coefficient without its switch, or',
    'clip-higher in a setting where PPO clipping never acts (one mini-batch per rollout, spec §10.7). A config for a',
    'pretrained model (`model.pretrained`) also needs `model.path` before it can run (`assertRunnable`).',
    '',
  ];
  const rows = describeConfig();
  rows.forEach((row, i) => {
    if (!row.key.includes('.')) {
      lines.push(`## \`${row.key}\``, '', cell(row.description), '', '| key | type | default | meaning |', '|---|---|---|---|');
    } else {
      const type = row.type === 'section' ? 'section' : cell(row.type);
      lines.push(`| \`${row.key}\` | ${type} | ${row.default ? `\`${cell(row.default)}\`` : ''} | ${cell(row.description)} |`);
    }
    const next = rows[i + 1];
    if (next === undefined || !next.key.includes('.')) lines.push('');
  });
  if (presets.length) {
    lines.push('## Presets', '', 'Each preset lists only how it departs from the defaults above.', '');
    for (const preset of presets) {
      lines.push(`### \`${preset.name}\``, '', preset.summary, '');
      for (const arm of preset.arms) {
        if (preset.arms.length > 1) lines.push(`Arm \`${arm.name}\`:`, '');
        lines.push('| key | value |', '|---|---|');
        for (const [key, value] of configDifferences(arm.config)) lines.push(`| \`${key}\` | \`${cell(value)}\` |`);
        lines.push('');
      }
    }
  }
  return lines.join('\n');
}
