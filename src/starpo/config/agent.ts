// What the agent reads from a RunConfig: the env groups of each split and the format every rollout is played with.
import type { AgentFormat, EnvGroupsConfig, TagBlock } from '../../agent/index';
import { isGroundedTurn } from '../../metrics/grounding';
import type { RunConfig } from './schema';

/**
 * The env blocks of a split in the shape src/agent's EnvGroupManager takes (its TagBlock): each block's own
 * budget, else agent.maxActionsPerTraj, else (undefined) the tag's default; Bandit blocks get per-instance seeds
 * when agent.banditPerInstanceSeed is set.
 */
export function envBlocks(
  c: RunConfig,
  split: 'train' | 'val',
): {
  tag: string;
  nGroups: number;
  config?: Record<string, unknown>;
  maxActionsPerTraj?: number;
  maxTokens?: number;
  seedOffsetPerInstance?: boolean;
}[] {
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

/**
 * `agent.groundingBonus` as the env groups' reasoning reward: the bonus for a turn whose reasoning makes a checkable
 * claim about the state it saw and every claim is true (src/metrics/grounding.ts); none at 0.
 */
export function groundingReward(bonus: number): EnvGroupsConfig['reasoningReward'] {
  if (!(bonus >= 0)) throw new Error(`groundingBonus must be >= 0, got ${bonus}`);
  return bonus > 0 ? (env, state, think) => (isGroundedTurn(env, state, think) ? bonus : 0) : undefined;
}

/** The env groups of a split, as RAGEN's es_manager lays them out (what src/agent's EnvGroupManager takes). */
export function envGroupsConfig(c: RunConfig, split: 'train' | 'val'): EnvGroupsConfig {
  const { agent } = c;
  const train = split === 'train';
  return {
    mode: split,
    envGroups: train ? agent.envGroups : agent.valGroups,
    groupSize: train ? agent.groupSize : agent.valGroupSize,
    tags: envBlocks(c, split),
    baseSeed: train ? agent.seedTrain : agent.seedVal,
    formatPenalty: agent.formatPenalty,
    reasoningReward: groundingReward(agent.groundingBonus),
  };
}

// A hand-typed board (a Sokoban level, a FrozenLake map) is played by a run's policy exactly as the run's own rollouts
// play: the same env block (observation format, slipperiness, action budget: everything the config gives the tag)
// with only the board swapped in, and the run's agent format. So the policy reads the same prompt text for the same
// state as in training (the playground's custom boards; tests/unit/starpo/customBoard.test.ts).

/** The env tags of `c`'s training blocks, in order, without repeats. */
export function trainedTags(c: RunConfig): string[] {
  return [...new Set(envBlocks(c, 'train').map((b) => b.tag))];
}

/**
 * The run's training block for `tag` with `board` (e.g. `{ level }` or `{ map }`) laid over its env config, as one env
 * group. Throws an Error in plain words when the run does not train on `tag`: its policy never read that env's prompt.
 */
export function customBoardBlock(c: RunConfig, tag: string, board: Record<string, unknown>): TagBlock {
  const block = envBlocks(c, 'train').find((b) => b.tag === tag);
  if (!block) {
    throw new Error(
      `this run's policy was trained on ${trainedTags(c).join(', ')}, never on ${tag}: it cannot read a ${tag} board ` +
        `(choose a preset that trains on ${tag})`,
    );
  }
  return { ...block, nGroups: 1, config: { ...(block.config ?? {}), ...board } };
}

/** One env group of one env playing a custom board's `block`, laid out like a validation episode of the run. */
export function customBoardEnvGroups(c: RunConfig, block: TagBlock): EnvGroupsConfig {
  return {
    mode: 'val',
    envGroups: 1,
    groupSize: 1,
    tags: [block],
    baseSeed: 0,
    formatPenalty: c.agent.formatPenalty,
    reasoningReward: groundingReward(c.agent.groundingBonus),
  };
}
