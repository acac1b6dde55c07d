// Observation formats of the grid envs (RAGEN-2's `observation_format`, spec §2.2 "v2 additions" and §2.3):
//
//   'grid'        the symbol grid alone (RAGEN v1's only format, the default here);
//   'coord'       a coordinate block: "Board size: R rows x C cols (zero-indexed)." then one line per non-empty
//                 category, "Label: (r, c), (r, c)" with zero-indexed (row, col) pairs in row-major order;
//   'grid_coord'  "Coordinates: \n" + the coordinate block + "\nGrid Map: \n" + the grid.
//
// The strings follow RAGEN-2's code (mll-lab-nu/RAGEN, ragen/env/{sokoban,frozen_lake}/utils.py
// format_coordinate_render and env.py _render_text), the trailing space after "Coordinates:" and "Grid Map:"
// included. Each env decides its categories (envs/sokoban/index.ts, envs/frozenlake.ts); this file holds what they
// share, plus the reverse direction (reading a rendered state back), which the playground uses to draw a board.
import type { Validator } from './config';

export const OBSERVATION_FORMATS = ['grid', 'coord', 'grid_coord'] as const;
export type ObservationFormat = (typeof OBSERVATION_FORMATS)[number];

/** The config key every grid env has (FrozenLakeConfig, SokobanConfig). */
export interface ObservedConfig {
  /**
   * How the state is written (RAGEN-2's observation_format): 'grid' (the symbol grid), 'coord' (zero-indexed
   * coordinates of the cells that matter: the env lists which) or 'grid_coord' (both).
   */
  observationFormat: ObservationFormat;
}

export const observationFormat: Validator = (v) =>
  typeof v === 'string' && (OBSERVATION_FORMATS as readonly string[]).includes(v)
    ? null
    : `must be one of ${OBSERVATION_FORMATS.join(', ')}`;

/** A zero-indexed (row, col) pair. */
export type Coordinate = readonly [row: number, col: number];

/** One line of a coordinate block: a label ("Boxes on target") and its cells. */
export type CoordinateCategory = readonly [label: string, cells: readonly Coordinate[]];

const COORDINATES_HEADER = 'Coordinates: \n';
const GRID_HEADER = '\nGrid Map: \n';

/** The (row, col) of a row-major cell index. */
export function cellCoordinate(cell: number, cols: number): Coordinate {
  return [Math.floor(cell / cols), cell % cols];
}

/** "Board size: ..." and one "Label: (r, c), ..." line per category with at least one cell, in the given order. */
export function formatCoordinateBlock(rows: number, cols: number, categories: readonly CoordinateCategory[]): string {
  const lines = [`Board size: ${rows} rows x ${cols} cols (zero-indexed).`];
  for (const [label, cells] of categories) {
    if (cells.length === 0) continue;
    lines.push(`${label}: ${cells.map(([r, c]) => `(${r}, ${c})`).join(', ')}`);
  }
  return lines.join('\n');
}

/** The state text in `format`, from the env's grid and coordinate renderings (each computed only when needed). */
export function renderObservation(format: ObservationFormat, grid: () => string, coordinates: () => string): string {
  switch (format) {
    case 'grid':
      return grid();
    case 'coord':
      return coordinates();
    case 'grid_coord':
      return COORDINATES_HEADER + coordinates() + GRID_HEADER + grid();
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Reading a rendered state back

/** A coordinate block read back: the board size and each labelled line's cells. */
export interface ParsedCoordinates {
  rows: number;
  cols: number;
  /** Label -> cells, in the order the lines appear. */
  categories: Map<string, Coordinate[]>;
}

/** A state text split into its parts: which format it is in, its grid text and its coordinate block (if any). */
export interface SplitObservation {
  format: ObservationFormat;
  grid: string | null;
  coordinates: ParsedCoordinates | null;
}

const BOARD_SIZE = /^Board size: (\d+) rows x (\d+) cols \(zero-indexed\)\.$/;
const CATEGORY = /^([A-Za-z][A-Za-z ]*): (\(\d+, \d+\)(?:, \(\d+, \d+\))*)$/;

/** Reads a coordinate block; throws an Error naming the first line that is not one. */
export function parseCoordinateBlock(text: string): ParsedCoordinates {
  const lines = text
    .replace(/\r/g, '')
    .split('\n')
    .filter((l) => l.trim() !== '');
  const size = BOARD_SIZE.exec(lines[0] ?? '');
  if (!size)
    throw new Error(
      `coordinate block must start with "Board size: R rows x C cols (zero-indexed).", got ${JSON.stringify(lines[0] ?? '')}`,
    );
  const rows = Number(size[1]);
  const cols = Number(size[2]);
  const categories = new Map<string, Coordinate[]>();
  for (const line of lines.slice(1)) {
    const m = CATEGORY.exec(line);
    if (!m)
      throw new Error(`coordinate block: cannot read line ${JSON.stringify(line)} (expected "Label: (row, col), ...")`);
    if (categories.has(m[1])) throw new Error(`coordinate block: '${m[1]}' is listed twice`);
    const cells = [...m[2].matchAll(/\((\d+), (\d+)\)/g)].map((c) => [Number(c[1]), Number(c[2])] as const);
    for (const [r, c] of cells) {
      if (r >= rows || c >= cols)
        throw new Error(`coordinate block: (${r}, ${c}) in '${m[1]}' is outside the ${rows} x ${cols} board`);
    }
    categories.set(m[1], cells);
  }
  return { rows, cols, categories };
}

/**
 * Splits a state text into grid and coordinates by its shape: "Coordinates: ..." + "Grid Map: ..." is grid_coord,
 * "Board size: ..." is coord, anything else is a grid. Throws when a coordinate part does not parse.
 */
export function splitObservation(text: string): SplitObservation {
  const clean = text.replace(/\r/g, '');
  if (clean.startsWith(COORDINATES_HEADER.trimEnd())) {
    const at = clean.indexOf(GRID_HEADER.trim());
    if (at < 0) throw new Error('grid_coord state has no "Grid Map:" part');
    const coordText = clean.slice(clean.indexOf('\n') + 1, at);
    const grid = clean.slice(at + GRID_HEADER.trim().length).replace(/^ ?\n/, '');
    return { format: 'grid_coord', grid, coordinates: parseCoordinateBlock(coordText) };
  }
  if (clean.startsWith('Board size:')) return { format: 'coord', grid: null, coordinates: parseCoordinateBlock(clean) };
  return { format: 'grid', grid: clean, coordinates: null };
}
