// The environments' front door (docs/architecture.md "Environments: envs/index.ts").
//
//   makeEnv(tag, config?)  → an Env (reset / step / render, see envs/types.ts)
//   ENV_TAGS               → the tags makeEnv knows, RAGEN's names
//   envSpec(tag)           → an EnvSpec: what the agent's prompt builder needs besides the state text
//
// EnvSpec (also on every env as `env.spec`), RAGEN's per-tag entries of config/envs.yaml:
//   instruction        env_instruction, the task text opening the first user message. FrozenLake's and Bandit's
//                      are RAGEN's verbatim ('' for Bandit: its rules are in the observation); Sokoban's is our
//                      wording of the same content (the spec does not quote RAGEN's).
//   gridVocab          [symbol, meaning] pairs for "The meaning of each symbol in the state is:\n" + "sym: meaning"
//                      joined by ", " (describeGridVocab does the join); null for Bandit.
//   maxActionsPerTraj  the primitive-action budget per episode: 10 for Sokoban and FrozenLake, 1 for Bandit.
//   maxTokens          N of "Max response length: N words (tokens).": 100 for the grid envs (120 for the Coord
//                      tags, as RAGEN-2); null for Bandit, where RAGEN falls back to the rollout's response length.
// The available actions of "Your available actions are:" are `env.actionNames` (id order). Bandit's order is
// reshuffled by each reset, so read them after reset.
//
// Config keys per tag (camelCase of RAGEN's; unknown keys, wrongly typed values and sizes past MAX_GRID_SIDE throw):
//   Sokoban tags     dimRoom, numBoxes, searchDepth, maxSteps, level (must be solvable), observationFormat
//   FrozenLake tags  size, p, successRate, map (must have a path from P to G), observationFormat
//   Bandit tags      loArmName, hiArmName, loArmScore, hiArmHiScore, hiArmLoScore, hiArmHiScoreProb
// observationFormat is RAGEN-2's: 'grid' (default), 'coord' or 'grid_coord' (envs/observation.ts). The Coord tags
// (CoordSokoban, CoordFrozenLake) default to 'grid_coord' and carry a coordinate instruction.

import { BanditEnv } from './bandit';
import { FROZENLAKE_TAGS, FrozenLakeEnv, type FrozenLakeTag } from './frozenlake';
import { SOKOBAN_TAGS, SokobanEnv, type SokobanTag } from './sokoban/index';
import type { EnvSpec } from './spec';
import type { Env } from './types';

export type { Env, StepInfo, StepResult } from './types';
export type { EnvSpec, GridVocab } from './spec';
export { describeGridVocab } from './spec';
export { formatPythonFloat } from './format';
export { Rng, fnv1a32, reseed } from './random';
export { MAX_GRID_SIDE } from './config';
export {
  OBSERVATION_FORMATS,
  formatCoordinateBlock,
  parseCoordinateBlock,
  splitObservation,
  type Coordinate,
  type ObservationFormat,
  type ParsedCoordinates,
  type SplitObservation,
} from './observation';
export { BanditEnv, BANDIT_DEFAULTS, banditPrompt, type BanditConfig } from './bandit';
export {
  FrozenLakeEnv,
  FROZENLAKE_ACTIONS,
  FROZENLAKE_COORDINATE_LABELS,
  FROZENLAKE_DEFAULTS,
  FROZENLAKE_TAGS,
  FROZENLAKE_GRID_VOCAB,
  FROZENLAKE_INSTRUCTION,
  generateFrozenLakeMap,
  isGoalReachable,
  moveOnLake,
  parseFrozenLakeMap,
  planFrozenLake,
  renderFrozenLake,
  renderFrozenLakeCoordinates,
  renderFrozenLakeObservation,
  slipOutcomes,
  type FrozenLakeConfig,
  type FrozenLakeTag,
  type FrozenLakeMap,
  type FrozenLakePlanner,
} from './frozenlake';
export { planFrozenLakeTurns, type FrozenLakeTurnPlanner, type TurnProtocol } from './frozenlakeTurns';
export * from './sokoban/index';

export const ENV_TAGS: readonly string[] = Object.freeze([
  'Bandit',
  'BanditTest',
  'SimpleSokoban',
  'LargerSokoban',
  'SokobanDifferentGridVocab',
  'CoordSokoban',
  'FrozenLake',
  'CoordFrozenLake',
]);

/** Which env a tag plays: tags of one family share rules and actions and differ in defaults and wording. */
export type EnvFamily = 'sokoban' | 'frozenlake' | 'bandit';

/** The family of `tag`; throws for an unknown tag. */
export function envFamily(tag: string): EnvFamily {
  if (tag === 'Bandit' || tag === 'BanditTest') return 'bandit';
  if ((FROZENLAKE_TAGS as readonly string[]).includes(tag)) return 'frozenlake';
  if ((SOKOBAN_TAGS as readonly string[]).includes(tag)) return 'sokoban';
  throw new Error(`unknown env tag '${tag}' (valid tags: ${ENV_TAGS.join(', ')})`);
}

/** An env instance, the kind envSpec and tests may want to narrow to. */
export type AnyEnv = (BanditEnv | FrozenLakeEnv | SokobanEnv) & Env;

/**
 * A new env for `tag` with RAGEN's defaults for that tag, overridden by `config`. Throws an Error naming the
 * problem for an unknown tag, an unknown config key, a wrongly typed value or an unplayable level/map.
 */
export function makeEnv(tag: string, config?: Record<string, unknown>): AnyEnv {
  switch (tag) {
    case 'Bandit':
    case 'BanditTest':
      return new BanditEnv(tag, config);
    case 'FrozenLake':
    case 'CoordFrozenLake':
      return new FrozenLakeEnv(tag as FrozenLakeTag, config);
    default:
      if ((SOKOBAN_TAGS as readonly string[]).includes(tag)) return new SokobanEnv(tag as SokobanTag, config);
      throw new Error(`unknown env tag '${tag}' (valid tags: ${ENV_TAGS.join(', ')})`);
  }
}

/**
 * Checks that `tag` with `config` can be played before a run relies on it: makeEnv's checks (keys, types, sizes,
 * an unsolvable level or a map without a path) and one reset with `seed`, which generates a level or map, so a
 * config the generators cannot satisfy (e.g. five boxes in a 5x5 room) fails now, naming the tag, not mid-run.
 */
export function assertEnvPlayable(tag: string, config: Record<string, unknown> | undefined, seed: number): void {
  makeEnv(tag, config).reset(seed);
}

/**
 * The prompt-side facts of a tag (see the top of this file), with its default config or with `config` (a Coord
 * tag's instruction names the board's bottom-right corner, which a resized room or lake moves).
 */
export function envSpec(tag: string, config?: Record<string, unknown>): EnvSpec {
  return makeEnv(tag, config).spec;
}
