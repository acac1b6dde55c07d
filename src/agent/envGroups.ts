// The env-group manager: RAGEN's es_manager (spec §3.1).
//
// It owns `envGroups × groupSize` env instances. Tags are assigned to contiguous blocks of groups; env id is the
// flat index and group id = env id div group size. All members of a group reset with the same seed, so they start
// from the same state (the "prompt" of the group); the group's spread of rewards is what StarPO-S filters on.
//
// Per turn and env it maps action names, enforces the action budget, executes actions, accumulates the format
// penalty and decides done/truncated, keeping a history of turn records that the prompt builder renders.
import type { Env, StepInfo } from '../../envs/types';
import type { HistoryRecord, PromptEnvInfo } from './types';

/** Where envs and their prompt info come from (the envs package's makeEnv and EnvSpec, or a test fake). */
export interface EnvRegistry {
  makeEnv(tag: string, config?: Record<string, unknown>): Env;
  /** The prompt facts of `tag` with the block's env `config` (a Coord tag's instruction names the board's size). */
  promptInfo(tag: string, config?: Record<string, unknown>): PromptEnvInfo;
}

/** A block of env groups that share one tag (RAGEN `env_configs.tags` / `n_groups`). */
export interface TagBlock {
  tag: string;
  /** Number of env groups of this tag; the blocks' nGroups must sum to `envGroups`. */
  nGroups: number;
  /** Env config passed to makeEnv (camelCase keys; undefined = the tag's defaults). */
  config?: Record<string, unknown>;
  /** Override of the tag's `max_actions_per_traj` (RAGEN's Table 3 sweeps use 5 × max actions per turn). */
  maxActionsPerTraj?: number;
  /** Override of the tag's `max_tokens` (only printed in the prompt). */
  maxTokens?: number;
  /**
   * false (default, RAGEN v1): every member of a group is reset with the group's seed. For the stochastic Bandit
   * this means all members see the same hi-arm draw (spec §10.10).
   * true (RAGEN v2's Bandit fix): member `envId` is reset with groupSeed + envId, so draws differ inside a group.
   * Only sensible for envs whose initial state does not depend on the seed in a way the group must share.
   */
  seedOffsetPerInstance?: boolean;
}

export interface EnvGroupsConfig {
  /** 'train' advances seeds every reset; 'val' always resets to the same fixed set. */
  mode: 'train' | 'val';
  /** Number of env groups (RAGEN `env_groups`; train 8, val 256). */
  envGroups: number;
  /** Envs per group (RAGEN `group_size`; train 16, val 1). */
  groupSize: number;
  tags: TagBlock[];
  /**
   * RAGEN `seed.train` / `seed.val`. Default: 10000 in train mode, 123 in val mode. null in train mode draws a
   * random base seed in [0, 1,000,000] at every reset, as RAGEN does without a configured seed.
   */
  baseSeed?: number | null;
  /** RAGEN `es_manager.format_penalty` (default −0.1), added once per turn with a dropped or missing action. */
  formatPenalty?: number;
  /**
   * A reward for a turn's reasoning, added to the env's reward of that turn: given the env, the state the reasoning saw
   * and the reasoning. Absent = none, as in RAGEN (`agent.groundingBonus` builds one: src/starpo/config/agent.ts).
   */
  reasoningReward?: (env: Env, state: string, think: string) => number;
}

/** What the agent did in one turn, for one env (RAGEN's env input). */
export interface EnvTurnInput {
  envId: number;
  /** Parsed action strings (names before mapping). */
  actions: string[];
  /** Stored/trained response (`ParsedResponse.reconstructed`). */
  llmResponse: string;
  /** Sampled text with the forced tag restored. */
  llmRawResponse: string;
  /** The reasoning of the response (what `reasoningReward` judges); absent = no reasoning. */
  think?: string;
}

export interface EnvStatus {
  /** Primitive actions executed so far in the episode. */
  numActions: number;
  /** One entry per finished turn: the turn's summed env reward. */
  rewards: number[];
  /** The episode is over (done, or the action budget is spent). */
  terminated: boolean;
  /** Over without success (done but failed, or budget spent). */
  truncated: boolean;
  /** The seed passed to env.reset. */
  seed: number;
}

/** One env's live rollout (RAGEN's rollout cache entry). */
export interface EnvRollout {
  envId: number;
  groupId: number;
  tag: string;
  status: EnvStatus;
  history: HistoryRecord[];
  /** Sum of format penalties so far (≤ 0); kept apart from the env reward, as RAGEN does. */
  penalty: number;
}

/** A finished rollout with RAGEN's per-env metrics (`get_rollout_states`). */
export interface RolloutState extends EnvRollout {
  /** Sum of turn rewards, WITHOUT the penalty (RAGEN `original_rm_scores`, used by the uncertainty filter). */
  totalReward: number;
  /** totalReward + penalty: the scalar RAGEN places on the last token. */
  score: number;
  success: boolean;
  /**
   * Keyed `<Tag>/<name>`: success, num_actions, action_is_effective, action_is_valid (each averaged over the
   * turns played, counting turns without an executed action as 0), pass@<groupSize>.
   */
  metrics: Record<string, number>;
}

/** An env instance with its place in the batch. */
export interface EnvEntry {
  envId: number;
  groupId: number;
  tag: string;
  env: Env;
  /** Prompt info with the tag block's overrides applied. */
  info: PromptEnvInfo;
  maxActionsPerTraj: number;
  seedOffsetPerInstance: boolean;
}

const DEFAULT_SEEDS = { train: 10000, val: 123 } as const;

function checkPositiveInt(value: number, name: string): void {
  if (!Number.isInteger(value) || value < 1)
    throw new Error(`EnvGroupManager: ${name} must be a positive integer, got ${value}`);
}

export class EnvGroupManager {
  readonly mode: 'train' | 'val';
  readonly envGroups: number;
  readonly groupSize: number;
  readonly formatPenalty: number;
  private readonly reasoningReward: EnvGroupsConfig['reasoningReward'];
  readonly entries: EnvEntry[] = [];
  private readonly baseSeed: number | null;
  /** Train mode: how far past baseSeed the next reset starts. */
  private seedCounter = 0;
  private rollouts: EnvRollout[] | null = null;

  constructor(config: EnvGroupsConfig, registry: EnvRegistry) {
    if (config.mode !== 'train' && config.mode !== 'val')
      throw new Error(`EnvGroupManager: mode must be 'train' or 'val', got '${String(config.mode)}'`);
    checkPositiveInt(config.envGroups, 'envGroups');
    checkPositiveInt(config.groupSize, 'groupSize');
    if (config.tags.length === 0) throw new Error('EnvGroupManager: tags is empty');
    for (const block of config.tags) {
      if (!Number.isInteger(block.nGroups) || block.nGroups < 0) {
        throw new Error(
          `EnvGroupManager: nGroups of tag '${block.tag}' must be a non-negative integer, got ${block.nGroups}`,
        );
      }
    }
    const total = config.tags.reduce((sum, block) => sum + block.nGroups, 0);
    if (total !== config.envGroups) {
      throw new Error(`EnvGroupManager: tag blocks' nGroups sum to ${total}, but envGroups is ${config.envGroups}`);
    }
    this.mode = config.mode;
    this.envGroups = config.envGroups;
    this.groupSize = config.groupSize;
    this.formatPenalty = config.formatPenalty ?? -0.1;
    this.reasoningReward = config.reasoningReward;
    this.baseSeed = config.baseSeed === undefined ? DEFAULT_SEEDS[config.mode] : config.baseSeed;

    let envId = 0;
    for (const block of config.tags) {
      const info: PromptEnvInfo = {
        ...registry.promptInfo(block.tag, block.config),
        ...(block.maxActionsPerTraj !== undefined ? { maxActionsPerTraj: block.maxActionsPerTraj } : {}),
        ...(block.maxTokens !== undefined ? { maxTokens: block.maxTokens } : {}),
      };
      checkPositiveInt(info.maxActionsPerTraj, `maxActionsPerTraj of tag '${block.tag}'`);
      for (let i = 0; i < block.nGroups * this.groupSize; i++, envId++) {
        this.entries.push({
          envId,
          groupId: Math.floor(envId / this.groupSize),
          tag: block.tag,
          env: registry.makeEnv(block.tag, block.config),
          info,
          maxActionsPerTraj: info.maxActionsPerTraj,
          seedOffsetPerInstance: block.seedOffsetPerInstance ?? false,
        });
      }
    }
  }

  /** The base seed the next reset() without an explicit seed will use (null when it will be random). */
  nextBaseSeed(): number | null {
    if (this.mode === 'val') return this.baseSeed ?? DEFAULT_SEEDS.val;
    return this.baseSeed === null ? null : this.baseSeed + this.seedCounter;
  }

  /**
   * Reset every env. Group i gets seed base + i. Train mode: base = baseSeed + counter, and the counter advances by
   * envGroups, so consecutive steps see disjoint groups of seeds. Val mode: always the same base (fixed val set).
   * An explicit `seed` is used as the base instead (train mode then moves the counter to seed − baseSeed + 1, as
   * RAGEN does).
   */
  reset(seed?: number): EnvRollout[] {
    let base: number;
    if (seed === undefined) {
      const next = this.nextBaseSeed();
      if (next === null) {
        base = Math.floor(Math.random() * 1_000_001);
      } else {
        base = next;
        if (this.mode === 'train') this.seedCounter += this.envGroups;
      }
    } else {
      if (!Number.isInteger(seed)) throw new Error(`EnvGroupManager.reset: seed must be an integer, got ${seed}`);
      base = seed;
      if (this.mode === 'train' && this.baseSeed !== null) this.seedCounter = seed - this.baseSeed + 1;
    }

    this.rollouts = this.entries.map((entry) => {
      const envSeed = base + entry.groupId + (entry.seedOffsetPerInstance ? entry.envId : 0);
      const state = entry.env.reset(envSeed);
      return {
        envId: entry.envId,
        groupId: entry.groupId,
        tag: entry.tag,
        status: { numActions: 0, rewards: [], terminated: false, truncated: false, seed: envSeed },
        history: [{ state, actionsLeft: entry.maxActionsPerTraj }],
        penalty: 0,
      };
    });
    return this.rollouts.slice();
  }

  private requireRollouts(): EnvRollout[] {
    if (this.rollouts === null) throw new Error('EnvGroupManager: call reset() before stepping or reading rollouts');
    return this.rollouts;
  }

  /** Envs that are still running (get a prompt next turn). */
  activeRollouts(): EnvRollout[] {
    return this.requireRollouts().filter((r) => !r.status.terminated);
  }

  /** Every env's rollout so far, in env-id order. */
  allRollouts(): EnvRollout[] {
    return this.requireRollouts().slice();
  }

  /**
   * Map action strings to the env's canonical names, case-insensitively; unknown names are dropped. An env with
   * no action names accepts the strings unchanged (RAGEN: envs without an action lookup).
   */
  static mapActions(env: Env, actions: readonly string[]): string[] {
    if (env.actionNames.length === 0) return actions.slice();
    const byLowerName = new Map(env.actionNames.map((name) => [name.toLowerCase(), name]));
    const mapped: string[] = [];
    for (const action of actions) {
      const name = byLowerName.get(action.toLowerCase());
      if (name !== undefined) mapped.push(name);
    }
    return mapped;
  }

  /** Play one turn for each given env and return the envs still running afterwards. */
  step(inputs: readonly EnvTurnInput[]): EnvRollout[] {
    const rollouts = this.requireRollouts();
    const seen = new Set<number>();
    for (const input of inputs) {
      const entry = this.entries[input.envId];
      if (entry === undefined) throw new Error(`EnvGroupManager.step: no env with id ${input.envId}`);
      if (seen.has(input.envId)) throw new Error(`EnvGroupManager.step: env ${input.envId} appears twice in one turn`);
      seen.add(input.envId);
      const rollout = rollouts[input.envId];
      if (rollout.status.terminated) throw new Error(`EnvGroupManager.step: env ${input.envId} is already done`);
      this.stepOne(entry, rollout, input);
    }
    return inputs.map((input) => rollouts[input.envId]).filter((r) => !r.status.terminated);
  }

  private stepOne(entry: EnvEntry, rollout: EnvRollout, input: EnvTurnInput): void {
    const status = rollout.status;
    const valid = EnvGroupManager.mapActions(entry.env, input.actions);
    // Budget truncation is not penalised; only dropped names or an empty turn are.
    const budget = entry.maxActionsPerTraj - status.numActions;
    const toRun = valid.slice(0, budget);

    // The reasoning is judged on the state it saw, before any action of this turn runs.
    const stateSeen = rollout.history[rollout.history.length - 1].state;
    let reward = this.reasoningReward?.(entry.env, stateSeen, input.think ?? '') ?? 0;
    let info: StepInfo | null = null;
    let done = false;
    const executed: string[] = [];
    for (const action of toRun) {
      const result = entry.env.step(action);
      reward += result.reward;
      info = result.info;
      executed.push(action);
      if (result.done) {
        done = true;
        break;
      }
    }
    if (valid.length !== input.actions.length || valid.length === 0) rollout.penalty += this.formatPenalty;

    status.numActions += executed.length;
    status.rewards.push(reward);
    if (done) {
      status.terminated = true;
      status.truncated = !(info?.success ?? false);
    }
    const current = rollout.history[rollout.history.length - 1];
    Object.assign(current, {
      actions: executed,
      reward,
      info,
      llmResponse: input.llmResponse,
      llmRawResponse: input.llmRawResponse,
    });
    rollout.history.push({ state: entry.env.render(), actionsLeft: entry.maxActionsPerTraj - status.numActions });
    if (!done && status.numActions >= entry.maxActionsPerTraj) {
      status.terminated = true;
      status.truncated = true;
    }
  }

  /** Finished rollouts with RAGEN's per-env metrics and pass@groupSize per group. */
  rolloutStates(): RolloutState[] {
    const states: RolloutState[] = this.requireRollouts().map((rollout) => {
      const { status, history, tag } = rollout;
      const success = status.terminated && !status.truncated;
      const turnsPlayed = history.length - 1; // the last record is the state after the last turn
      let effective = 0;
      let valid = 0;
      for (const record of history) {
        if (!record.info) continue;
        effective += record.info.actionIsEffective ? 1 : 0;
        valid += record.info.actionIsValid ? 1 : 0;
      }
      const totalReward = status.rewards.reduce((sum, r) => sum + r, 0);
      return {
        ...rollout,
        totalReward,
        score: totalReward + rollout.penalty,
        success,
        metrics: {
          [`${tag}/success`]: success ? 1 : 0,
          [`${tag}/num_actions`]: status.numActions,
          [`${tag}/action_is_effective`]: turnsPlayed > 0 ? effective / turnsPlayed : 0,
          [`${tag}/action_is_valid`]: turnsPlayed > 0 ? valid / turnsPlayed : 0,
        },
      };
    });
    const groupSuccess = new Map<number, boolean>();
    for (const s of states) groupSuccess.set(s.groupId, (groupSuccess.get(s.groupId) ?? false) || s.success);
    for (const s of states) s.metrics[`${s.tag}/pass@${this.groupSize}`] = groupSuccess.get(s.groupId) ? 1 : 0;
    return states;
  }
}

/**
 * Batch means of the per-env metrics (RAGEN ctx_manager): `<prefix>/<Tag>/<name>` = mean over the tag's envs, and
 * `<prefix>/<Tag>/non-zero/<name>` = mean over the envs where it is non-zero (present only if any is). Prefix is
 * 'train' or 'val-env' in the trainer's logs; '' gives RAGEN's bare `<Tag>/<name>` keys.
 */
export function summarizeEnvMetrics(states: readonly RolloutState[], prefix = ''): Record<string, number> {
  const values = new Map<string, number[]>();
  for (const state of states) {
    for (const [key, value] of Object.entries(state.metrics)) {
      const list = values.get(key) ?? [];
      list.push(value);
      values.set(key, list);
    }
  }
  const head = prefix ? `${prefix}/` : '';
  const out: Record<string, number> = {};
  for (const [key, list] of values) {
    out[head + key] = list.reduce((a, b) => a + b, 0) / list.length;
    const nonZero = list.filter((v) => v !== 0);
    if (nonZero.length > 0) {
      const slash = key.indexOf('/');
      out[`${head}${key.slice(0, slash)}/non-zero/${key.slice(slash + 1)}`] =
        nonZero.reduce((a, b) => a + b, 0) / nonZero.length;
    }
  }
  return out;
}
