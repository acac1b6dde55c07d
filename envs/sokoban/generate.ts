// Sokoban level generation, following RAGEN's adaptation of gym-sokoban step by step (spec §2.2, steps 1-6):
//   1. sizes: floor(1.7 * (rows + cols)) walk steps, direction change probability 0.35, up to 4 tries;
//   2. topology: a random walk stamping 3x3 masks, then a wall border;
//   3. placement: the player, then one target per box, on random floor cells; boxes start ON their targets;
//   4. reverse play: depth-first search over "pull" moves from that solved state, keeping the state with the best
//      score box_swaps x (sum of box displacements), counted only when every target is empty;
//   5. a best score of 0 after all tries is a failure: the caller reseeds with the stable hash and starts over;
//   6. RAGEN's player shuffle: move the player 1-3 random steps so it does not always start next to a box.
// Reverse play only ever walks back from a solved state, so every level it produces is solvable.
//
// One seeded stream drives everything (RAGEN uses Python's `random` for the walk and shuffle and NumPy for the
// placement); levels differ from RAGEN's for the same seed, the distribution follows the same rules.

import { Rng, checkSeed, reseed } from '../random';
import { BOX, BOX_ON_TARGET, FLOOR, PLAYER, TARGET, WALL, type SokobanState } from './grid';

export interface GenerationOptions {
  /** Board height (RAGEN's dim_room[0]). */
  rows: number;
  /** Board width (RAGEN's dim_room[1]). */
  cols: number;
  numBoxes: number;
  /** TTL of the reverse-play search: the deepest scored state is searchDepth - 2 pulls from the solved state. */
  searchDepth: number;
}

/** One attempt failed (too little floor, or no pull moved a box): RAGEN retries with a re-hashed seed. */
export class SokobanGenerationError extends Error {}

const P_CHANGE_DIRECTION = 0.35;
const TRIES = 4;
/** gym-sokoban stops the reverse search after this many distinct states. */
const MAX_EXPLORED_STATES = 300_000;
/** Reseeding this many times without a level means the options cannot work (e.g. a 3x3 room): say so. */
const MAX_RESEEDS = 100;
/**
 * The work all reverse searches of one level may do together, over every try and reseed: explored states times
 * cells of the room (a state costs about its cell count), a few seconds on one core. A room and box count that
 * need more (20x20 with 6 boxes searched 300,000 states, two minutes, for one level) fail with an error that says
 * so instead of generating for minutes without a word. The shipped envs need under 12,000 (8x8, 2 boxes), a 7x9 room
 * with 3 boxes 410,000, so the levels they generate are unchanged.
 */
export const MAX_GENERATION_WORK = 4_000_000;

/** The five 3x3 stamps of the topology walk (1 = floor), centred on the walker. */
const MASKS: readonly (readonly number[])[] = [
  [0, 0, 0, 1, 1, 1, 0, 0, 0],
  [0, 1, 0, 0, 1, 0, 0, 1, 0],
  [0, 0, 0, 1, 1, 0, 0, 1, 0],
  [0, 0, 0, 1, 1, 0, 1, 1, 0],
  [0, 0, 0, 0, 1, 1, 0, 1, 0],
];
const WALK_DIRECTIONS: readonly (readonly [number, number])[] = [
  [1, 0],
  [0, 1],
  [-1, 0],
  [0, -1],
];
/** (row, col) of the reverse moves and of the shuffle, in gym's order: up, down, left, right. */
const MOVES: readonly (readonly [number, number])[] = [
  [-1, 0],
  [1, 0],
  [0, -1],
  [0, 1],
];

/**
 * A solvable level for `seed`, all boxes off target. Failed attempts are retried with seed' = reseed(seed), as
 * RAGEN does with Python's hash (spec §2.0).
 */
export function generateSokoban(seed: number, options: GenerationOptions): SokobanState {
  checkSeed(seed);
  let current = seed;
  const { rows, cols, numBoxes } = options;
  const budget = { states: Math.floor(MAX_GENERATION_WORK / (rows * cols)) };
  for (let attempt = 0; attempt <= MAX_RESEEDS; attempt++) {
    try {
      return generateOnce(Rng.fromSeed(current, 'sokoban'), options, budget);
    } catch (error) {
      if (!(error instanceof SokobanGenerationError)) throw error;
      if (budget.states <= 0) {
        throw new Error(
          `Sokoban: no level for a ${rows}x${cols} room with ${numBoxes} boxes within the generation budget ` +
            `(${Math.floor(MAX_GENERATION_WORK / (rows * cols))} searched states, ${attempt + 1} attempts): use fewer boxes or a smaller room`,
          { cause: error },
        );
      }
      current = reseed(current);
    }
  }
  throw new Error(`Sokoban: no level for a ${rows}x${cols} room with ${numBoxes} boxes after ${MAX_RESEEDS} reseeds`);
}

/** Steps 1-6 with one generator; throws SokobanGenerationError when this attempt fails. */
export function generateOnce(rng: Rng, options: GenerationOptions, budget = { states: Infinity }): SokobanState {
  const { rows, cols, numBoxes, searchDepth } = options;
  const walkSteps = Math.floor(1.7 * (rows + cols));
  let found: { cells: Uint8Array; fixed: Uint8Array; displacement: number } | null = null;
  for (let t = 0; t < TRIES; t++) {
    const room = roomTopology(rng, rows, cols, walkSteps);
    const player = placeBoxesAndPlayer(rng, room, numBoxes);
    const fixed = room; // after placement: WALL / FLOOR / TARGET
    const start = room.slice();
    for (let i = 0; i < start.length; i++) if (start[i] === TARGET) start[i] = BOX; // boxes sit on their targets
    start[player] = PLAYER;
    const best = reversePlay(start, fixed, cols, searchDepth, budget);
    // A search cut short by the budget is not gym's search: its level is never used.
    if (budget.states <= 0) throw new SokobanGenerationError('the generation budget ran out');
    found = { cells: best.cells, fixed, displacement: best.displacement };
    if (best.displacement > 0) break;
  }
  if (!found || found.displacement === 0) throw new SokobanGenerationError('no pull moved a box away from its target');

  const cells = found.cells;
  // gym marks pulled boxes 3 whatever lies under them; the best state has every target empty, so all are plain boxes.
  for (let i = 0; i < cells.length; i++) if (cells[i] === BOX_ON_TARGET) cells[i] = BOX;
  let player = cells.indexOf(PLAYER);
  player = shufflePlayer(rng, cells, found.fixed, cols, player, found.displacement === 1 ? 0.8 : 0.5);
  return { rows, cols, fixed: found.fixed, cells, player, numBoxes };
}

/** Step 2: floor carved by a random walk of 3x3 stamps; the outer ring is always wall. */
export function roomTopology(rng: Rng, rows: number, cols: number, steps: number): Uint8Array {
  const level = new Uint8Array(rows * cols);
  let direction = rng.choice(WALK_DIRECTIONS);
  // gym starts anywhere in [1, dim - 1] (the border included); the first clamp pulls it inside.
  let row = rng.intBetween(1, rows - 1);
  let col = rng.intBetween(1, cols - 1);
  for (let s = 0; s < steps; s++) {
    if (rng.float() < P_CHANGE_DIRECTION) direction = rng.choice(WALK_DIRECTIONS);
    row = Math.max(Math.min(row + direction[0], rows - 2), 1);
    col = Math.max(Math.min(col + direction[1], cols - 2), 1);
    const mask = rng.choice(MASKS);
    for (let i = 0; i < 9; i++) {
      if (mask[i]) level[(row - 1 + Math.floor(i / 3)) * cols + (col - 1 + (i % 3))] = FLOOR;
    }
  }
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) {
      if (r === 0 || c === 0 || r === rows - 1 || c === cols - 1) level[r * cols + c] = WALL;
    }
  }
  return level;
}

/**
 * Step 3: the player on a uniformly random floor cell, then each target on a random remaining floor cell (marked
 * TARGET in `room`). Returns the player's cell; `room` keeps FLOOR under the player.
 */
export function placeBoxesAndPlayer(rng: Rng, room: Uint8Array, numBoxes: number): number {
  const floorCells = () => {
    const out: number[] = [];
    room.forEach((code, cell) => code === FLOOR && out.push(cell));
    return out;
  };
  const floor = floorCells();
  if (floor.length <= numBoxes + 1) {
    throw new SokobanGenerationError(`only ${floor.length} floor cells for 1 player and ${numBoxes} boxes`);
  }
  const player = rng.choice(floor);
  for (let n = 0; n < numBoxes; n++) {
    const free = floorCells().filter((cell) => cell !== player);
    room[rng.choice(free)] = TARGET;
  }
  return player;
}

/**
 * Step 4: depth-first reverse play. Each move steps the player into an adjacent free cell and pulls the box
 * directly behind it, if any. States are visited once (keyed by their cell codes, as gym hashes the array), the
 * TTL falls by one per level, and the search stops after 300,000 states. Returns the best-scoring state and the
 * total box displacement of that state.
 */
export function reversePlay(
  start: Uint8Array,
  fixed: Uint8Array,
  cols: number,
  searchDepth: number,
  budget = { states: Infinity },
): { cells: Uint8Array; displacement: number } {
  const targets: number[] = [];
  fixed.forEach((code, cell) => code === TARGET && targets.push(cell));
  const numBoxes = targets.length;
  const explored = new Set<string>();
  let bestScore = -1;
  let best = { cells: start.slice(), displacement: 0 };

  const displacement = (boxAt: readonly number[]) => {
    let sum = 0;
    boxAt.forEach((cell, t) => {
      sum +=
        Math.abs(Math.floor(cell / cols) - Math.floor(targets[t] / cols)) +
        Math.abs((cell % cols) - (targets[t] % cols));
    });
    return sum;
  };

  // boxAt[t]: the cell of the box that started on target t. lastPull: the target index of the last pulled box.
  const search = (
    cells: Uint8Array,
    player: number,
    boxAt: number[],
    boxSwaps: number,
    lastPull: number,
    ttl: number,
  ) => {
    ttl -= 1;
    if (ttl <= 0 || explored.size >= MAX_EXPLORED_STATES || budget.states <= 0) return;
    const key = String.fromCharCode(...cells);
    if (explored.has(key)) return;
    budget.states--;
    const moved = displacement(boxAt);
    let emptyTargets = 0;
    for (const code of cells) if (code === TARGET) emptyTargets++;
    const score = emptyTargets === numBoxes ? boxSwaps * moved : 0;
    if (score > bestScore) {
      bestScore = score;
      best = { cells: cells.slice(), displacement: moved };
    }
    explored.add(key);

    for (const [dr, dc] of MOVES) {
      const next = player + dr * cols + dc;
      if (cells[next] !== FLOOR && cells[next] !== TARGET) continue; // blocked: same state, already explored
      const nextCells = cells.slice();
      const nextBoxAt = boxAt.slice();
      let nextLastPull = lastPull;
      nextCells[player] = fixed[player];
      nextCells[next] = PLAYER;
      const behind = player - dr * cols - dc;
      if (nextCells[behind] === BOX || nextCells[behind] === BOX_ON_TARGET) {
        nextCells[player] = BOX_ON_TARGET; // gym marks every pulled box 3, whatever lies under it
        nextCells[behind] = fixed[behind];
        const t = nextBoxAt.indexOf(behind);
        nextBoxAt[t] = player;
        nextLastPull = t;
      }
      const swaps = nextLastPull !== lastPull ? boxSwaps + 1 : boxSwaps;
      search(nextCells, next, nextBoxAt, swaps, nextLastPull, ttl);
    }
  };
  search(start, start.indexOf(PLAYER), targets.slice(), 0, -1, searchDepth);
  return best;
}

/**
 * Step 6 (RAGEN): with probability `moveProbability`, walk the player 1-3 random steps onto free cells it has not
 * visited, continuing after each step with probability 0.5. Returns the player's new cell; `cells` is updated.
 */
export function shufflePlayer(
  rng: Rng,
  cells: Uint8Array,
  fixed: Uint8Array,
  cols: number,
  player: number,
  moveProbability: number,
): number {
  if (rng.float() > moveProbability) return player;
  const visited = new Set([player]);
  for (let steps = 0; steps < 3;) {
    const options: number[] = [];
    for (const [dr, dc] of MOVES) {
      const next = player + dr * cols + dc;
      if ((cells[next] === FLOOR || cells[next] === TARGET) && !visited.has(next)) options.push(next);
    }
    if (options.length === 0) break;
    const next = rng.choice(options);
    cells[player] = fixed[player];
    cells[next] = PLAYER;
    player = next;
    visited.add(next);
    steps++;
    if (steps >= 3 || rng.float() > 0.5) break;
  }
  return player;
}
