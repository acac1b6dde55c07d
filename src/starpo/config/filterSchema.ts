// The `filter` section of the run configuration: StarPO-S's uncertainty filter and RAGEN-2's SNR-adaptive filter.
//
// The one schema of the filter's settings. It sits in a file of its own, with nothing but zod, so that filter.ts
// (which runs the filter) can take its types and checks from here while the config's cross-field rules
// (./checks.ts) call filter.ts: no import runs in a circle.
import { z } from 'zod';
import { CONFIG_LIMITS } from './limits';

export const FilterSchema = z.strictObject({
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
        '`rollout_filter_type`, std; v2 spells them largest / smallest).',
    ),
  value: z
    .number()
    .positive()
    .max(CONFIG_LIMITS.real)
    .describe(
      'v2 strategies only: top_p mass (≥ 1 keeps all), top_k fraction of groups, top_k_abs group count, min_p ratio ' +
        'to the best score (RAGEN-2 `rollout_filter_value`, 1.0).',
    ),
  includeZero: z
    .boolean()
    .describe(
      'v2 only: false = never keep a group whose score is 0 (RAGEN-2 `rollout_filter_include_zero`, true; recommended false).',
    ),
  minScore: z
    .number()
    .min(0)
    .max(CONFIG_LIMITS.real)
    .describe(
      'v2 only: never keep a group whose score is below this floor (0 = no floor). Not a RAGEN key: with binary ' +
        'rewards a group of 8 where one rollout differs has a std of about 0.32-0.35 and two differing about 0.42-0.46, ' +
        'so 0.36 keeps only groups where at least two rollouts disagree with the rest (the echo-trap lesson).',
    ),
  topPProbMode: z
    .enum(['linear', 'softmax'])
    .describe(
      "v2 top_p only: cumulative share of the raw scores ('linear') or of their softmax (RAGEN-2 `rollout_filter_top_p_prob_mode`, linear).",
    ),
  selectionEps: z
    .number()
    .min(0)
    .max(CONFIG_LIMITS.real)
    .describe(
      'v2 linear top_p only: the threshold is value·Σscores − eps (RAGEN-2 `rollout_filter_selection_eps`, 0.01).',
    ),
  metric: z
    .enum(['reward_variance', 'reward', 'reward_sum', 'entropy', 'entropy_variance', 'length'])
    .describe(
      "v2 only: the per-group score ranked; 'reward_variance' = in-group reward std, the v1 criterion (RAGEN-2 " +
        '`rollout_filter_metric`, reward_variance).',
    ),
  lossScaling: z
    .enum(['none', 'linear', 'sqrt'])
    .describe(
      'v2 only: scale advantages by the kept fraction of groups or its square root (RAGEN-2 `filter_loss_scaling`, none).',
    ),
});

export type FilterConfig = z.output<typeof FilterSchema>;
