// Classroom custom boards: a teacher types a Sokoban level or a FrozenLake map, the page checks it with the
// environments' own parser (so the error names the problem exactly as the CLI would), and only a playable board
// is handed to the worker to be played by the current policy. Pure TypeScript.
import { makeEnv } from '../../envs/index';

/** Env tags a custom board can be typed for, with the config key that carries the board. */
export const CUSTOM_BOARD_TAGS = { SimpleSokoban: 'level', FrozenLake: 'map' } as const;
export type CustomBoardTag = keyof typeof CUSTOM_BOARD_TAGS;

export const CUSTOM_BOARD_HELP: Record<CustomBoardTag, string> = {
  SimpleSokoban:
    '# wall, _ floor, O target, X box, * (or √) box on target, P player, S player on target; walls all round',
  FrozenLake: 'P start, _ frozen, O hole, G goal (or the usual S F H G)',
};

/** A playable board per env, the text each env's field starts with. */
export const CUSTOM_BOARD_EXAMPLES: Record<CustomBoardTag, string> = {
  SimpleSokoban: '######\n#P___#\n#_X__#\n#__O_#\n######',
  FrozenLake: 'P_O\n__O\nO_G',
};

/** ASCII spellings accepted for symbols that are hard to type: '*' is Sokoban's usual "box on target". */
const SOKOBAN_ALIASES: Record<string, string> = { '*': '√' };
/** Gym's familiar FrozenLake letters (S start, F frozen, H hole, G goal), read as this env's symbols. */
const FROZENLAKE_ALIASES: Record<string, string> = { S: 'P', F: '_', H: 'O' };

/**
 * Sokoban boards typed here must be walled in, as every generated level is: an open edge would show the policy a
 * board unlike any it trained on (the env itself treats the outside as wall). Names the first open edge.
 */
function checkWalls(rows: readonly string[]): void {
  const cells = rows.map((r) => [...r]);
  const open = (name: string, where: string) => {
    throw new Error(`the level's ${name} edge is not a wall (${where}): put '#' all the way round`);
  };
  const last = cells.length - 1;
  cells[0].forEach((c, i) => c !== '#' && open('top', `row 1, column ${i + 1} is '${c}'`));
  cells[last].forEach((c, i) => c !== '#' && open('bottom', `row ${last + 1}, column ${i + 1} is '${c}'`));
  cells.forEach((row, r) => {
    if (row[0] !== '#') open('left', `row ${r + 1} starts with '${row[0]}'`);
    if (row[row.length - 1] !== '#') open('right', `row ${r + 1} ends with '${row[row.length - 1]}'`);
  });
}

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
  let rows = text
    .split('\n')
    .map((r) => r.trim())
    .filter((r) => r !== '');
  if (rows.length === 0) throw new Error(`the ${tag} board is empty: type one row per line`);
  const aliases = tag === 'SimpleSokoban' ? SOKOBAN_ALIASES : FROZENLAKE_ALIASES;
  rows = rows.map((r) => [...r].map((c) => aliases[c] ?? c).join(''));
  const key = CUSTOM_BOARD_TAGS[tag as CustomBoardTag];
  const envConfig = { [key]: rows };
  let env;
  try {
    env = makeEnv(tag, envConfig);
  } catch (err) {
    // An open edge often makes a level unsolvable too; the open edge is then the more useful thing to say.
    if (tag === 'SimpleSokoban' && /cannot be solved/.test((err as Error).message)) checkWalls(rows);
    throw err;
  }
  if (tag === 'SimpleSokoban') checkWalls(rows);
  return { tag: tag as CustomBoardTag, envConfig, state: env.reset(0) };
}
