// The metric keys this project logs, named exactly as RAGEN logs them to Weights & Biases so that a RAGEN
// user's dashboards, plots and habits carry over (spec §6, DESIGN.md "Metric keys are RAGEN's").
//
// Two kinds of keys:
//   * fixed keys, listed once below with what they mean and which RAGEN / verl key they mirror;
//   * per-env-tag keys (`train/<Tag>/success`, `val-env/<Tag>/pass@16`, ...), built by the helpers at the end.
//
// Paper vocabulary (spec §10.14): "entropy" = `actor/entropy_loss`, "reward std" = `rollout/in_group_std`,
// "gradient norm" = `actor/grad_norm`, "success" = `val-env/<Tag>/success`.

export interface MetricKeyDoc {
  /** The exact key written to metrics.jsonl. */
  readonly key: string;
  /** What the number means, in RAGEN's vocabulary. */
  readonly meaning: string;
  /** The RAGEN / verl W&B key it mirrors, or 'new' when this project adds it. */
  readonly mirrors: string;
}

/** Keys every training step of every run writes (plus the per-tag success keys of `requiredMetricKeys`). */
export const REQUIRED_FIXED_KEYS: readonly MetricKeyDoc[] = [
  { key: 'step', meaning: 'training step index (one rollout + update)', mirrors: 'step (W&B x-axis)' },
  {
    key: 'rollout/in_group_std',
    meaning: 'mean over env groups of the in-group std (unbiased) of trajectory reward, before filtering; the paper\'s "reward std"',
    mirrors: 'rollout/in_group_std',
  },
  {
    key: 'rollout/chosen_in_group_std',
    meaning: 'the same mean, over the groups the uncertainty filter kept',
    mirrors: 'rollout/chosen_in_group_std',
  },
  {
    key: 'actor/entropy_loss',
    meaning: 'mean token entropy of the policy on the trained tokens; the paper\'s "entropy"',
    mirrors: 'actor/entropy_loss',
  },
  { key: 'actor/grad_norm', meaning: 'global gradient norm of the actor before clipping', mirrors: 'actor/grad_norm' },
  { key: 'actor/pg_loss', meaning: 'policy-gradient (clipped surrogate) loss', mirrors: 'actor/pg_loss' },
  { key: 'actor/pg_clipfrac', meaning: 'fraction of trained tokens whose ratio was clipped', mirrors: 'actor/pg_clipfrac' },
  { key: 'actor/ppo_kl', meaning: 'masked mean of (log pi_old - log pi_theta)', mirrors: 'actor/ppo_kl' },
  {
    key: 'response_length/mean',
    meaning: 'mean number of trained (assistant, loss-mask) tokens per trajectory',
    mirrors: 'response_length/mean',
  },
  {
    key: 'reasoning_length/mean',
    meaning: 'mean number of tokens inside <think>...</think> per turn (the paper\'s Fig. 11 reasoning length)',
    mirrors: 'new',
  },
  { key: 'timing_s/step', meaning: 'wall-clock seconds for the whole training step', mirrors: 'timing_s/step' },
  { key: 'perf/throughput', meaning: 'trained tokens per second over the step', mirrors: 'perf/throughput' },
];

/** The fixed required keys as plain strings (per-tag success keys: see `requiredMetricKeys`). */
export const REQUIRED_METRIC_KEYS: readonly string[] = REQUIRED_FIXED_KEYS.map((d) => d.key);

/** Required only when a critic is trained (PPO / GAE); GRPO runs have no critic. */
export const CRITIC_KEYS: readonly MetricKeyDoc[] = [
  { key: 'critic/vf_loss', meaning: 'clipped value-function loss of the critic', mirrors: 'critic/vf_loss' },
];

/**
 * The metrics of one collapse-diagnostics sample (RAGEN-2's names), logged under `collapse_first_turn_sample/` and
 * `collapse_trajectory_sample/`. "per token" = the log-probs divided by the reasoning length; `_seq` = summed.
 */
const COLLAPSE_SAMPLE_METRICS: readonly [string, string][] = [
  ['mi_estimate', 'mutual information between prompt and reasoning, mean(matched - marginal) per token (low = template collapse)'],
  ['mi_upper_bound', 'log N, the most MI N prompts can carry'],
  ['mi_seq_estimate', 'the MI estimate on per-sequence log-probs'],
  ['matched_log_prob_mean', 'mean per-token log p(z | own prompt)'],
  ['marginal_log_prob_mean', 'mean per-token log of z\'s probability under the uniform mixture of the prompts'],
  ['conditional_entropy_est', 'H(Z|X) = -mean(matched), per token (low = entropy collapse)'],
  ['reasoning_entropy_est', 'H(Z) = -mean(marginal), per token'],
  ['conditional_entropy_seq_est', 'H(Z|X) per sequence'],
  ['reasoning_entropy_seq_est', 'H(Z) per sequence'],
  ['retrieval_accuracy', 'fraction of reasonings whose best-scoring prompt is their own (identical prompts count as correct)'],
  ['retrieval_chance_level', 'the accuracy of a random guess'],
  ['retrieval_above_chance', 'retrieval_accuracy - retrieval_chance_level'],
  ...[2, 4, 8].flatMap((k): [string, string][] => [
    [`retrieval_accuracy@${k}`, `fraction whose own prompt is among the ${k} best-scoring`],
    [`retrieval_chance_level@${k}`, `chance level of retrieval_accuracy@${k}`],
    [`retrieval_above_chance@${k}`, `retrieval_accuracy@${k} - its chance level`],
  ]),
  ['marginal_std', 'std over samples of the per-token marginal'],
  ['marginal_std_seq', 'std of the per-sequence marginal'],
  ['marginal_std_ema', 'moving average (decay 0.9) of marginal_std over the diagnosed steps'],
  ['marginal_std_ema_seq', 'moving average of marginal_std_seq'],
  ['mi_zscore', 'mean((matched - marginal) / (marginal_std + 1e-3))'],
  ['mi_zscore_seq', 'mi_zscore on per-sequence log-probs'],
  ['mi_zscore_ema', 'mi_zscore with marginal_std_ema in the denominator (the echo-trap MI signal)'],
  ['mi_zscore_ema_seq', 'mi_zscore_seq with marginal_std_ema_seq'],
];

/** Keys that are logged when the feature that produces them is on; never required. */
export const OPTIONAL_FIXED_KEYS: readonly MetricKeyDoc[] = [
  { key: 'rollout/in_group_max', meaning: 'mean over groups of the in-group max reward', mirrors: 'rollout/in_group_max' },
  { key: 'rollout/in_group_mean', meaning: 'mean over groups of the in-group mean reward', mirrors: 'rollout/in_group_mean' },
  { key: 'rollout/chosen_in_group_max', meaning: 'in_group_max over kept groups', mirrors: 'rollout/chosen_in_group_max' },
  { key: 'rollout/chosen_in_group_mean', meaning: 'in_group_mean over kept groups', mirrors: 'rollout/chosen_in_group_mean' },
  { key: 'rollout/filter_kept_ratio', meaning: 'fraction of env groups kept by the filter', mirrors: 'rollout/filter_kept_ratio (v2)' },
  { key: 'actor/pg_clipfrac_lower', meaning: 'fraction clipped by the dual clip (A<0)', mirrors: 'actor/pg_clipfrac_lower' },
  { key: 'actor/lr', meaning: 'actor learning rate', mirrors: 'actor/lr' },
  { key: 'actor/kl_loss', meaning: 'KL(pi_theta || pi_ref) loss term when use_kl_loss', mirrors: 'actor/kl_loss' },
  { key: 'actor/kl_coef', meaning: 'KL loss coefficient', mirrors: 'actor/kl_coef' },
  { key: 'critic/vf_clipfrac', meaning: 'fraction of values clipped by cliprange_value', mirrors: 'critic/vf_clipfrac' },
  { key: 'critic/vpred_mean', meaning: 'mean critic value on trained tokens', mirrors: 'critic/vpred_mean' },
  { key: 'critic/grad_norm', meaning: 'critic gradient norm before clipping', mirrors: 'critic/grad_norm' },
  { key: 'critic/score/mean', meaning: 'mean trajectory score (reward + format penalty)', mirrors: 'critic/score/mean' },
  { key: 'critic/step_adv/shared_turns', meaning: "share of the step's turns that start from a state another turn of the env group also started from (GiGPO anchor groups; algorithm.stepAdvantage)", mirrors: 'new' },
  { key: 'critic/step_adv/abs_mean', meaning: 'mean |step-level advantage| over the turns of the step (algorithm.stepAdvantage)', mirrors: 'new' },
  { key: 'response_length/max', meaning: 'max trained tokens in one trajectory', mirrors: 'response_length/max' },
  { key: 'timing_s/gen', meaning: 'seconds spent generating rollouts', mirrors: 'timing_s/gen' },
  { key: 'timing_s/update_actor', meaning: 'seconds spent in the actor update', mirrors: 'timing_s/update_actor' },
  { key: 'timing_s/update_critic', meaning: 'seconds spent in the critic update', mirrors: 'timing_s/update_critic' },
  { key: 'timing_s/testing', meaning: 'seconds spent in validation', mirrors: 'timing_s/testing' },
  { key: 'perf/total_num_tokens', meaning: 'trained tokens in the step', mirrors: 'perf/total_num_tokens' },
  // Reasoning diversity (src/metrics/reasoning.ts): new in this project; RAGEN-2's template collapse made visible.
  { key: 'reasoning/distinct_1', meaning: 'distinct unigrams / all unigrams across the step\'s think texts', mirrors: 'new' },
  { key: 'reasoning/distinct_2', meaning: 'distinct bigrams / all bigrams', mirrors: 'new' },
  { key: 'reasoning/distinct_3', meaning: 'distinct trigrams / all trigrams', mirrors: 'new' },
  { key: 'reasoning/unique_fraction', meaning: 'distinct think strings / think strings (echo policy -> 1/N)', mirrors: 'new' },
  {
    key: 'reasoning/pairwise_diversity',
    meaning: '1 - mean bigram-set Jaccard similarity over pairs of think texts (echo policy -> 0)',
    mirrors: 'new',
  },
  {
    key: 'reasoning/cross_state_shared',
    meaning: 'fraction of think texts that also occur, verbatim, for a different initial state (ignores the input -> 1)',
    mirrors: 'new (proxy for RAGEN-2 MI collapse)',
  },
  { key: 'reasoning/valid_thinking_rate', meaning: 'fraction of turns with a <think>...</think> block', mirrors: 'collapse/valid_thinking_rate (v2)' },
  // Grounding (src/metrics/grounding.ts): is the reasoning true of the board? New in this project (DESIGN.md).
  { key: 'reasoning/grounding', meaning: 'true / checkable claims in <think> about the current observation', mirrors: 'new' },
  { key: 'reasoning/grounding_blind', meaning: 'the same claims checked against another state of the batch (chance level)', mirrors: 'new' },
  { key: 'reasoning/grounding_claims', meaning: 'checkable claims per turn', mirrors: 'new' },
  { key: 'reasoning/answer_agreement', meaning: 'turns whose reasoning names a choice equal to the answer / turns naming one', mirrors: 'new' },
  // RAGEN-2's collapse diagnostics (src/metrics/collapse.ts), on the steps that compute them.
  { key: 'collapse/valid_thinking_rate', meaning: 'fraction of the step\'s turns whose <think> block holds reasoning', mirrors: 'collapse/valid_thinking_rate (v2)' },
  { key: 'collapse/first_turn_num_total', meaning: 'trajectories of the step (first turns)', mirrors: 'collapse/first_turn_num_total (v2)' },
  { key: 'collapse/first_turn_num_valid', meaning: 'first turns with reasoning', mirrors: 'collapse/first_turn_num_valid (v2)' },
  { key: 'collapse/first_turn_valid_rate', meaning: 'first_turn_num_valid / first_turn_num_total', mirrors: 'collapse/first_turn_valid_rate (v2)' },
  { key: 'timing_s/collapse_metrics', meaning: 'seconds spent in the collapse diagnostics', mirrors: 'timing_s/collapse_metrics (v2)' },
  { key: 'timing_s/collapse_first_turn_step', meaning: 'seconds of the first-turn sample', mirrors: 'timing_s/collapse_first_turn_step (v2)' },
  { key: 'timing_s/collapse_multi_turn_step', meaning: 'seconds of the trajectory sample', mirrors: 'timing_s/collapse_multi_turn_step (v2)' },
  ...['collapse_first_turn_sample', 'collapse_trajectory_sample'].flatMap((prefix) =>
    COLLAPSE_SAMPLE_METRICS.map(([name, meaning]) => ({ key: `${prefix}/${name}`, meaning, mirrors: `${prefix}/${name} (v2)` })),
  ),
  // Echo-trap early warning (src/metrics/echoTrap.ts).
  { key: 'echo_trap/warning', meaning: '1 from the step the early warning fired onwards, else 0', mirrors: 'new' },
  {
    key: 'echo_trap/signal',
    meaning: "what fired the warning (a text: the low signals, '+'-joined from reward_std, entropy, mi_zscore_ema), on every row from the firing step",
    mirrors: 'new',
  },
  {
    key: 'echo_trap/converged',
    meaning: '1 from the step the run counted as converged (low in-group reward std, no update trained on low-std groups, training success at its best), else 0',
    mirrors: 'new',
  },
  { key: 'echo_trap/trained_std_ratio', meaning: 'rollout/chosen_in_group_std (the groups the update trained on) / the reward-std baseline; NaN when nothing was kept', mirrors: 'new' },
  { key: 'echo_trap/reward_std_ratio', meaning: 'rollout/in_group_std / its early-training baseline', mirrors: 'new' },
  { key: 'echo_trap/entropy_ratio', meaning: 'actor/entropy_loss / its early-training baseline', mirrors: 'new' },
  { key: 'echo_trap/mi_ratio', meaning: 'the latest MI z-score EMA of the collapse diagnostics / its early baseline', mirrors: 'new' },
  { key: 'echo_trap/grad_norm_spike', meaning: '1 on a step whose grad norm exceeds k x its running median ("collapse confirmed")', mirrors: 'new' },
];

/** The two metric namespaces of env metrics: training rollouts and validation rollouts. */
export type EnvSplit = 'train' | 'val';

/** RAGEN prefixes train env metrics with `train/` and validation env metrics with `val-env/`. */
export function envSplitPrefix(split: EnvSplit): string {
  if (split === 'train') return 'train';
  if (split === 'val') return 'val-env';
  throw new Error(`unknown env metric split "${String(split)}" (expected "train" or "val")`);
}

/** `train/<Tag>/<name>` or `val-env/<Tag>/<name>`. */
export function envMetricKey(split: EnvSplit, tag: string, name: string): string {
  if (!tag || tag.includes('/')) throw new Error(`invalid env tag "${tag}" for a metric key (empty or contains "/")`);
  return `${envSplitPrefix(split)}/${tag}/${name}`;
}

/** RAGEN's pass@k name: k is the group size (all members of a group start from the same initial state). */
export function passAtName(groupSize: number): string {
  if (!Number.isInteger(groupSize) || groupSize < 1) throw new Error(`pass@k needs a positive integer group size, got ${groupSize}`);
  return `pass@${groupSize}`;
}

/** The per-env metric names RAGEN logs under each tag (besides `non-zero/<name>` variants and pass@k). */
export const ENV_METRIC_NAMES = ['success', 'num_actions', 'action_is_effective', 'action_is_valid'] as const;
export type EnvMetricName = (typeof ENV_METRIC_NAMES)[number];

export const trainSuccessKey = (tag: string): string => envMetricKey('train', tag, 'success');
export const valSuccessKey = (tag: string): string => envMetricKey('val', tag, 'success');

export interface RequiredKeysOptions {
  /** Env tags trained on (their `train/<Tag>/success` is required). */
  trainTags: readonly string[];
  /** Env tags validated on (their `val-env/<Tag>/success` is required). Validation runs every test_freq steps,
   *  so these appear on validation steps only: check them over the whole file, not line by line. */
  valTags: readonly string[];
  /** True when a critic is trained (PPO / GAE): adds `critic/vf_loss`. */
  hasCritic: boolean;
}

/** Every key a run's metrics.jsonl must hold (over its lines together), in a stable order. */
export function requiredMetricKeys(opts: RequiredKeysOptions): string[] {
  const keys = [...REQUIRED_METRIC_KEYS];
  if (opts.hasCritic) keys.push(...CRITIC_KEYS.map((d) => d.key));
  for (const tag of opts.trainTags) keys.push(trainSuccessKey(tag));
  for (const tag of opts.valTags) keys.push(valSuccessKey(tag));
  return [...new Set(keys)];
}

/** The required keys no row of `rows` holds (empty when the file is complete). */
export function missingRequiredKeys(rows: readonly Record<string, unknown>[], opts: RequiredKeysOptions): string[] {
  const seen = new Set<string>();
  for (const row of rows) for (const k of Object.keys(row)) seen.add(k);
  return requiredMetricKeys(opts).filter((k) => !seen.has(k));
}
