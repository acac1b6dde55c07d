// The Sokoban board: gym-sokoban's cell codes, RAGEN's two text vocabularies, and parsing of hand-written levels.

import { checkGridSize, gridRows } from '../config';
import {
  cellCoordinate,
  formatCoordinateBlock,
  renderObservation,
  type Coordinate,
  type ObservationFormat,
} from '../observation';
import type { GridVocab } from '../spec';

/** Cell codes (gym-sokoban). `fixed` only holds WALL/FLOOR/TARGET; `cells` holds the full dynamic state. */
export const WALL = 0;
export const FLOOR = 1;
/** An empty target. */
export const TARGET = 2;
export const BOX_ON_TARGET = 3;
export const BOX = 4;
/** The player, on floor or on a target (the state does not distinguish; `fixed` does). */
export const PLAYER = 5;
/** Rendering only: the player standing on a target. */
export const PLAYER_ON_TARGET = 6;

/** A board. Cells are numbered row-major: cell = row * cols + col. */
export interface SokobanState {
  readonly rows: number;
  readonly cols: number;
  /** What never moves: WALL, FLOOR or TARGET per cell. */
  readonly fixed: Uint8Array;
  /** Everything: WALL, FLOOR, TARGET, BOX_ON_TARGET, BOX or PLAYER per cell. */
  readonly cells: Uint8Array;
  /** The player's cell. */
  player: number;
  readonly numBoxes: number;
}

export function cloneState(state: SokobanState): SokobanState {
  return { ...state, fixed: state.fixed.slice(), cells: state.cells.slice() };
}

export function isBox(code: number): boolean {
  return code === BOX || code === BOX_ON_TARGET;
}

/** Number of boxes standing on targets. */
export function boxesOnTarget(state: SokobanState): number {
  let n = 0;
  for (const code of state.cells) if (code === BOX_ON_TARGET) n++;
  return n;
}

/** A text vocabulary: the symbol of each code 0..6, and the symbols' meanings for the prompt. */
export interface SokobanVocab {
  /** symbols[code] for code 0..6 (wall, empty, target, box on target, box, player, player on target). */
  readonly symbols: readonly string[];
  readonly gridVocab: GridVocab;
}

const MEANINGS = ['wall', 'empty', 'target', 'box on target', 'box', 'player', 'player on target'];

function vocab(symbols: readonly string[]): SokobanVocab {
  return { symbols, gridVocab: symbols.map((s, code) => [s, MEANINGS[code]] as const) };
}

/** RAGEN's default vocabulary. '√' is U+221A (square root), not the check mark the paper typesets. */
export const DEFAULT_VOCAB = vocab(['#', '_', 'O', '√', 'X', 'P', 'S']);
/** SokobanDifferentGridVocab's vocabulary. */
export const ALTERNATIVE_VOCAB = vocab(['W', '.', 'G', 'C', 'B', 'A', '@']);

/** The state text: one line per row, joined by '\n', no separators. */
export function renderSokoban(state: SokobanState, vocabulary: SokobanVocab = DEFAULT_VOCAB): string {
  const lines: string[] = [];
  for (let r = 0; r < state.rows; r++) {
    let line = '';
    for (let c = 0; c < state.cols; c++) {
      const cell = r * state.cols + c;
      let code = state.cells[cell];
      if (code === PLAYER && state.fixed[cell] === TARGET) code = PLAYER_ON_TARGET;
      line += vocabulary.symbols[code];
    }
    lines.push(line);
  }
  return lines.join('\n');
}

/** The coordinate-block labels of a Sokoban state, in RAGEN-2's order (walls are never listed: too long). */
export const SOKOBAN_COORDINATE_LABELS = ['Targets', 'Boxes', 'Boxes on target', 'Player', 'Player on target'] as const;

/**
 * The 'coord' rendering (RAGEN-2): board size, then every target (covered or not), the boxes off and on targets,
 * and the player, listed as "Player on target" when it stands on one. Empty categories are left out.
 */
export function renderSokobanCoordinates(state: SokobanState): string {
  const where = (test: (cell: number) => boolean): Coordinate[] => {
    const out: Coordinate[] = [];
    for (let cell = 0; cell < state.cells.length; cell++) if (test(cell)) out.push(cellCoordinate(cell, state.cols));
    return out;
  };
  const onTarget = state.fixed[state.player] === TARGET;
  const player = [cellCoordinate(state.player, state.cols)];
  return formatCoordinateBlock(state.rows, state.cols, [
    ['Targets', where((cell) => state.fixed[cell] === TARGET)],
    ['Boxes', where((cell) => state.cells[cell] === BOX)],
    ['Boxes on target', where((cell) => state.cells[cell] === BOX_ON_TARGET)],
    ['Player', onTarget ? [] : player],
    ['Player on target', onTarget ? player : []],
  ]);
}

/** The state text in an observation format ('grid' = renderSokoban). */
export function renderSokobanObservation(
  state: SokobanState,
  vocabulary: SokobanVocab,
  format: ObservationFormat,
): string {
  return renderObservation(
    format,
    () => renderSokoban(state, vocabulary),
    () => renderSokobanCoordinates(state),
  );
}

/** Default-vocabulary symbol → [fixed code, cell code]. */
const PARSE: Readonly<Record<string, readonly [number, number]>> = {
  '#': [WALL, WALL],
  _: [FLOOR, FLOOR],
  O: [TARGET, TARGET],
  '√': [TARGET, BOX_ON_TARGET],
  X: [FLOOR, BOX],
  P: [FLOOR, PLAYER],
  S: [TARGET, PLAYER],
};

/**
 * Parses a hand-written level in the default vocabulary (# _ O √ X P S). The level need not be walled: cells
 * outside the grid act as walls. Boxes may start on targets, but not all of them (that level is already solved).
 * Throws an Error that names the problem (e.g. "level has 2 players").
 */
export function parseSokobanLevel(level: string | readonly string[]): SokobanState {
  const rows = gridRows(level);
  if (rows.length === 0) throw new Error('Sokoban level is empty');
  checkGridSize('Sokoban level', rows);
  const cols = [...rows[0]].length;
  const fixed = new Uint8Array(rows.length * cols);
  const cells = new Uint8Array(rows.length * cols);
  const players: number[] = [];
  let boxes = 0;
  let targets = 0;
  let boxesPlaced = 0;
  rows.forEach((row, r) => {
    const symbols = [...row];
    if (symbols.length !== cols) {
      throw new Error(`Sokoban level is not rectangular: row ${r + 1} has ${symbols.length} cells, row 1 has ${cols}`);
    }
    symbols.forEach((symbol, c) => {
      const codes = Object.hasOwn(PARSE, symbol) ? PARSE[symbol] : undefined;
      if (!codes) {
        throw new Error(
          `Sokoban level has unknown symbol '${symbol}' at row ${r + 1}, column ${c + 1} (use # _ O √ X P S; rows and columns count from 1)`,
        );
      }
      const cell = r * cols + c;
      [fixed[cell], cells[cell]] = codes;
      if (codes[1] === PLAYER) players.push(cell);
      if (isBox(codes[1])) boxes++;
      if (codes[1] === BOX_ON_TARGET) boxesPlaced++;
      if (codes[0] === TARGET) targets++;
    });
  });
  if (players.length !== 1) {
    throw new Error(`Sokoban level has ${players.length} players (P or S); it needs exactly one`);
  }
  if (boxes === 0) throw new Error('Sokoban level has no box (X or √)');
  if (boxes !== targets) {
    throw new Error(`Sokoban level has ${boxes} boxes (X + √) but ${targets} targets (O + √ + S); they must match`);
  }
  if (boxesPlaced === boxes) throw new Error('Sokoban level is already solved: every box is on a target');
  return { rows: rows.length, cols, fixed, cells, player: players[0], numBoxes: boxes };
}
