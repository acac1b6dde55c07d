// A hand-typed board (a Sokoban level, a FrozenLake map) played by a run's policy exactly as the run's own rollouts
// play: the same env block (observation format, slipperiness, action budget: everything the run's config gives the
// tag) with only the board swapped in, and the run's agent format (prompt style, turns, context window). So the
// policy reads the same prompt text for the same state as it did in training: a board it has never seen, in the
// words it knows. Browser-safe; the playground's worker plays custom boards through this.
import { EnvGroupManager, envRegistry, type EnvGroupsConfig, type TagBlock } from '../agent/index';
import { agentFormatFromConfig, envBlocks, type RunConfig } from '../starpo/config';

/** The env tags of `config`'s training blocks, in order, without repeats. */
export function trainedTags(config: RunConfig): string[] {
  return [...new Set(envBlocks(config, 'train').map((b) => b.tag))];
}

/**
 * The run's training block for `tag` with `board` (e.g. `{ level }` or `{ map }`) laid over its env config, as one
 * env group of one env. Throws an Error in plain words when the run does not train on `tag`: its policy has never
 * read that env's prompt.
 */
export function customBoardBlock(config: RunConfig, tag: string, board: Record<string, unknown>): TagBlock {
  const block = envBlocks(config, 'train').find((b) => b.tag === tag);
  if (!block) {
    throw new Error(
      `this run's policy was trained on ${trainedTags(config).join(', ')}, never on ${tag}: it cannot read a ${tag} board ` +
        `(choose a preset that trains on ${tag})`,
    );
  }
  return { ...block, nGroups: 1, config: { ...(block.config ?? {}), ...board } };
}

/** One env group of one env playing `block`, laid out like a validation episode of the run. */
export function customBoardEnvGroups(config: RunConfig, block: TagBlock): EnvGroupsConfig {
  return { mode: 'val', envGroups: 1, groupSize: 1, tags: [block], baseSeed: 0, formatPenalty: config.agent.formatPenalty };
}

/** The manager that plays a custom board for `config`'s policy (with the run's env registry settings). */
export function customBoardManager(config: RunConfig, block: TagBlock): EnvGroupManager {
  return new EnvGroupManager(customBoardEnvGroups(config, block), envRegistry({ responseLength: agentFormatFromConfig(config).responseLength }));
}
