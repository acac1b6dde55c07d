// The run configuration's schema: every field of a RunConfig with its type, its bounds and what it means.
//
// One zod section per part of RAGEN (model, agent, rollout, algorithm, actor, critic, lora, filter, earlyStop,
// trainer; the diagnostics, collapse and echoTrap, are in ./diagnosticsSchema.ts); every field says what it means,
// its unit, RAGEN's default and the RAGEN / veRL key it maps to. docs/config.md is generated from these texts (./docs.ts, tests/unit/starpo/config-doc.test.ts). The rules
// that tie fields together (group counts that add up, a filter that fills a mini-batch, ...) are in ./checks.ts,
// which makes RunConfigSchema out of RunConfigFieldsSchema; the defaults are in ./defaults.ts.
import { z } from 'zod';
import { ENV_TAGS } from '../../../envs/index';
import { BACKEND_CHOICES } from '../../model/backendNames';
import { LORA_TARGET_MODULES, MIN_TEMPERATURE } from '../../model/config';
import { CONFIG_LIMITS } from './limits';
import { CollapseSchema, EchoTrapSchema } from './diagnosticsSchema';
import { FilterSchema } from './filterSchema';
import { nonNegativeInt, positiveInt, probability } from './bounded';

/** veRL's `loss_agg_mode`s: how per-token losses become one number (each is explained at losses.ts aggregateLoss). */
export const LOSS_AGG_MODES = [
  'token-mean',
  'seq-mean-token-mean',
  'seq-mean-token-sum',
  'seq-mean-token-sum-norm',
] as const;
export type LossAggMode = (typeof LOSS_AGG_MODES)[number];

/** KL estimators of the in-reward penalty and the KL loss (each is explained at the top of kl.ts). */
export const KL_ESTIMATORS = ['kl', 'abs', 'mse', 'low_var_kl'] as const;
export type KlEstimator = (typeof KL_ESTIMATORS)[number];

const L = CONFIG_LIMITS;

/** Shape of a freshly initialised tiny Qwen2-style model (vocabulary size comes from the tokenizer). */
const TinyModelSchema = z.strictObject({
  hiddenSize: positiveInt(L.width).describe('Width of the residual stream (HF `hidden_size`; Qwen2.5-0.5B: 896).'),
  numLayers: positiveInt(1_000).describe('Decoder layers (HF `num_hidden_layers`; Qwen2.5-0.5B: 24).'),
  numHeads: positiveInt(1_024).describe(
    'Query heads (HF `num_attention_heads`; Qwen2.5-0.5B: 14). Must divide hiddenSize.',
  ),
  numKvHeads: positiveInt(1_024).describe(
    'Key/value heads of grouped-query attention (HF `num_key_value_heads`; Qwen2.5-0.5B: 2). Must divide numHeads.',
  ),
  intermediateSize: positiveInt(L.width * 4).describe(
    'Inner width of the SwiGLU MLP (HF `intermediate_size`; Qwen2.5-0.5B: 4864).',
  ),
  ropeTheta: z.number().positive().max(1e12).describe('Rotary embedding base (HF `rope_theta`; Qwen2.5: 1000000).'),
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
        "prompt over the tiny vocabulary built from the environments' text (for tiny models). No RAGEN key.",
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
  sharePrefix: z
    .boolean()
    .describe(
      'In the update and in scoring, run the token prefix every row of a micro-batch shares (the system prompt, ' +
        "and a group's initial state) through the decoder layers once instead of once per row (actor, critic and " +
        'reference): sokoban-tiny rows share about 45 % of their tokens. The same numbers to float rounding. Not with ' +
        'gradient checkpointing. Off by default; on in sokoban-tiny. Not exported: it changes compute, not maths.',
    ),
});

/** One block of env groups sharing a tag (RAGEN `es_manager.<split>.env_configs.tags` / `n_groups`). */
const EnvBlockSchema = z.strictObject({
  tag: z.string().describe(`Environment tag, one of: ${ENV_TAGS.join(', ')} (RAGEN \`custom_envs\` key).`),
  nGroups: positiveInt().describe(
    'Env groups of this tag (RAGEN `n_groups`); the blocks of a split must sum to its group count.',
  ),
  config: z
    .record(z.string(), z.unknown())
    .optional()
    .describe(
      "Env config, camelCase of RAGEN's `custom_envs.<Tag>.env_config` (e.g. Sokoban `dimRoom`, `numBoxes`; FrozenLake " +
        "`size`, `p`, `successRate`; both `observationFormat`: 'grid', 'coord' or 'grid_coord', RAGEN-2's " +
        "`observation_format`; Bandit arm names/scores). Omitted = the tag's RAGEN defaults. Checked by the env " +
        'before any work, with one trial reset: rooms and maps at most 20 cells a side, Sokoban `numBoxes` ≤ 50, ' +
        '`searchDepth` ≤ 1000, `maxSteps` ≤ 10000, Bandit scores within ±10⁶; a `level` must be solvable, a `map` must ' +
        'have a path, and the generator must build a level within its search budget (a few seconds; a big room with ' +
        'many boxes fails with an error saying so).',
    ),
  maxActionsPerTraj: positiveInt(L.actions)
    .optional()
    .describe(
      "Primitive-action budget per episode for this block (RAGEN `custom_envs.<Tag>.max_actions_per_traj`). Omitted = agent.maxActionsPerTraj, else the tag's default.",
    ),
  maxTokens: positiveInt()
    .optional()
    .describe(
      'N of "Max response length: N words (tokens)." in the prompt (RAGEN `custom_envs.<Tag>.max_tokens`; grid envs 100). Omitted = the tag\'s default.',
    ),
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
  envGroups: positiveInt(100_000).describe(
    'P: env groups per training step, i.e. distinct initial states (RAGEN `es_manager.train.env_groups`, 8).',
  ),
  groupSize: positiveInt(10_000).describe(
    'N: rollouts per env group, all reset with the same seed (RAGEN `es_manager.train.group_size`, 16). P × N ' +
      'trajectories per step.',
  ),
  valGroups: positiveInt(100_000).describe(
    'Validation env groups = fixed initial states, seeds seedVal … seedVal+valGroups−1 (RAGEN `es_manager.val.env_groups`, 256).',
  ),
  valGroupSize: positiveInt(1_000).describe('Rollouts per validation group (RAGEN `es_manager.val.group_size`, 1).'),
  maxTurn: positiveInt(L.turns).describe(
    'K: most turns (LLM calls) per episode (RAGEN `agent_proxy.max_turn`, 5; Bandit 1).',
  ),
  maxActionsPerTurn: positiveInt(L.actions).describe(
    'Most primitive actions kept from one answer (split on actionSep); extra ones are dropped (RAGEN ' +
      '`agent_proxy.max_actions_per_turn`, 5; v2: 2).',
  ),
  maxActionsPerTraj: positiveInt(L.actions)
    .nullable()
    .describe(
      'Primitive-action budget per episode for every block without its own (RAGEN `custom_envs.<Tag>.max_actions_per_traj`). ' +
        "null = each tag's RAGEN default: Sokoban and FrozenLake 10, Bandit 1.",
    ),
  actionSep: z
    .string()
    .min(1)
    .describe('Separator between actions in an answer (RAGEN `agent_proxy.action_sep`, `||`).'),
  formatPenalty: z
    .number()
    .min(-L.real)
    .max(0)
    .describe(
      'Added to the trajectory reward once per turn whose answer was malformed or held an invalid action (RAGEN ' +
        '`es_manager.format_penalty`, −0.1). Not seen by the uncertainty filter.',
    ),
  groundingBonus: z
    .number()
    .min(0)
    .max(L.real)
    .describe(
      "A reasoning-aware reward (not RAGEN's; 0 = off, as in RAGEN): added to a turn's env reward when its reasoning " +
        'makes at least one checkable claim about the state it saw (where the player, goal, a hole or a box is, which ' +
        'way one lies from another; `src/metrics/grounding.ts`) and every such claim is true. It is part of the ' +
        'reward the uncertainty filter sees, so a group whose rollouts differ only in grounding still carries signal; ' +
        "success is still the env's. The mechanism lesson uses it so that a reasoning template costs reward.",
    ),
  maxContextWindow: z
    .int()
    .max(L.turns)
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
  seedTrain: nonNegativeInt(L.seed)
    .nullable()
    .describe(
      'Base seed of training resets: reset k gives group i the seed seedTrain + envGroups·k + i (RAGEN `seed.train`, ' +
        '10000). null = a random base seed per reset, as RAGEN without a seed.',
    ),
  seedVal: nonNegativeInt(L.seed).describe(
    'Base seed of the fixed validation set (RAGEN `seed.val`, 123 → seeds 123…378).',
  ),
  banditPerInstanceSeed: z
    .boolean()
    .describe(
      'false = RAGEN v1: every member of a group is reset with the group seed, so in Bandit all N rollouts see the ' +
        "same hi-arm draw (spec §10.10). true = RAGEN v2's fix: member j uses group seed + j. Bandit tags only.",
    ),
});

const RolloutSchema = z.strictObject({
  temperature: z
    .number()
    .min(MIN_TEMPERATURE)
    .max(L.temperature)
    .describe(
      `Sampling temperature of training rollouts, at least ${MIN_TEMPERATURE}; the update scores the actor and the reference ` +
        'at it too, as veRL does (RAGEN `actor_rollout_ref.rollout.temperature`, 1.0).',
    ),
  topP: z
    .number()
    .gt(0)
    .max(1)
    .describe('Nucleus sampling mass; 1 = off (RAGEN `actor_rollout_ref.rollout.top_p`, 1.0).'),
  topK: z
    .int()
    .max(L.count)
    .refine((v) => v === -1 || v >= 1, 'must be -1 (off) or at least 1')
    .describe('Sample among the k most likely tokens; −1 = off (RAGEN `actor_rollout_ref.rollout.top_k`, −1).'),
  maxNewTokens: positiveInt().describe(
    'Most tokens generated per turn; generation also stops at the end-of-turn token (RAGEN ' +
      '`actor_rollout_ref.rollout.response_length`, 400; Bandit 500).',
  ),
  valTemperature: z
    .number()
    .min(MIN_TEMPERATURE)
    .max(L.temperature)
    .describe(
      `Temperature of validation rollouts, at least ${MIN_TEMPERATURE}; greedy validation is valDoSample false ` +
        '(RAGEN `actor_rollout_ref.rollout.val_kwargs.temperature`, 0.5).',
    ),
  valDoSample: z
    .boolean()
    .describe(
      'Sample during validation; false = greedy (RAGEN `actor_rollout_ref.rollout.val_kwargs.do_sample`, true).',
    ),
  maxBatchSize: positiveInt().describe(
    'Most rollouts generated together in one batch (one batched prefill and decode, each batch keeping its KV cache ' +
      'across turns; batches run one after another). Bounds the prefill and decode temporaries, which grow with it; ' +
      'the same tokens whatever its value. Default 128, the paper step (8 env groups x 16). No RAGEN key (vLLM ' +
      'schedules its own batches).',
  ),
  engine: z
    .enum(['turns', 'continuous'])
    .describe(
      "How a rollout batch is played. 'turns' (default): turn by turn, every running env's turn generated together " +
        "and the envs stepped together. 'continuous': as an inference engine, maxBatchSize rows decoding at once; " +
        'a dialogue whose turn ends (end-of-turn token, </answer> or maxNewTokens) steps its env at once and feeds ' +
        'its next prompt while the others decode, and a finished dialogue frees its row for a waiting one; the KV ' +
        'cache is sized once per step from maxTurn and maxNewTokens. Each dialogue samples from the same random ' +
        "stream as in 'turns': the same tokens on cpu, float rounding apart elsewhere. Only the main thread's model " +
        "plays it: with a helper thread (`ragen train --workers 2`) the rollouts run 'turns'. No RAGEN key (vLLM " +
        'batches continuously).',
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
  lambda: probability().describe(
    'GAE λ (RAGEN `algorithm.lam`, 1.0). With γ = λ = 1 and a terminal reward, A_t = R − V_t.',
  ),
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
        .max(L.real)
        .describe(
          "ω: each turn sample's advantage is the episode-level GRPO advantage plus ω × its step-level advantage; 0 = " +
            'off (plain GRPO). Needs advEstimator grpo and agent.contextWindowMode single_turn (GiGPO uses 1.0).',
        ),
      gamma: probability().describe('Discount γ of the turn rewards in the return-to-go of each turn (GiGPO 0.95).'),
      method: z
        .enum(['mean_std', 'mean'])
        .describe(
          "Normalisation of the returns-to-go within an anchor-state group: 'mean_std' or 'mean' (GiGPO mean_std_norm / mean_norm).",
        ),
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
        'false). Vanilla StarPO (PPO) as run for the paper: true with klCoef 0.001.',
    ),
  klCoef: z
    .number()
    .min(0)
    .max(L.real)
    .describe(
      'Coefficient β of the in-reward KL penalty, fixed controller (RAGEN `algorithm.kl_ctrl.kl_coef`, 0.0; vanilla 0.001).',
    ),
  klEstimator: z
    .enum(KL_ESTIMATORS)
    .describe(
      "KL estimator of the in-reward penalty: 'kl' = k1 (log π − log π_ref), 'low_var_kl' = k3 (RAGEN `algorithm.kl_penalty`, kl).",
    ),
});

const betas = () =>
  z
    .tuple([z.number().min(0).lt(1), z.number().min(0).lt(1)])
    .describe('AdamW (β1, β2) (veRL optim default [0.9, 0.999]).');

const ActorSchema = z.strictObject({
  lr: z
    .number()
    .positive()
    .max(1)
    .describe(
      'AdamW learning rate of the policy, constant after the warm-up (RAGEN `actor_rollout_ref.actor.optim.lr`, 1e−6).',
    ),
  lrWarmupStepsRatio: z
    .number()
    .min(0)
    .max(1)
    .describe(
      'Linear learning-rate warm-up of the policy over this share of trainer.totalSteps, from 0 at step 1 to actor.lr ' +
        "(veRL's schedule: step k of W warm-up steps trains at (k − 1) / W of the rate); the critic keeps a constant rate " +
        '(RAGEN `actor_rollout_ref.actor.optim.lr_warmup_steps_ratio`, 0: no warm-up).',
    ),
  betas: betas(),
  weightDecay: z
    .number()
    .min(0)
    .max(1)
    .describe('AdamW decoupled weight decay (veRL `actor.optim.weight_decay`, 0.01).'),
  gradClip: z
    .number()
    .positive()
    .max(L.real)
    .describe(
      'Clip the global gradient norm to this; a non-finite norm skips the step (RAGEN `actor_rollout_ref.actor.grad_clip`, 1.0).',
    ),
  clipRatioLow: z
    .number()
    .positive()
    .lt(1)
    .describe(
      'ε_low: the importance ratio is clipped below at 1 − ε_low (RAGEN `actor_rollout_ref.actor.clip_ratio_low`, 0.2).',
    ),
  clipRatioHigh: z
    .number()
    .positive()
    .max(L.real)
    .describe(
      'ε_high: clipped above at 1 + ε_high; StarPO-S "clip-higher" 0.28, vanilla StarPO 0.2 (RAGEN ' +
        '`actor_rollout_ref.actor.clip_ratio_high`, 0.28).',
    ),
  clipRatioC: z
    .number()
    .gt(1)
    .max(L.real)
    .describe(
      'Dual-clip constant c (> 1): for A < 0 the token loss is capped at −A·c (RAGEN `actor_rollout_ref.actor.clip_ratio_c`, 3.0).',
    ),
  entropyCoeff: z
    .number()
    .min(0)
    .max(L.real)
    .describe(
      'Entropy bonus: actor loss = pg_loss − coeff·entropy (RAGEN `actor_rollout_ref.actor.entropy_coeff`, 0.001).',
    ),
  useKlLoss: z
    .boolean()
    .describe(
      'Add a KL(π‖π_ref) term to the actor loss, as GRPO runs do (RAGEN `actor_rollout_ref.actor.use_kl_loss`, false).',
    ),
  klLossCoef: z
    .number()
    .min(0)
    .max(L.real)
    .describe('Coefficient of that KL loss (RAGEN `actor_rollout_ref.actor.kl_loss_coef`, 0.0; vanilla GRPO 0.001).'),
  klLossType: z
    .enum(KL_ESTIMATORS)
    .describe('Estimator of the KL loss (RAGEN `actor_rollout_ref.actor.kl_loss_type`, kl).'),
  lossAggMode: z
    .enum(LOSS_AGG_MODES)
    .describe(
      "How token losses become one number: token-mean over the micro-batch's loss tokens (RAGEN default), or a mean " +
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
  maxStepKl: z
    .number()
    .min(0)
    .max(L.real)
    .describe(
      "A trust region on each optimizer step of the policy (src/starpo/stepTrustRegion.ts): all of the step's rollouts " +
        'are scored before and after the step, and a step whose mean per-token KL(before ‖ after) on them (k3) exceeds ' +
        'this is undone, weights and AdamW moments restored; logs `actor/step_kl` and `actor/steps_undone`. Costs a ' +
        'forward pass over the rollouts per optimizer step, and one more per training step. 0 = off. Not a RAGEN key.',
    ),
  maxSuccessLogProbDrop: z
    .number()
    .min(0)
    .max(L.real)
    .describe(
      'The same trust region, measured on the rollouts that succeeded: a step that makes them less likely by more ' +
        'than this many nats per rollout on average is undone (a step that breaks the answer format makes every ' +
        'success less likely while the mean KL barely moves); logs `actor/success_logprob_change`. 0 = off. Not a ' +
        'RAGEN key.',
    ),
});

const CriticSchema = z
  .strictObject({
    lr: z
      .number()
      .positive()
      .max(1)
      .describe('AdamW learning rate of the value model (RAGEN `critic.optim.lr`, 1e−5).'),
    betas: betas(),
    weightDecay: z
      .number()
      .min(0)
      .max(1)
      .describe('AdamW weight decay of the critic (veRL `critic.optim.weight_decay`, 0.01).'),
    gradClip: z
      .number()
      .positive()
      .max(L.real)
      .describe('Global gradient-norm clip of the critic (RAGEN `critic.grad_clip`, 1.0).'),
    cliprangeValue: z
      .number()
      .positive()
      .max(L.real)
      .describe(
        'Value clipping: V is kept within V_old ± this in the clipped value loss (RAGEN `critic.cliprange_value`, 0.5).',
      ),
  })
  .describe('The value model of PPO (advEstimator gae); mini/micro-batching follow the actor. Ignored by grpo.');

const LoraSchema = z
  .strictObject({
    enabled: z
      .boolean()
      .describe(
        "Train LoRA adapters instead of every weight (RAGEN `lora.rank` > 0, as config/base-lora.yaml; base.yaml's rank 0 " +
          '= off, the default). The actor and the critic get adapters on their linear layers and their base weights are ' +
          "frozen (no gradients, no AdamW moments: the memory saving); the critic's value head still trains; the " +
          'reference policy is the actor with its adapters off (no copy of the weights). RAGEN raises both learning ' +
          'rates 10x with LoRA (base-lora.yaml: actor.lr 1e−5, critic.lr 1e−4): set them too. Checkpoints keep the ' +
          "adapters in PEFT's format under adapter/.",
      ),
    rank: positiveInt(L.width).describe('r, the inner width of each adapter (RAGEN `lora.rank`; base-lora.yaml 64).'),
    alpha: z
      .number()
      .positive()
      .max(L.real)
      .describe(
        "The adapters' output is scaled by alpha / rank (RAGEN `lora.alpha`; base-lora.yaml 64, base.yaml 16).",
      ),
    targetModules: z
      .array(z.enum(LORA_TARGET_MODULES))
      .min(1)
      .describe(
        "The linear layers that get adapters; all seven is PEFT's and RAGEN's `all-linear` (RAGEN `lora.target_modules`, " +
          "all-linear). No dropout: RAGEN sets none (PEFT's default 0).",
      ),
  })
  .describe(
    'LoRA (Hu et al., 2021) as RAGEN configures it in config/base-lora.yaml and applies it through PEFT (src/model/lora.ts).',
  );

const EarlyStopSchema = z.strictObject({
  enabled: z
    .boolean()
    .describe(
      'Stop a run that entered a regime it cannot learn from (RAGEN-2 trainer; off here by default for parity with RAGEN v1).',
    ),
  emptyStopSteps: nonNegativeInt().describe(
    'Stop after this many consecutive steps whose filter kept nothing; 0 = never (RAGEN-2 `rollout_filter_empty_stop_steps`, 5).',
  ),
  varianceBaselineSteps: nonNegativeInt().describe(
    'Reward-variance collapse: baseline = mean in-group reward std of the first this-many steps; 0 = rule off (RAGEN-2, 10).',
  ),
  varianceCollapseSteps: positiveInt().describe(
    '…stop when this many consecutive later steps are below the threshold (RAGEN-2, 10).',
  ),
  varianceCollapseRatio: probability().describe('…threshold as a fraction of the baseline (RAGEN-2, 0.1).'),
  valSuccessThreshold: probability().describe(
    'Validation collapse: a success rate below this counts as collapsed (RAGEN-2, 0.01).',
  ),
  valCollapseValidations: nonNegativeInt().describe(
    '…stop after this many consecutive collapsed validations of one env; 0 = rule off (RAGEN-2, 5).',
  ),
});

const TrainerSchema = z.strictObject({
  totalSteps: positiveInt().describe(
    'Rollout-then-update iterations (RAGEN `trainer.total_training_steps`, 200). CLI `--steps`.',
  ),
  testFreq: nonNegativeInt().describe(
    'Validate every k steps and after the last one; 0 = never (RAGEN `trainer.test_freq`, 10).',
  ),
  valBeforeTrain: z
    .boolean()
    .describe('Validate once before the first update (RAGEN `trainer.val_before_train`, true).'),
  saveFreq: nonNegativeInt().describe(
    'Write checkpoints/step-N every k steps and after the last one; 0 = never (RAGEN `trainer.save_freq`, −1 = never).',
  ),
  keepCheckpoints: nonNegativeInt().describe(
    'Keep only the newest k checkpoints; 0 = keep all (RAGEN-2 `max_actor_ckpt_to_keep`, all).',
  ),
  seed: nonNegativeInt(L.seed).describe(
    'Seed of model initialisation and token sampling (RAGEN: none; env seeds are agent.seedTrain/seedVal). CLI `--seed`.',
  ),
  backend: z
    .enum(BACKEND_CHOICES)
    .describe(
      "tfjs backend; 'auto' = webgpu on a GPU adapter (a software one such as SwiftShader is passed over), else wasm, else cpu, announced (no RAGEN equivalent). CLI `--backend`.",
    ),
  logRollouts: nonNegativeInt().describe(
    'Sample trajectories per step written to rollouts.jsonl with their think/answer text (RAGEN logs 20 val generations).',
  ),
  stopAfterCollapse: nonNegativeInt().describe(
    "End the run this many steps after its training success collapsed (the Echo Trap lesson's rule: the 5-step mean " +
      'at half its best so far or less, once 0.1 above its start; src/metrics/lessonVerdict.ts); logs ' +
      '`early_stopped/success_collapse`; 0 = never (no RAGEN equivalent). CLI `ragen lesson --stop-after-collapse`.',
  ),
});

/**
 * Every section of a RunConfig, each field typed and bounded. The cross-field rules come on top in ./checks.ts
 * (RunConfigSchema); they do not change the type.
 */
export const RunConfigFieldsSchema = z.strictObject({
  model: ModelSchema.describe(
    'The policy: a tiny model or a local Hugging Face Qwen2 checkpoint, and its prompt format.',
  ),
  agent: AgentSchema.describe(
    'The multi-turn agent: env groups, turn and action budgets, seeds (RAGEN `es_manager` + `agent_proxy`).',
  ),
  rollout: RolloutSchema.describe('Token sampling during rollouts (RAGEN `actor_rollout_ref.rollout`).'),
  algorithm: AlgorithmSchema.describe(
    'Advantages, reward normalisation, loss mask and KL-in-reward (RAGEN `algorithm` + `agent_proxy`).',
  ),
  actor: ActorSchema.describe('The PPO policy update (RAGEN `actor_rollout_ref.actor`).'),
  critic: CriticSchema,
  lora: LoraSchema,
  filter: FilterSchema.describe(
    'StarPO-S uncertainty filtering of env groups by in-group reward std (spec §4.5, §4.7).',
  ),
  earlyStop: EarlyStopSchema.describe("RAGEN-2's early stopping (spec §4.7); consumed by src/starpo/earlyStop.ts."),
  trainer: TrainerSchema.describe('The training loop, validation, checkpoints and backend (RAGEN `trainer`).'),
  collapse: CollapseSchema,
  echoTrap: EchoTrapSchema,
});

export type RunConfig = z.output<typeof RunConfigFieldsSchema>;
export type ModelConfig = RunConfig['model'];
export type AgentConfig = RunConfig['agent'];
export type EnvBlock = AgentConfig['trainEnvs'][number];
export type RolloutConfig = RunConfig['rollout'];
export type AlgorithmConfig = RunConfig['algorithm'];
export type ActorConfig = RunConfig['actor'];
export type CriticConfig = RunConfig['critic'];
export type LoraConfig = RunConfig['lora'];
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
