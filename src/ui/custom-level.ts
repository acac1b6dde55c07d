// Classroom custom boards: a teacher types a Sokoban level or a FrozenLake map, the page checks it with the
// environments' own parser (so the error names the problem exactly as the CLI would), and only a playable board
// is handed to the worker to be played by the current policy. Pure TypeScript.
import { makeEnv } from '../../envs/index';

/** Env tags a custom board can be typed for, with the config key that carries the board. */
export const CUSTOM_BOARD_TAGS = { SimpleSokoban: 'level', FrozenLake: 'map' } as const;
export type CustomBoardTag = keyof typeof CUSTOM_BOARD_TAGS;

export const CUSTOM_BOARD_HELP: Record<CustomBoardTag, string> = {
  SimpleSokoban: '# wall, _ floor, O target, X box, √ box on target, P player, S player on target',
  FrozenLake: 'P start, _ frozen, O hole, G goal',
};

export interface CustomBoard {
  tag: CustomBoardTag;
  /** The env config that plays this board ({ level } or { map }). */
  envConfig: Record<string, unknown>;
  /** The board's first state as the env renders it. */
  state: string;
}

/**
 * Checks a typed board. Throws an Error naming the problem (empty text, ragged rows, an unknown symbol, two
 * players, no goal, ...); nothing else is changed by a bad board.
 */
export function checkCustomBoard(tag: string, text: string): CustomBoard {
  if (!Object.hasOwn(CUSTOM_BOARD_TAGS, tag)) {
    throw new Error(`custom boards are for ${Object.keys(CUSTOM_BOARD_TAGS).join(' and ')}, not '${tag}'`);
  }
  const rows = text.split('\n').map((r) => r.trim()).filter((r) => r !== '');
  if (rows.length === 0) throw new Error(`the ${tag} board is empty: type one row per line`);
  const key = CUSTOM_BOARD_TAGS[tag as CustomBoardTag];
  const envConfig = { [key]: rows };
  const env = makeEnv(tag, envConfig);
  return { tag: tag as CustomBoardTag, envConfig, state: env.reset(0) };
}
