// RAGEN's env metrics: turn the final state of every env of a rollout into `train/<Tag>/success`,
// `train/<Tag>/num_actions`, `.../action_is_effective`, `.../action_is_valid`, `.../pass@<groupSize>` and, when
// asked, `.../non-zero/<name>` (spec §3.1 "Final metrics per env" and §6).
//
// Two RAGEN details a port easily gets wrong:
//   * a per-env info rate (action_is_effective, action_is_valid) is the SUM over turns of the turn's last info
//     value divided by the number of turns taken, i.e. a per-turn mean, not a per-action mean;
//   * a tag's metric is the sum over its envs divided by the CONFIGURED env count of that tag (env groups of the
//     tag x group size), not by how many outcomes happened to arrive.

import { envMetricKey, passAtName, type EnvSplit } from './keys';

/** The final rollout state of one env, as the metrics layer needs it. */
export interface EnvOutcome {
  /** Env tag, e.g. 'SimpleSokoban'. */
  tag: string;
  /** Env group index: the members of a group were reset with the same seed (same initial state). */
  groupId: number;
  /** RAGEN: terminated and not truncated, i.e. the goal was reached within the action budget. */
  success: boolean;
  /** Primitive actions executed over the episode (after budget truncation). */
  numActions: number;
  /** Per-turn mean of "the turn's last action changed the state" (0..1); see `turnMean`. */
  actionIsEffective: number;
  /** Per-turn mean of "the turn's last action was a valid action name" (0..1); see `turnMean`. */
  actionIsValid: number;
  /** Any further per-env numbers to aggregate the same way (e.g. WebShop counters), keyed by metric name. */
  extra?: Record<string, number>;
}

/**
 * RAGEN's per-env info rate: the sum over turns of a per-turn flag divided by the number of turns.
 * An env that took no turn has rate 0 (RAGEN never produces one; 0 keeps the sum well defined).
 */
export function turnMean(perTurn: readonly (boolean | number)[]): number {
  if (perTurn.length === 0) return 0;
  let sum = 0;
  for (const v of perTurn) sum += Number(v);
  return sum / perTurn.length;
}

/**
 * The shape of src/agent's `RolloutState` that the metrics need (structural, so metrics does not import the
 * agent): per-env RAGEN metrics keyed `<Tag>/action_is_effective` and `<Tag>/action_is_valid`.
 */
export interface RolloutStateLike {
  tag: string;
  groupId: number;
  success: boolean;
  status: { numActions: number };
  metrics: Readonly<Record<string, number>>;
}

/** Adapter: a finished agent rollout (`EnvGroupManager.rolloutStates()` / `Trajectory`) to an EnvOutcome. */
export function envOutcomeFromRolloutState(state: RolloutStateLike): EnvOutcome {
  const rate = (name: string): number => {
    const value = state.metrics[`${state.tag}/${name}`];
    if (typeof value !== 'number') throw new Error(`rollout state of env group ${state.groupId} has no metric "${state.tag}/${name}"`);
    return value;
  };
  return {
    tag: state.tag,
    groupId: state.groupId,
    success: state.success,
    numActions: state.status.numActions,
    actionIsEffective: rate('action_is_effective'),
    actionIsValid: rate('action_is_valid'),
  };
}

export interface EnvMetricsOptions {
  /** 'train' -> `train/<Tag>/...`, 'val' -> `val-env/<Tag>/...`. */
  split: EnvSplit;
  /** Group size (the k of pass@k). Default: inferred from the outcomes (every group must have the same size). */
  groupSize?: number;
  /** Configured number of envs per tag (env groups of the tag x group size), the divisor of every mean.
   *  Default: the number of outcomes of that tag. */
  envCountByTag?: Readonly<Record<string, number>>;
  /** Also log `<Tag>/non-zero/<name>`: the mean over the envs whose value is not 0 (omitted when none is). */
  nonZero?: boolean;
}

function checkFinite(value: number, what: string, index: number): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new Error(`env outcome #${index}: ${what} must be a finite number, got ${String(value)}`);
  }
  return value;
}

/** Aggregate env outcomes into RAGEN's env metric keys. */
export function aggregateEnvMetrics(outcomes: readonly EnvOutcome[], opts: EnvMetricsOptions): Record<string, number> {
  // Per tag, per metric name: the per-env values in arrival order.
  const valuesByTag = new Map<string, Map<string, number[]>>();
  const membersByGroup = new Map<number, { tag: string; successes: number; count: number }>();

  outcomes.forEach((o, i) => {
    if (!o.tag) throw new Error(`env outcome #${i} has no tag`);
    if (!Number.isInteger(o.groupId) || o.groupId < 0) throw new Error(`env outcome #${i}: groupId must be a non-negative integer, got ${o.groupId}`);
    let perName = valuesByTag.get(o.tag);
    if (!perName) valuesByTag.set(o.tag, (perName = new Map()));
    const push = (name: string, v: number) => {
      const list = perName!.get(name);
      if (list) list.push(v);
      else perName!.set(name, [v]);
    };
    push('success', o.success ? 1 : 0);
    push('num_actions', checkFinite(o.numActions, 'numActions', i));
    push('action_is_effective', checkFinite(o.actionIsEffective, 'actionIsEffective', i));
    push('action_is_valid', checkFinite(o.actionIsValid, 'actionIsValid', i));
    for (const [name, v] of Object.entries(o.extra ?? {})) push(name, checkFinite(v, `extra.${name}`, i));

    const group = membersByGroup.get(o.groupId);
    if (group && group.tag !== o.tag) {
      throw new Error(`env group ${o.groupId} mixes tags "${group.tag}" and "${o.tag}" (a group shares one initial state)`);
    }
    if (group) {
      group.count += 1;
      group.successes += o.success ? 1 : 0;
    } else {
      membersByGroup.set(o.groupId, { tag: o.tag, count: 1, successes: o.success ? 1 : 0 });
    }
  });

  const groupSize = opts.groupSize ?? inferGroupSize(membersByGroup);
  for (const [id, g] of membersByGroup) {
    if (g.count > groupSize) throw new Error(`env group ${id} has ${g.count} members, more than the group size ${groupSize}`);
  }
  const passName = outcomes.length > 0 ? passAtName(groupSize) : '';

  const metrics: Record<string, number> = {};
  for (const [tag, perName] of valuesByTag) {
    const outcomeCount = perName.get('success')!.length;
    const envCount = opts.envCountByTag?.[tag] ?? outcomeCount;
    if (!(envCount >= outcomeCount)) {
      throw new Error(`tag "${tag}" has ${outcomeCount} env outcomes but envCountByTag says ${envCount} envs are configured`);
    }
    for (const [name, values] of perName) {
      metrics[envMetricKey(opts.split, tag, name)] = sum(values) / envCount;
      if (opts.nonZero) {
        const nonZero = values.filter((v) => v !== 0);
        if (nonZero.length > 0) metrics[envMetricKey(opts.split, tag, `non-zero/${name}`)] = sum(nonZero) / nonZero.length;
      }
    }
    // pass@k is a per-env value (1 when any member of its group succeeded), averaged like the others.
    let passSum = 0;
    for (const g of membersByGroup.values()) if (g.tag === tag && g.successes > 0) passSum += g.count;
    metrics[envMetricKey(opts.split, tag, passName)] = passSum / envCount;
  }
  return metrics;
}

function inferGroupSize(groups: Map<number, { count: number }>): number {
  const sizes = new Set([...groups.values()].map((g) => g.count));
  if (sizes.size > 1) {
    throw new Error(`env groups have different sizes (${[...sizes].sort((a, b) => a - b).join(', ')}); pass the configured groupSize`);
  }
  return sizes.size === 1 ? [...sizes][0] : 1;
}

function sum(values: readonly number[]): number {
  let s = 0;
  for (const v of values) s += v;
  return s;
}
