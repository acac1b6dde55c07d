// Turns an environment's state text into something the rollout viewer can draw: a grid of named tiles (Sokoban,
// FrozenLake) or the two arms of a bandit. The same symbol means different things in different envs ('O' is a
// Sokoban target but a FrozenLake hole, '√' a box on target or the player on the goal), so the env tag decides.
// States in RAGEN-2's coordinate formats are drawn too: a 'grid_coord' state by its grid part, a 'coord' state by
// placing its listed cells on the board (a Sokoban coord state lists no walls, so unlisted cells are drawn as
// "floor or wall"; a FrozenLake one lists everything that is not plain ice).
// Pure TypeScript: unit-tested in Node; Board.svelte only paints what this returns.
import {
  ALTERNATIVE_VOCAB,
  DEFAULT_VOCAB,
  envFamily,
  splitObservation,
  type ParsedCoordinates,
} from '../../envs/index';

/** What one cell of a grid shows. */
export type Tile =
  | 'wall'
  | 'floor'
  | 'ice'
  | 'target'
  | 'box'
  | 'box-on-target'
  | 'player'
  | 'player-on-target'
  | 'hole'
  | 'goal'
  | 'player-in-hole'
  | 'player-on-goal'
  | 'unlisted';

export type Board =
  | { kind: 'grid'; rows: number; cols: number; tiles: Tile[][] }
  | { kind: 'bandit'; arms: [string, string] }
  | { kind: 'text'; text: string };

/** Sokoban cell codes 0..6 (envs/sokoban/grid.ts order) as tiles. */
const SOKOBAN_TILES: readonly Tile[] = [
  'wall',
  'floor',
  'target',
  'box-on-target',
  'box',
  'player',
  'player-on-target',
];

function vocabMap(symbols: readonly string[]): Map<string, Tile> {
  return new Map(symbols.map((s, code) => [s, SOKOBAN_TILES[code]]));
}

const SOKOBAN_DEFAULT = vocabMap(DEFAULT_VOCAB.symbols);
const SOKOBAN_ALTERNATIVE = vocabMap(ALTERNATIVE_VOCAB.symbols);
const FROZENLAKE = new Map<string, Tile>([
  ['P', 'player'],
  ['_', 'ice'],
  ['O', 'hole'],
  ['G', 'goal'],
  ['X', 'player-in-hole'],
  ['√', 'player-on-goal'],
]);

/** The env family of a tag, or null for a tag this build does not know. */
function familyOf(tag: string): ReturnType<typeof envFamily> | null {
  try {
    return envFamily(tag);
  } catch {
    return null;
  }
}

/** The symbol table of a grid env tag, or null for envs without a grid. */
function tileMap(tag: string): Map<string, Tile> | null {
  const family = familyOf(tag);
  if (family === 'frozenlake') return FROZENLAKE;
  if (tag === 'SokobanDifferentGridVocab') return SOKOBAN_ALTERNATIVE;
  if (family === 'sokoban') return SOKOBAN_DEFAULT;
  return null;
}

/** Coordinate-block labels (envs/sokoban/grid.ts, envs/frozenlake.ts) as tiles, in drawing order, per family. */
const COORDINATE_TILES: Readonly<
  Record<'sokoban' | 'frozenlake', { background: Tile; labels: Readonly<Record<string, Tile>> }>
> = {
  sokoban: {
    background: 'unlisted',
    labels: {
      Targets: 'target',
      Boxes: 'box',
      'Boxes on target': 'box-on-target',
      Player: 'player',
      'Player on target': 'player-on-target',
    },
  },
  frozenlake: {
    background: 'ice',
    labels: {
      Start: 'ice',
      Goal: 'goal',
      Holes: 'hole',
      Player: 'player',
      'Player on goal': 'player-on-goal',
      'Player in hole': 'player-in-hole',
    },
  },
};

/** Tiles of a 'coord' state: every listed cell placed on the board (later lines win: the player over a target). */
function tilesFromCoordinates(tag: string, coords: ParsedCoordinates): Tile[][] {
  const family = familyOf(tag);
  if (family !== 'sokoban' && family !== 'frozenlake') throw new Error(`env '${tag}' has no grid to draw`);
  const { background, labels } = COORDINATE_TILES[family];
  const tiles = Array.from({ length: coords.rows }, () => Array<Tile>(coords.cols).fill(background));
  for (const label of coords.categories.keys()) {
    if (!Object.hasOwn(labels, label)) throw new Error(`${tag} state: unknown coordinate line '${label}'`);
  }
  // Holes before the player in a hole, targets before the boxes and the player on them.
  const order =
    family === 'sokoban'
      ? ['Targets', 'Boxes', 'Boxes on target', 'Player', 'Player on target']
      : ['Start', 'Holes', 'Goal', 'Player', 'Player on goal', 'Player in hole'];
  for (const label of order) for (const [r, c] of coords.categories.get(label) ?? []) tiles[r][c] = labels[label];
  return tiles;
}

/**
 * Reads a state in any observation format (grid, coord, grid_coord). Throws an Error naming the row and symbol
 * when a grid is not a rectangle of the env's symbols, or the line a coordinate block cannot read (callers that
 * only display may fall back to text).
 */
export function parseGrid(tag: string, state: string): { rows: number; cols: number; tiles: Tile[][] } {
  const map = tileMap(tag);
  if (!map) throw new Error(`env '${tag}' has no grid to draw`);
  const split = splitObservation(state);
  if (split.grid === null) {
    const tiles = tilesFromCoordinates(tag, split.coordinates!);
    return { rows: tiles.length, cols: tiles[0]?.length ?? 0, tiles };
  }
  const lines = split.grid
    .split('\n')
    .map((l) => l.trimEnd())
    .filter((l) => l !== '');
  if (lines.length === 0) throw new Error(`empty ${tag} state`);
  const tiles = lines.map((line, r) =>
    [...line].map((symbol, c) => {
      const tile = map.get(symbol);
      if (!tile) throw new Error(`${tag} state: unknown symbol '${symbol}' at row ${r + 1}, column ${c + 1}`);
      return tile;
    }),
  );
  const cols = tiles[0].length;
  tiles.forEach((row, r) => {
    if (row.length !== cols)
      throw new Error(`${tag} state is not rectangular: row ${r + 1} has ${row.length} cells, row 1 has ${cols}`);
  });
  return { rows: tiles.length, cols, tiles };
}

/** The two arm names of a bandit observation ("There are 2 arms, named A and B"), or null. */
export function banditArms(state: string): [string, string] | null {
  const match = /named (\S+) and (\S+?)\s*$/m.exec(state);
  return match ? [match[1], match[2]] : null;
}

/** What to draw for `state` of env `tag`; text that does not parse is shown as text rather than failing. */
export function boardFromState(tag: string, state: string): Board {
  if (familyOf(tag) === 'bandit') {
    const arms = banditArms(state);
    return arms ? { kind: 'bandit', arms } : { kind: 'text', text: state };
  }
  try {
    return { kind: 'grid', ...parseGrid(tag, state) };
  } catch {
    return { kind: 'text', text: state };
  }
}

/** The kinds of tile on a board, in a fixed order (the legend lists only what is there). */
export function tilesIn(tiles: readonly (readonly Tile[])[]): Tile[] {
  const present = new Set(tiles.flat());
  return (Object.keys(TILE_STYLE) as Tile[]).filter((t) => present.has(t));
}

/** Fill colour and a one-character glyph per tile (colour-blind safe: the glyph carries the meaning too). */
export const TILE_STYLE: Readonly<Record<Tile, { fill: string; glyph: string; label: string }>> = {
  wall: { fill: '#4b5563', glyph: '', label: 'wall' },
  floor: { fill: '#f3f4f6', glyph: '', label: 'floor' },
  ice: { fill: '#dbeafe', glyph: '', label: 'frozen' },
  target: { fill: '#fde68a', glyph: '◎', label: 'target' },
  box: { fill: '#b45309', glyph: '▣', label: 'box' },
  'box-on-target': { fill: '#15803d', glyph: '▣', label: 'box on target' },
  player: { fill: '#f3f4f6', glyph: '☺', label: 'player' },
  'player-on-target': { fill: '#fde68a', glyph: '☺', label: 'player on target' },
  hole: { fill: '#1e3a8a', glyph: '', label: 'hole' },
  goal: { fill: '#facc15', glyph: '★', label: 'goal' },
  'player-in-hole': { fill: '#1e3a8a', glyph: '✕', label: 'player in hole' },
  'player-on-goal': { fill: '#facc15', glyph: '☺', label: 'player on goal' },
  unlisted: { fill: '#e5e7eb', glyph: '·', label: 'floor or wall (not listed)' },
};
