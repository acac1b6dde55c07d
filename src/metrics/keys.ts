// The metric keys this project logs, named exactly as RAGEN logs them to Weights & Biases so that a RAGEN
// user's dashboards, plots and habits carry over (spec §6, docs/architecture.md "Metric keys are RAGEN's").
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

/** A key RAGEN (or verl) logs under the same name. */
const ragen = (key: string, meaning: string): MetricKeyDoc => ({ key, meaning, mirrors: key });
/** A key only RAGEN-2 logs, under the same name. */
const ragen2 = (key: string, meaning: string): MetricKeyDoc => ({ key, meaning, mirrors: `${key} (v2)` });
/** A key this project adds. */
const added = (key: string, meaning: string): MetricKeyDoc => ({ key, meaning, mirrors: 'new' });

/** Keys every training step of every run writes (plus the per-tag success keys of `requiredMetricKeys`). */
export const REQUIRED_FIXED_KEYS: readonly MetricKeyDoc[] = [
  { key: 'step', meaning: 'training step index (one rollout + update)', mirrors: 'step (W&B x-axis)' },
  ragen(
    'rollout/in_group_std',
    'mean over env groups of the in-group std (unbiased) of trajectory reward, before filtering; the paper\'s "reward std"',
  ),
  ragen('rollout/chosen_in_group_std', 'the same mean, over the groups the uncertainty filter kept'),
  ragen('actor/entropy_loss', 'mean token entropy of the policy on the trained tokens; the paper\'s "entropy"'),
  ragen('actor/grad_norm', 'global gradient norm of the actor before clipping'),
  ragen('actor/pg_loss', 'policy-gradient (clipped surrogate) loss'),
  ragen('actor/pg_clipfrac', 'fraction of trained tokens whose ratio was clipped'),
  ragen('actor/ppo_kl', 'masked mean of (log pi_old - log pi_theta)'),
  ragen('response_length/mean', 'mean number of trained (assistant, loss-mask) tokens per trajectory'),
  added(
    'reasoning_length/mean',
    "mean number of tokens inside <think>...</think> per turn (the paper's Fig. 11 reasoning length)",
  ),
  ragen('timing_s/step', 'wall-clock seconds for the whole training step'),
  ragen('perf/throughput', 'trained tokens per second over the step'),
];

/** The fixed required keys as plain strings (per-tag success keys: see `requiredMetricKeys`). */
export const REQUIRED_METRIC_KEYS: readonly string[] = REQUIRED_FIXED_KEYS.map((d) => d.key);

/** Required only when a critic is trained (PPO / GAE); GRPO runs have no critic. */
export const CRITIC_KEYS: readonly MetricKeyDoc[] = [
  ragen('critic/vf_loss', 'clipped value-function loss of the critic'),
];

/**
 * The metrics of one collapse-diagnostics sample (RAGEN-2's names), logged under `collapse_first_turn_sample/` and
 * `collapse_trajectory_sample/`. "per token" = the log-probs divided by the reasoning length; `_seq` = summed.
 */
const COLLAPSE_SAMPLE_METRICS: readonly [string, string][] = [
  [
    'mi_estimate',
    'mutual information between prompt and reasoning, mean(matched - marginal) per token (low = template collapse)',
  ],
  ['mi_upper_bound', 'log N, the most MI N prompts can carry'],
  ['mi_seq_estimate', 'the MI estimate on per-sequence log-probs'],
  ['matched_log_prob_mean', 'mean per-token log p(z | own prompt)'],
  ['marginal_log_prob_mean', "mean per-token log of z's probability under the uniform mixture of the prompts"],
  ['conditional_entropy_est', 'H(Z|X) = -mean(matched), per token (low = entropy collapse)'],
  ['reasoning_entropy_est', 'H(Z) = -mean(marginal), per token'],
  ['conditional_entropy_seq_est', 'H(Z|X) per sequence'],
  ['reasoning_entropy_seq_est', 'H(Z) per sequence'],
  [
    'retrieval_accuracy',
    'fraction of reasonings whose best-scoring prompt is their own (identical prompts count as correct)',
  ],
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
  ragen('rollout/in_group_max', 'mean over groups of the in-group max reward'),
  ragen('rollout/in_group_mean', 'mean over groups of the in-group mean reward'),
  ragen('rollout/chosen_in_group_max', 'in_group_max over kept groups'),
  ragen('rollout/chosen_in_group_mean', 'in_group_mean over kept groups'),
  ragen2('rollout/filter_kept_ratio', 'fraction of env groups kept by the filter'),
  ragen('actor/pg_clipfrac_lower', 'fraction clipped by the dual clip (A<0)'),
  ragen('actor/lr', 'actor learning rate'),
  ragen('actor/kl_loss', 'KL(pi_theta || pi_ref) loss term when use_kl_loss'),
  ragen('actor/kl_coef', 'KL loss coefficient'),
  ragen('critic/vf_clipfrac', 'fraction of values clipped by cliprange_value'),
  ragen('critic/vpred_mean', 'mean critic value on trained tokens'),
  ragen('critic/grad_norm', 'critic gradient norm before clipping'),
  ragen('critic/score/mean', 'mean trajectory score (reward + format penalty)'),
  added(
    'critic/step_adv/shared_turns',
    "share of the step's turns that start from a state another turn of the env group also started from (GiGPO anchor groups; algorithm.stepAdvantage)",
  ),
  added('critic/step_adv/abs_mean', 'mean |step-level advantage| over the turns of the step (algorithm.stepAdvantage)'),
  ragen('response_length/max', 'max trained tokens in one trajectory'),
  ragen('timing_s/gen', 'seconds spent generating rollouts'),
  ragen('timing_s/update_actor', 'seconds spent in the actor update'),
  ragen('timing_s/update_critic', 'seconds spent in the critic update'),
  ragen('timing_s/testing', 'seconds spent in validation'),
  ragen('perf/total_num_tokens', 'trained tokens in the step'),
  // Reasoning diversity (src/metrics/reasoning.ts): new in this project; RAGEN-2's template collapse made visible.
  added('reasoning/distinct_1', "distinct unigrams / all unigrams across the step's think texts"),
  added('reasoning/distinct_2', 'distinct bigrams / all bigrams'),
  added('reasoning/distinct_3', 'distinct trigrams / all trigrams'),
  added('reasoning/unique_fraction', 'distinct think strings / think strings (echo policy -> 1/N)'),
  added(
    'reasoning/pairwise_diversity',
    '1 - mean bigram-set Jaccard similarity over pairs of think texts (echo policy -> 0)',
  ),
  {
    key: 'reasoning/cross_state_shared',
    meaning:
      'fraction of think texts that also occur, verbatim, for a different initial state (ignores the input -> 1)',
    mirrors: 'new (proxy for RAGEN-2 MI collapse)',
  },
  {
    key: 'reasoning/valid_thinking_rate',
    meaning: 'fraction of turns with a <think>...</think> block',
    mirrors: 'collapse/valid_thinking_rate (v2)',
  },
  // Grounding (src/metrics/grounding.ts): is the reasoning true of the board? New in this project
  // (docs/architecture.md).
  added('reasoning/grounding', 'true / checkable claims in <think> about the current observation'),
  added('reasoning/grounding_blind', 'the same claims checked against another state of the batch (chance level)'),
  added('reasoning/grounding_claims', 'checkable claims per turn'),
  added('reasoning/answer_agreement', 'turns whose reasoning names a choice equal to the answer / turns naming one'),
  // RAGEN-2's collapse diagnostics (src/metrics/collapse.ts), on the steps that compute them.
  ragen2('collapse/valid_thinking_rate', "fraction of the step's turns whose <think> block holds reasoning"),
  ragen2('collapse/first_turn_num_total', 'trajectories of the step (first turns)'),
  ragen2('collapse/first_turn_num_valid', 'first turns with reasoning'),
  ragen2('collapse/first_turn_valid_rate', 'first_turn_num_valid / first_turn_num_total'),
  ragen2('timing_s/collapse_metrics', 'seconds spent in the collapse diagnostics'),
  ragen2('timing_s/collapse_first_turn_step', 'seconds of the first-turn sample'),
  ragen2('timing_s/collapse_multi_turn_step', 'seconds of the trajectory sample'),
  ...['collapse_first_turn_sample', 'collapse_trajectory_sample'].flatMap((prefix) =>
    COLLAPSE_SAMPLE_METRICS.map(([name, meaning]) => ({
      key: `${prefix}/${name}`,
      meaning,
      mirrors: `${prefix}/${name} (v2)`,
    })),
  ),
  // Echo-trap early warning (src/metrics/echoTrap.ts).
  added('echo_trap/warning', '1 from the step the early warning fired onwards, else 0'),
  added(
    'echo_trap/signal',
    "what fired the warning (a text: the low signals, '+'-joined from reward_std, entropy, mi_zscore_ema), on every row from the firing step",
  ),
  added(
    'echo_trap/converged',
    '1 from the step the run counted as converged (low in-group reward std, no update trained on low-std groups, training success at its best), else 0',
  ),
  added(
    'echo_trap/trained_std_ratio',
    'rollout/chosen_in_group_std (the groups the update trained on) / the reward-std baseline; NaN when nothing was kept',
  ),
  added('echo_trap/reward_std_ratio', 'rollout/in_group_std / its early-training baseline'),
  added('echo_trap/entropy_ratio', 'actor/entropy_loss / its early-training baseline'),
  added('echo_trap/mi_ratio', 'the latest MI z-score EMA of the collapse diagnostics / its early baseline'),
  added(
    'echo_trap/grad_norm_spike',
    '1 on a step whose grad norm exceeds k x its running median ("collapse confirmed")',
  ),
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
  if (!Number.isInteger(groupSize) || groupSize < 1)
    throw new Error(`pass@k needs a positive integer group size, got ${groupSize}`);
  return `pass@${groupSize}`;
}

/** The per-env metric names RAGEN logs under each tag (besides `non-zero/<name>` variants and pass@k). */
export const ENV_METRIC_NAMES = ['success', 'num_actions', 'action_is_effective', 'action_is_valid'] as const;
export type EnvMetricName = (typeof ENV_METRIC_NAMES)[number];

export const trainSuccessKey = (tag: string): string => envMetricKey('train', tag, 'success');
export const valSuccessKey = (tag: string): string => envMetricKey('val', tag, 'success');

/**
 * The split and env tag of a success key (`train/<Tag>/success` or `val-env/<Tag>/success`), or null for any other
 * key. The one reader of success keys: the charts, the CLI's step line, the summaries and the echo-trap detector
 * pick them out of a metrics row with it.
 */
export function parseSuccessKey(key: string): { split: EnvSplit; tag: string } | null {
  const m = /^(train|val-env)\/([^/]+)\/success$/.exec(key);
  if (!m) return null;
  return { split: m[1] === 'train' ? 'train' : 'val', tag: m[2] };
}

/** Whether `key` is a success key of the given split (either split when none is given). */
export function isSuccessKey(key: string, split?: EnvSplit): boolean {
  const parsed = parseSuccessKey(key);
  return parsed !== null && (split === undefined || parsed.split === split);
}

/** Env tag -> value of every success key of `split` in a metrics row (non-numbers skipped). */
export function successByTag(row: Readonly<Record<string, unknown>>, split: EnvSplit): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [key, value] of Object.entries(row)) {
    const parsed = parseSuccessKey(key);
    if (parsed?.split === split && typeof value === 'number') out[parsed.tag] = value;
  }
  return out;
}

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
