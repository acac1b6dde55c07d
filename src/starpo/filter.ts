// StarPO-S uncertainty filtering: keep the env groups whose rollouts disagree most about the reward (spec §4.5),
// and RAGEN-2's generalisation, SNR-adaptive filtering (spec §4.7).
//
// How the trainer uses this file:
//   - At config time: `checkFilterConfigV1(...)` (v1) so a filter that keeps no group, or a kept batch that cannot
//     fill one mini-batch, is refused before any rollout is spent.
//   - Every step, right after the rollout and BEFORE advantages: pass one value per trajectory, laid out group-major
//     (trajectory i belongs to env group floor(i / groupSize), as RAGEN's env-state manager numbers them). For the
//     reward metrics that value is the RAW trajectory reward: the sum of env rewards WITHOUT the format penalty
//     (RAGEN's `original_rm_scores`). Keep only `keptTrajectories` (in their original order) for the update, and
//     merge `metrics` into the step's metrics. In v2, an empty selection means the step is skipped
//     (`rollout/empty_after_filter` = 1) and counted by earlyStop.ts.
//
// Ties: torch.topk / torch.sort give no order guarantee among equal scores. Here ties are broken by a stable rule:
// among equal scores the LOWER group index wins (for both 'largest' and 'smallest'). This matters in practice: with
// binary rewards many groups share a std of exactly 0.

import { z } from 'zod';
import { meanAndUnbiasedStd } from './advantages';
import { FilterSchema, type FilterConfig as FilterSettings } from './config/filterSchema';

/** Result of a filter: which groups and trajectories to keep, plus RAGEN's metrics (plain numbers, JSON-safe). */
export interface FilterResult {
  /** Kept env group indices, ascending. */
  keptGroups: number[];
  /** Kept trajectory indices, ascending (original batch order, as RAGEN's boolean mask keeps them). */
  keptTrajectories: number[];
  metrics: Record<string, number>;
}

/** Per-group statistics of the per-trajectory values. */
export interface GroupStats {
  /** Unbiased (n - 1) std; 0 for a group of one (torch would say NaN, which no metric sink can store). */
  std: number[];
  max: number[];
  mean: number[];
  sum: number[];
}

export function groupStats(values: readonly number[], numGroups: number, groupSize: number): GroupStats {
  if (!Number.isInteger(numGroups) || numGroups < 1)
    throw new Error(`filter: numGroups must be a positive integer, got ${numGroups}`);
  if (!Number.isInteger(groupSize) || groupSize < 1)
    throw new Error(`filter: groupSize must be a positive integer, got ${groupSize}`);
  if (values.length !== numGroups * groupSize) {
    throw new Error(
      `filter: got ${values.length} trajectory values but numGroups x groupSize = ${numGroups} x ${groupSize} = ${numGroups * groupSize}`,
    );
  }
  values.forEach((v, i) => {
    if (!Number.isFinite(v)) throw new Error(`filter: value of trajectory ${i} is ${v}: expected a finite number`);
  });
  const stats: GroupStats = { std: [], max: [], mean: [], sum: [] };
  for (let g = 0; g < numGroups; g++) {
    const xs = values.slice(g * groupSize, (g + 1) * groupSize);
    const { mean, std } = meanAndUnbiasedStd(xs);
    stats.std.push(groupSize < 2 ? 0 : std);
    stats.max.push(Math.max(...xs));
    stats.mean.push(mean);
    stats.sum.push(mean * groupSize);
  }
  return stats;
}

/** Group indices ordered by score, best first; ties keep the lower group index first. */
function rankGroups(scores: readonly number[], candidates: readonly number[], order: 'largest' | 'smallest'): number[] {
  const sign = order === 'largest' ? -1 : 1;
  return candidates.slice().sort((a, b) => sign * (scores[a] - scores[b]) || a - b);
}

function meanOf(xs: readonly number[], idx: readonly number[]): number {
  return idx.length === 0 ? 0 : idx.reduce((s, i) => s + xs[i], 0) / idx.length;
}

function trajectoriesOf(groups: readonly number[], groupSize: number): number[] {
  const out: number[] = [];
  for (const g of groups) for (let k = 0; k < groupSize; k++) out.push(g * groupSize + k);
  return out;
}

// --------------------------------------------------------------------------------------------------------------
// v1: RAGEN's StarPO-S filter (rollout_filter_ratio / rollout_filter_type)
// --------------------------------------------------------------------------------------------------------------

/**
 * The v1 filter's settings, the run config's `filter.ratio` (`rollout_filter_ratio`: fraction of env groups kept,
 * floor(ratio x numGroups); 1 = vanilla StarPO, 0.25 = StarPO-S) and `filter.type` (`rollout_filter_type`: 'std'
 * keeps the LARGEST in-group reward stds, 'std_rev' the smallest).
 */
export type RolloutFilterV1Config = Pick<FilterSettings, 'ratio' | 'type'>;

export const STARPO_S_FILTER_V1: RolloutFilterV1Config = { ratio: 0.25, type: 'std' };

function checkRatio(ratio: number): void {
  if (!(ratio > 0 && ratio <= 1)) throw new Error(`rollout filter ratio must be in (0, 1], got ${ratio}`);
}

/** Number of groups the v1 filter keeps: floor(ratio x numGroups) (Python's int(), as RAGEN). */
export function keptGroupCountV1(ratio: number, numGroups: number): number {
  checkRatio(ratio);
  // Guard against 0.29 * 100 = 28.999999999999996 style float error before flooring.
  return Math.floor(ratio * numGroups + 1e-9);
}

/**
 * Config-time check of the v1 filter (call it when the run config is resolved).
 *
 * - A ratio that rounds to zero groups (floor(ratio x numGroups) = 0) is an ERROR here, never "keep one anyway":
 *   RAGEN's topk(0) would hand an empty batch to the update; a config that can never train is a mistake to report.
 * - RAGEN asserts env_groups x group_size x ratio >= ppo_mini_batch_size, i.e. the kept batch fills at least one
 *   mini-batch. This check uses the kept count that is really produced, floor(ratio x numGroups) x groupSize: equal
 *   to RAGEN's product whenever ratio x numGroups is whole (the default 8 x 16 x 0.25 = 32 = 32), and stricter when
 *   it is not (3 groups x 4 x 0.5 = 6 passes RAGEN's assert but keeps only 1 group = 4 trajectories).
 */
export function checkFilterConfigV1(args: {
  numGroups: number;
  groupSize: number;
  ratio: number;
  miniBatchSize: number;
}): void {
  const { numGroups, groupSize, ratio, miniBatchSize } = args;
  checkRatio(ratio);
  const k = keptGroupCountV1(ratio, numGroups);
  if (k < 1) {
    throw new Error(
      `rollout filter keeps no group: floor(ratio ${ratio} x env groups ${numGroups}) = 0; raise the ratio or the number of env groups`,
    );
  }
  const kept = k * groupSize;
  if (kept < miniBatchSize) {
    throw new Error(
      `rollout filter keeps ${k} group(s) x group size ${groupSize} = ${kept} trajectories (env groups ${numGroups} x ` +
        `group size ${groupSize} x ratio ${ratio} = ${numGroups * groupSize * ratio}), fewer than the mini-batch size ` +
        `${miniBatchSize}: the kept batch must fill at least one mini-batch`,
    );
  }
}

/**
 * RAGEN's in-group statistics (std, max, mean), averaged over all groups and over the kept ones:
 * `rollout/in_group_std`, ..., or with a family `rollout/in_group_<family>_std`, ...
 */
function inGroupMetrics(
  stats: GroupStats,
  all: readonly number[],
  kept: readonly number[],
  family?: string,
): Record<string, number> {
  const infix = family ? `${family}_` : '';
  return {
    [`rollout/in_group_${infix}std`]: meanOf(stats.std, all),
    [`rollout/in_group_${infix}max`]: meanOf(stats.max, all),
    [`rollout/in_group_${infix}mean`]: meanOf(stats.mean, all),
    [`rollout/chosen_in_group_${infix}std`]: meanOf(stats.std, kept),
    [`rollout/chosen_in_group_${infix}max`]: meanOf(stats.max, kept),
    [`rollout/chosen_in_group_${infix}mean`]: meanOf(stats.mean, kept),
  };
}

/**
 * v1 uncertainty filter (spec §4.5): per group, std (unbiased), max and mean of the RAW rewards (no format penalty);
 * keep the floor(ratio x numGroups) groups with the largest std ('std') or smallest ('std_rev'); whole groups only.
 * ratio = 1 keeps everything. Metrics are means over groups: `rollout/in_group_std|max|mean` over all groups and
 * `rollout/chosen_in_group_std|max|mean` over the kept ones.
 */
export function filterGroupsV1(
  rawRewards: readonly number[],
  numGroups: number,
  groupSize: number,
  config: RolloutFilterV1Config,
): FilterResult {
  const stats = groupStats(rawRewards, numGroups, groupSize);
  const all = Array.from({ length: numGroups }, (_, g) => g);
  let kept: number[];
  if (config.ratio === 1) {
    kept = all;
  } else {
    if (config.type !== 'std' && config.type !== 'std_rev') {
      throw new Error(`rollout filter type must be 'std' or 'std_rev', got '${config.type as string}'`);
    }
    const k = keptGroupCountV1(config.ratio, numGroups);
    if (k < 1) {
      throw new Error(`rollout filter keeps no group: floor(ratio ${config.ratio} x env groups ${numGroups}) = 0`);
    }
    kept = rankGroups(stats.std, all, config.type === 'std' ? 'largest' : 'smallest').slice(0, k);
    kept.sort((a, b) => a - b);
  }
  return {
    keptGroups: kept,
    keptTrajectories: trajectoriesOf(kept, groupSize),
    metrics: inGroupMetrics(stats, all, kept),
  };
}

// --------------------------------------------------------------------------------------------------------------
// v2: RAGEN-2's SNR-adaptive filter (rollout_filter_strategy / value / type / include_zero / ...)
// --------------------------------------------------------------------------------------------------------------

/**
 * What is computed per group and ranked (`filter.metric`); the caller passes the matching per-trajectory value:
 * 'reward_variance' = in-group std of trajectory rewards (the name says variance; RAGEN ranks by the std), 'reward' =
 * in-group mean reward, 'reward_sum' = in-group sum, 'entropy' = in-group mean of per-trajectory mean token entropy,
 * 'entropy_variance' = its in-group std, 'length' = in-group mean of loss-token counts.
 */
export type FilterMetric = FilterSettings['metric'];

/**
 * RAGEN-2's filter settings as its code spells them: the v2 keys of the run config's `filter` section (same schema,
 * same checks), with the ranking direction written `largest` / `smallest` as in RAGEN-2. The strategies:
 *  - 'top_p': nucleus-style, see `topPProbMode`; value >= 1 keeps every candidate;
 *  - 'top_k': keep max(1, floor(value x numGroups)) groups;
 *  - 'top_k_abs': keep max(1, floor(value)) groups;
 *  - 'min_p': 'largest' keeps score >= value x max; 'smallest' keeps score <= min / value.
 * `topPProbMode` (top_p only): 'linear' sorts the scores, threshold = value x sum(scores) - selectionEps, and adds
 * groups while the running sum is below the threshold and the next score is positive; if the threshold is not
 * reached, NOTHING is kept. 'softmax': probabilities = softmax(scores) (of -scores for 'smallest'), keep the shortest
 * prefix of the sorted probabilities whose cumulative mass reaches value. `includeZero` false: groups whose score is
 * 0 (|score| <= 1e-10) are never kept. `minScore` > 0 (not a RAGEN key): groups scoring below it are never kept either.
 */
const FilterV2Schema = FilterSchema.pick({
  value: true,
  includeZero: true,
  minScore: true,
  topPProbMode: true,
  selectionEps: true,
  metric: true,
}).extend({
  strategy: FilterSchema.shape.strategy.exclude(['ratio']),
  type: z
    .enum(['largest', 'smallest'])
    .describe("RAGEN-2's `rollout_filter_type`: keep the 'largest' scores (high signal) or the 'smallest'."),
});
export type RolloutFilterV2Config = z.output<typeof FilterV2Schema>;

/** RAGEN-2's defaults: top_p 1.0 with include_zero true, i.e. no filtering at all. */
export const DEFAULT_FILTER_V2: RolloutFilterV2Config = {
  strategy: 'top_p',
  value: 1.0,
  type: 'largest',
  includeZero: true,
  minScore: 0,
  topPProbMode: 'linear',
  selectionEps: 0.01,
  metric: 'reward_variance',
};

/** RAGEN-2's recommended setting: top_p 0.9 linear, zero-variance groups excluded, eps 0.01. */
export const RECOMMENDED_FILTER_V2: RolloutFilterV2Config = { ...DEFAULT_FILTER_V2, value: 0.9, includeZero: false };

const ZERO_SCORE = 1e-10;

/** Throws one line naming the first setting that breaks the filter schema's rules (a caller outside the run config). */
function checkV2Config(c: RolloutFilterV2Config): void {
  const result = FilterV2Schema.safeParse(c);
  if (!result.success) {
    const issue = result.error.issues[0];
    throw new Error(
      `rollout filter ${issue.path.join('.')}: ${issue.message}, got ${JSON.stringify(c[issue.path[0] as keyof RolloutFilterV2Config])}`,
    );
  }
}

/**
 * The v2 selection rule on group scores alone (one score per group). Returns the kept group indices in rank order
 * (best first). May return an empty list: the caller then skips the step.
 */
export function selectGroupsByScore(scores: readonly number[], config: RolloutFilterV2Config): number[] {
  checkV2Config(config);
  scores.forEach((s, g) => {
    if (!Number.isFinite(s)) throw new Error(`rollout filter: score of group ${g} is ${s}: expected a finite number`);
  });
  const numGroups = scores.length;
  let candidates = Array.from({ length: numGroups }, (_, g) => g);
  if (!config.includeZero) candidates = candidates.filter((g) => Math.abs(scores[g]) > ZERO_SCORE);
  if (config.minScore > 0) candidates = candidates.filter((g) => scores[g] >= config.minScore);
  if (candidates.length === 0) return [];
  const { strategy, value, type } = config;

  if (strategy === 'top_p') {
    if (value >= 1) return candidates;
    if (config.topPProbMode === 'softmax') {
      const logits = candidates.map((g) => (type === 'largest' ? scores[g] : -scores[g]));
      const top = Math.max(...logits);
      const w = logits.map((l) => Math.exp(l - top));
      const z = w.reduce((a, b) => a + b, 0);
      const prob = new Array<number>(numGroups).fill(0);
      candidates.forEach((g, k) => (prob[g] = w[k] / z));
      const order = rankGroups(prob, candidates, 'largest');
      // Shortest prefix whose cumulative mass reaches `value` (torch.searchsorted(cumsum, value) + 1).
      let cum = 0;
      let k = 0;
      while (k < order.length) {
        cum += prob[order[k]];
        k++;
        if (cum >= value) break;
      }
      return order.slice(0, k);
    }
    const order = rankGroups(scores, candidates, type);
    const total = candidates.reduce((s, g) => s + scores[g], 0);
    const threshold = value * total - config.selectionEps;
    let cum = 0;
    let k = 0;
    for (const g of order) {
      if (cum >= threshold || scores[g] <= 0) break;
      cum += scores[g];
      k++;
    }
    return cum >= threshold ? order.slice(0, k) : [];
  }

  if (strategy === 'top_k' || strategy === 'top_k_abs') {
    const wanted = strategy === 'top_k' ? Math.floor(value * numGroups + 1e-9) : Math.floor(value);
    const k = Math.max(1, Math.min(wanted, candidates.length));
    return rankGroups(scores, candidates, type).slice(0, k);
  }

  // min_p
  const candScores = candidates.map((g) => scores[g]);
  if (type === 'largest') {
    const threshold = Math.max(...candScores) * value;
    return rankGroups(
      scores,
      candidates.filter((g) => scores[g] >= threshold - ZERO_SCORE),
      'largest',
    );
  }
  const threshold = Math.min(...candScores) / (value + ZERO_SCORE);
  return rankGroups(
    scores,
    candidates.filter((g) => scores[g] <= threshold + ZERO_SCORE),
    'smallest',
  );
}

function metricFamily(metric: FilterMetric): 'reward' | 'entropy' | 'length' {
  if (metric === 'entropy' || metric === 'entropy_variance') return 'entropy';
  if (metric === 'length') return 'length';
  return 'reward';
}

/**
 * v2 SNR-adaptive filter (spec §4.7). `values` holds one value per trajectory, group-major: the raw reward (no
 * format penalty) for the reward metrics, the mean token entropy for the entropy metrics, the loss-token count for
 * 'length'. Metrics: RAGEN v1's six `rollout/in_group_*` / `rollout/chosen_in_group_*` keys, the family-specific
 * `rollout/in_group_<reward|entropy|length>_*` keys (earlyStop.ts reads `rollout/in_group_reward_std`),
 * `rollout/filter_kept_count|ratio`, `rollout/filter_zero_count` and `rollout/empty_after_filter` (1 when nothing
 * was kept, else 0).
 */
export function filterGroupsV2(
  values: readonly number[],
  numGroups: number,
  groupSize: number,
  config: RolloutFilterV2Config,
): FilterResult {
  checkV2Config(config);
  const stats = groupStats(values, numGroups, groupSize);
  const scores =
    config.metric === 'reward_variance' || config.metric === 'entropy_variance'
      ? stats.std
      : config.metric === 'reward_sum'
        ? stats.sum
        : stats.mean;
  const kept = selectGroupsByScore(scores, config).sort((a, b) => a - b);
  const all = Array.from({ length: numGroups }, (_, g) => g);
  const family = metricFamily(config.metric);
  const metrics: Record<string, number> = {
    ...inGroupMetrics(stats, all, kept),
    ...inGroupMetrics(stats, all, kept, family),
    'rollout/filter_kept_count': kept.length,
    'rollout/filter_kept_ratio': kept.length / numGroups,
    'rollout/filter_zero_count': scores.filter((s) => Math.abs(s) <= ZERO_SCORE).length,
    'rollout/empty_after_filter': kept.length === 0 ? 1 : 0,
  };
  if (family === 'reward') {
    metrics['rollout/in_group_reward_sum'] = meanOf(stats.sum, all);
    metrics['rollout/chosen_in_group_reward_sum'] = meanOf(stats.sum, kept);
  }
  return { keptGroups: kept, keptTrajectories: trajectoriesOf(kept, groupSize), metrics };
}

/**
 * RAGEN-2's `filter_loss_scaling`: a factor for the advantages of a filtered batch, so that keeping fewer groups
 * also takes a smaller step. 'none' -> 1, 'linear' -> kept ratio, 'sqrt' -> sqrt(kept ratio).
 */
export function filterLossScale(mode: 'none' | 'linear' | 'sqrt', keptRatio: number): number {
  if (!(keptRatio >= 0 && keptRatio <= 1))
    throw new Error(`filterLossScale: kept ratio must be in [0, 1], got ${keptRatio}`);
  if (mode === 'none') return 1;
  if (mode === 'linear') return keptRatio;
  if (mode === 'sqrt') return Math.sqrt(keptRatio);
  throw new Error(`filterLossScale: unknown mode '${mode as string}' (expected none, linear or sqrt)`);
}

/**
 * The run's filter (its `filter` config section) on one step: v1 ranks groups by the in-group std of the raw rewards;
 * the v2 strategies rank by `metric`, whose per-trajectory values are computed only when that metric needs them.
 */
export async function filterGroupsByConfig(
  f: FilterSettings,
  numGroups: number,
  groupSize: number,
  values: { rawRewards: readonly number[]; lossTokens: () => number[]; entropyMeans: () => Promise<number[]> },
): Promise<FilterResult> {
  if (f.strategy === 'ratio')
    return filterGroupsV1(values.rawRewards, numGroups, groupSize, { ratio: f.ratio, type: f.type });
  let perTrajectory = values.rawRewards;
  if (f.metric === 'length') perTrajectory = values.lossTokens();
  if (f.metric === 'entropy' || f.metric === 'entropy_variance') perTrajectory = await values.entropyMeans();
  return filterGroupsV2(perTrajectory, numGroups, groupSize, {
    strategy: f.strategy,
    value: f.value,
    type: f.type === 'std' ? 'largest' : 'smallest',
    includeZero: f.includeZero,
    minScore: f.minScore,
    topPProbMode: f.topPProbMode,
    selectionEps: f.selectionEps,
    metric: f.metric,
  });
}
