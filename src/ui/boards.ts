// Turns an environment's state text into something the rollout viewer can draw: a grid of named tiles (Sokoban,
// FrozenLake) or the two arms of a bandit. The same symbol means different things in different envs ('O' is a
// Sokoban target but a FrozenLake hole, '√' a box on target or the player on the goal), so the env tag decides.
// Pure TypeScript: unit-tested in Node; Board.svelte only paints what this returns.
import { ALTERNATIVE_VOCAB, DEFAULT_VOCAB } from '../../envs/index';

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
  | 'player-on-goal';

export type Board =
  | { kind: 'grid'; rows: number; cols: number; tiles: Tile[][] }
  | { kind: 'bandit'; arms: [string, string] }
  | { kind: 'text'; text: string };

/** Sokoban cell codes 0..6 (envs/sokoban/grid.ts order) as tiles. */
const SOKOBAN_TILES: readonly Tile[] = ['wall', 'floor', 'target', 'box-on-target', 'box', 'player', 'player-on-target'];

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

/** The symbol table of a grid env tag, or null for envs without a grid. */
function tileMap(tag: string): Map<string, Tile> | null {
  if (tag === 'FrozenLake') return FROZENLAKE;
  if (tag === 'SokobanDifferentGridVocab') return SOKOBAN_ALTERNATIVE;
  if (tag.includes('Sokoban')) return SOKOBAN_DEFAULT;
  return null;
}

/**
 * Reads a grid state. Throws an Error naming the row and symbol when the text is not a rectangular grid of the
 * env's symbols (callers that only display may fall back to text).
 */
export function parseGrid(tag: string, state: string): { rows: number; cols: number; tiles: Tile[][] } {
  const map = tileMap(tag);
  if (!map) throw new Error(`env '${tag}' has no grid to draw`);
  const lines = state.split('\n').map((l) => l.trimEnd()).filter((l) => l !== '');
  if (lines.length === 0) throw new Error(`empty ${tag} state`);
  const tiles = lines.map((line, r) =>
    [...line].map((symbol, c) => {
      const tile = map.get(symbol);
      if (!tile) throw new Error(`${tag} state: unknown symbol '${symbol}' at row ${r}, column ${c}`);
      return tile;
    }),
  );
  const cols = tiles[0].length;
  tiles.forEach((row, r) => {
    if (row.length !== cols) throw new Error(`${tag} state is not rectangular: row ${r} has ${row.length} cells, row 0 has ${cols}`);
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
  if (tag.startsWith('Bandit')) {
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
};
