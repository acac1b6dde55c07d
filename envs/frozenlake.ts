// FrozenLake (spec §2.3): walk from the start to the goal on a slippery grid without falling into a hole.
// Two tags: `FrozenLake`, and `CoordFrozenLake` (RAGEN-2), the same lake shown as coordinates plus the grid
// (observationFormat 'grid_coord') with a coordinate instruction and max_tokens 120.
//
// v1 defaults: 4x4, each cell frozen with probability p = 0.8, slippery with successRate = 1/3 (the intended move
// happens with probability 1/3, each perpendicular move with 1/3). Reward 1 only on reaching the goal; entering a
// hole or the goal ends the episode; walking into the border leaves the player in place.
//
// Randomness: the map comes from the stream Rng(seed, 'frozenlake/map') and the slips from an independent stream
// Rng(seed, 'frozenlake/slip'), both restarted by every reset. RAGEN draws both from one NumPy stream, which makes
// slips weakly correlated with the map (spec §10.16); separate streams keep the slip statistics exact. Envs of a
// group share the seed, so identical action sequences replay identically within a group, as in RAGEN.

import type { Env, StepResult } from './types';
import {
  MAX_GRID_SIDE,
  checkGridSize,
  definedEntries,
  gridRows,
  gridText,
  integerBetween,
  lookupAction,
  numberBetween,
  validateConfig,
  withKey,
} from './config';
import {
  cellCoordinate,
  formatCoordinateBlock,
  observationFormat,
  renderObservation,
  type ObservationFormat,
  type ObservedConfig,
} from './observation';
import { Rng, checkSeed } from './random';
import type { EnvSpec, GridVocab } from './spec';

/** RAGEN's action ids 1..4 are Left, Down, Right, Up (gym's 0..3). */
export const FROZENLAKE_ACTIONS = ['Left', 'Down', 'Right', 'Up'] as const;
/** (row, col) step of each action, in FROZENLAKE_ACTIONS order. */
const STEP: readonly (readonly [number, number])[] = [
  [0, -1],
  [1, 0],
  [0, 1],
  [-1, 0],
];

/** RAGEN's env_instruction for FrozenLake, verbatim ("Forbid the whole" included: spec §10.12). */
export const FROZENLAKE_INSTRUCTION =
  'You are solving the FrozenLake puzzle. Forbid the whole and go to the target. You may move to the unintended ' +
  'direction due to the slippery ice. Example answer format: <think>To forbid the hole and go to the target, I ' +
  'should go left then go up.</think><answer>Left || Up</answer>';

/** The rendering vocabulary, in RAGEN's order. */
export const FROZENLAKE_GRID_VOCAB: GridVocab = [
  ['P', 'player'],
  ['_', 'empty'],
  ['O', 'hole'],
  ['G', 'goal'],
  ['X', 'player in hole'],
  ['√', 'player on goal'],
];

export const FROZENLAKE_TAGS = ['FrozenLake', 'CoordFrozenLake'] as const;
export type FrozenLakeTag = (typeof FROZENLAKE_TAGS)[number];

/**
 * CoordFrozenLake's env_instruction. RAGEN-2's is multi-line: the observation gives a symbol grid and zero-indexed
 * coordinates of start, goal, player and holes; the ice is slippery; answer with a sequence of actions. This wording
 * says the same. RAGEN-2 states the corners as (0, 0) to (5, 5) although its lake is 4x4; here the bottom-right
 * corner is the lake's own (rows − 1, cols − 1).
 */
export function coordFrozenLakeInstruction(rows: number, cols: number): string {
  return [
    'You are solving the FrozenLake puzzle. Go to the goal without falling into a hole.',
    'The state gives the zero-indexed (row, col) coordinates of the start, the goal, the player and the holes, then the symbol grid.',
    `Coordinates run from the top-left corner (0, 0) to the bottom-right corner (${rows - 1}, ${cols - 1}).`,
    'The ice is slippery, so you may move in an unintended direction.',
    'The answer should be a sequence of actions, like <answer>Left || Up || Up</answer>',
  ].join('\n');
}

/** Besides `observationFormat`: 'coord' lists the start, goal, player and holes. */
export interface FrozenLakeConfig extends ObservedConfig {
  /** Side of the square map that reset generates (ignored when `map` is given). */
  size: number;
  /** Probability that a cell is frozen rather than a hole (v1 0.8, v2 0.9; ignored when `map` is given). */
  p: number;
  /** Probability that the intended move happens; the rest splits evenly between the two perpendicular moves. */
  successRate: number;
  /** A fixed map in the rendering vocabulary (P start, _ frozen, O hole, G goal) used instead of generating one. */
  map?: string | readonly string[];
}

/**
 * RAGEN v1's lake for both tags. RAGEN-2 runs CoordFrozenLake with its own v2 defaults (p 0.9; successRate 0.8 in
 * envs.yaml, 1 in its _3_frozen_lake config); here the tag changes only how the lake is shown, so a CoordFrozenLake
 * score compares with a FrozenLake one. Set `p` / `successRate` for RAGEN-2's lake.
 */
export const FROZENLAKE_DEFAULTS: Readonly<Record<FrozenLakeTag, Readonly<FrozenLakeConfig>>> = {
  FrozenLake: { size: 4, p: 0.8, successRate: 1 / 3, observationFormat: 'grid' },
  CoordFrozenLake: { size: 4, p: 0.8, successRate: 1 / 3, observationFormat: 'grid_coord' },
};

const FROZENLAKE_CONFIG_KEYS = {
  size: integerBetween(2, MAX_GRID_SIDE),
  p: numberBetween(0, 1, true),
  successRate: numberBetween(0, 1),
  map: gridText,
  observationFormat,
} as const;

/** A lake: cells are numbered row-major (cell = row * cols + col). */
export interface FrozenLakeMap {
  readonly rows: number;
  readonly cols: number;
  /** holes[cell] is true for a hole. The start and goal are never holes. */
  readonly holes: readonly boolean[];
  readonly start: number;
  readonly goal: number;
}

/** The cell reached by one move in direction `direction` (index into FROZENLAKE_ACTIONS); the border stops it. */
export function moveOnLake(map: FrozenLakeMap, cell: number, direction: number): number {
  const row = Math.min(map.rows - 1, Math.max(0, Math.floor(cell / map.cols) + STEP[direction][0]));
  const col = Math.min(map.cols - 1, Math.max(0, (cell % map.cols) + STEP[direction][1]));
  return row * map.cols + col;
}

/**
 * Where an intended action can actually go, as gymnasium lists it: [action − 1, action, action + 1] (mod 4) with
 * probabilities [(1 − s)/2, s, (1 − s)/2]; for FROZENLAKE_ACTIONS order, ±1 are the two perpendicular moves.
 */
export function slipOutcomes(action: number, successRate: number): [direction: number, probability: number][] {
  const side = (1 - successRate) / 2;
  return [
    [(action + 3) % 4, side],
    [action, successRate],
    [(action + 1) % 4, side],
  ];
}

/** True when the goal can be reached from the start through 4-neighbour moves that avoid holes. */
export function isGoalReachable(map: FrozenLakeMap): boolean {
  const seen = new Set<number>([map.start]);
  const stack = [map.start];
  while (stack.length > 0) {
    const cell = stack.pop()!;
    if (cell === map.goal) return true;
    for (let d = 0; d < 4; d++) {
      const next = moveOnLake(map, cell, d);
      if (!seen.has(next) && !map.holes[next]) {
        seen.add(next);
        stack.push(next);
      }
    }
  }
  return false;
}

/** Resampling a map with an unreachable goal this many times means p is hopeless: say so instead of looping. */
const MAX_MAP_ATTEMPTS = 100_000;

/**
 * RAGEN's random map: every cell frozen with probability p, start and goal uniform over all cells and distinct,
 * resampled until the goal is reachable.
 */
export function generateFrozenLakeMap(rng: Rng, size: number, p: number): FrozenLakeMap {
  const cells = size * size;
  for (let attempt = 0; attempt < MAX_MAP_ATTEMPTS; attempt++) {
    const holes = Array.from({ length: cells }, () => rng.float() >= p);
    const start = rng.int(cells);
    let goal = rng.int(cells);
    while (goal === start) goal = rng.int(cells);
    holes[start] = false;
    holes[goal] = false;
    const map = { rows: size, cols: size, holes, start, goal };
    if (isGoalReachable(map)) return map;
  }
  throw new Error(`FrozenLake: no map with a reachable goal in ${MAX_MAP_ATTEMPTS} tries (size ${size}, p ${p})`);
}

/** Parses a map in the rendering vocabulary; the Error names what is wrong with it. */
export function parseFrozenLakeMap(grid: string | readonly string[]): FrozenLakeMap {
  const rows = gridRows(grid);
  if (rows.length === 0) throw new Error('FrozenLake map is empty');
  checkGridSize('FrozenLake map', rows);
  const cols = [...rows[0]].length;
  const holes: boolean[] = [];
  const starts: number[] = [];
  const goals: number[] = [];
  rows.forEach((row, r) => {
    const symbols = [...row];
    if (symbols.length !== cols) {
      throw new Error(`FrozenLake map is not rectangular: row ${r + 1} has ${symbols.length} cells, row 1 has ${cols}`);
    }
    symbols.forEach((symbol, c) => {
      const cell = r * cols + c;
      if (symbol === 'P') starts.push(cell);
      else if (symbol === 'G') goals.push(cell);
      else if (symbol !== '_' && symbol !== 'O') {
        throw new Error(
          `FrozenLake map has unknown symbol '${symbol}' at row ${r + 1}, column ${c + 1} (use P, _, O, G; rows and columns count from 1)`,
        );
      }
      holes.push(symbol === 'O');
    });
  });
  if (starts.length !== 1) throw new Error(`FrozenLake map has ${starts.length} players (P); it needs exactly one`);
  if (goals.length !== 1) throw new Error(`FrozenLake map has ${goals.length} goals (G); it needs exactly one`);
  const map = { rows: rows.length, cols, holes, start: starts[0], goal: goals[0] };
  if (!isGoalReachable(map)) throw new Error('FrozenLake map has no hole-free path from P to G');
  return map;
}

/** The state text: P player, _ frozen (start included), O hole, G goal, X player in hole, √ player on goal. */
export function renderFrozenLake(map: FrozenLakeMap, position: number): string {
  const lines: string[] = [];
  for (let r = 0; r < map.rows; r++) {
    let line = '';
    for (let c = 0; c < map.cols; c++) {
      const cell = r * map.cols + c;
      const hole = map.holes[cell];
      const goal = cell === map.goal;
      if (cell === position) line += hole ? 'X' : goal ? '√' : 'P';
      else line += hole ? 'O' : goal ? 'G' : '_';
    }
    lines.push(line);
  }
  return lines.join('\n');
}

/** The coordinate-block labels of a FrozenLake state, in RAGEN-2's order. */
export const FROZENLAKE_COORDINATE_LABELS = [
  'Start',
  'Goal',
  'Player',
  'Player on goal',
  'Player in hole',
  'Holes',
] as const;

/**
 * The 'coord' rendering (RAGEN-2): board size, start, goal, the player (as "Player on goal" / "Player in hole" when
 * it stands there) and every hole (the one the player fell into included). Empty categories are left out.
 */
export function renderFrozenLakeCoordinates(map: FrozenLakeMap, position: number): string {
  const at = (cell: number) => [cellCoordinate(cell, map.cols)];
  const holes = [];
  for (let cell = 0; cell < map.holes.length; cell++) if (map.holes[cell]) holes.push(cellCoordinate(cell, map.cols));
  const inHole = map.holes[position];
  const onGoal = position === map.goal;
  return formatCoordinateBlock(map.rows, map.cols, [
    ['Start', at(map.start)],
    ['Goal', at(map.goal)],
    ['Player', inHole || onGoal ? [] : at(position)],
    ['Player on goal', onGoal ? at(position) : []],
    ['Player in hole', inHole ? at(position) : []],
    ['Holes', holes],
  ]);
}

/** The state text in an observation format ('grid' = renderFrozenLake). */
export function renderFrozenLakeObservation(map: FrozenLakeMap, position: number, format: ObservationFormat): string {
  return renderObservation(
    format,
    () => renderFrozenLake(map, position),
    () => renderFrozenLakeCoordinates(map, position),
  );
}

export interface FrozenLakePlanner {
  /**
   * Probability that optimal closed-loop play (seeing the state after every action) reaches the goal from `cell`
   * with at most `actionsLeft` actions. 1 on the goal, 0 in a hole.
   */
  successProbability(cell: number, actionsLeft: number): number;
  /**
   * An optimal action name for (`cell`, `actionsLeft`), or null when nothing is left to decide (no actions left,
   * or the episode is over). Ties go to the action that succeeds with fewer actions (so with successRate 1 it
   * walks a shortest path), then to the lowest RAGEN id.
   */
  bestAction(cell: number, actionsLeft: number): string | null;
}

/** Value iteration over (cell, actions left) up to `maxActions`, under the slip model of `successRate`. */
export function planFrozenLake(map: FrozenLakeMap, successRate: number, maxActions: number): FrozenLakePlanner {
  if (!Number.isInteger(maxActions) || maxActions < 0) {
    throw new Error(`planFrozenLake: maxActions must be an integer >= 0, got ${maxActions}`);
  }
  if (!(successRate >= 0 && successRate <= 1)) {
    throw new Error(`planFrozenLake: successRate must be in [0, 1], got ${successRate}`);
  }
  const cells = map.rows * map.cols;
  const terminal = (cell: number) => map.holes[cell] || cell === map.goal;
  // value[k][cell]: success probability with k actions left (terminal cells: 1 goal, 0 hole).
  const value: Float64Array[] = [];
  // q[k][cell * 4 + a]: success probability of doing a first, with k actions left (k >= 1).
  const q: Float64Array[] = [new Float64Array(cells * 4)];
  for (let k = 0; k <= maxActions; k++) {
    const v = new Float64Array(cells);
    v[map.goal] = 1;
    if (k > 0) {
      const qk = new Float64Array(cells * 4);
      for (let cell = 0; cell < cells; cell++) {
        if (terminal(cell)) continue;
        let best = 0;
        for (let a = 0; a < 4; a++) {
          let total = 0;
          for (const [direction, prob] of slipOutcomes(a, successRate)) {
            total += prob * value[k - 1][moveOnLake(map, cell, direction)];
          }
          qk[cell * 4 + a] = total;
          best = Math.max(best, total);
        }
        v[cell] = best;
      }
      q.push(qk);
    }
    value.push(v);
  }

  const checkQuery = (cell: number, actionsLeft: number) => {
    if (!Number.isInteger(cell) || cell < 0 || cell >= cells) throw new Error(`planner: no cell ${cell}`);
    if (!Number.isInteger(actionsLeft) || actionsLeft < 0 || actionsLeft > maxActions) {
      throw new Error(`planner: actionsLeft must be an integer in [0, ${maxActions}], got ${actionsLeft}`);
    }
  };
  const EPS = 1e-12;
  return {
    successProbability(cell, actionsLeft) {
      checkQuery(cell, actionsLeft);
      return value[actionsLeft][cell];
    },
    bestAction(cell, actionsLeft) {
      checkQuery(cell, actionsLeft);
      if (actionsLeft === 0 || terminal(cell)) return null;
      let candidates = [0, 1, 2, 3];
      // Keep the actions that are optimal with k actions left, then narrow by k-1, k-2, ... (sooner is better).
      for (let k = actionsLeft; k >= 1 && candidates.length > 1; k--) {
        const best = Math.max(...candidates.map((a) => q[k][cell * 4 + a]));
        candidates = candidates.filter((a) => q[k][cell * 4 + a] >= best - EPS);
      }
      return FROZENLAKE_ACTIONS[candidates[0]];
    },
  };
}

export class FrozenLakeEnv implements Env {
  readonly tag: FrozenLakeTag;
  readonly actionNames: readonly string[] = FROZENLAKE_ACTIONS;
  readonly config: Readonly<FrozenLakeConfig>;
  readonly spec: EnvSpec;

  private readonly fixedMap: FrozenLakeMap | null;
  private lake: FrozenLakeMap | null = null;
  private player = 0;
  private slip: Rng | null = null;

  constructor(tag: FrozenLakeTag = 'FrozenLake', config?: Record<string, unknown>) {
    if (!(FROZENLAKE_TAGS as readonly string[]).includes(tag))
      throw new Error(`FrozenLakeEnv: unknown tag '${tag}' (${FROZENLAKE_TAGS.join(', ')})`);
    this.tag = tag;
    validateConfig(tag, config, FROZENLAKE_CONFIG_KEYS);
    this.config = Object.freeze({ ...FROZENLAKE_DEFAULTS[tag], ...definedEntries(config) } as FrozenLakeConfig);
    this.fixedMap =
      this.config.map === undefined ? null : withKey(tag, 'map', () => parseFrozenLakeMap(this.config.map!));
    const [rows, cols] = this.fixedMap
      ? [this.fixedMap.rows, this.fixedMap.cols]
      : [this.config.size, this.config.size];
    this.spec = {
      tag,
      instruction: tag === 'CoordFrozenLake' ? coordFrozenLakeInstruction(rows, cols) : FROZENLAKE_INSTRUCTION,
      gridVocab: FROZENLAKE_GRID_VOCAB,
      maxActionsPerTraj: 10,
      maxTokens: tag === 'CoordFrozenLake' ? 120 : 100,
    };
  }

  reset(seed: number): string {
    checkSeed(seed);
    this.lake =
      this.fixedMap ?? generateFrozenLakeMap(Rng.fromSeed(seed, 'frozenlake/map'), this.config.size, this.config.p);
    this.slip = Rng.fromSeed(seed, 'frozenlake/slip');
    this.player = this.lake.start;
    return this.render();
  }

  step(action: string): StepResult {
    const lake = this.map;
    const slip = this.slip!;
    const id = lookupAction(this.actionNames, action);
    if (id < 0 || this.done) {
      // Unknown action: no state change. After the episode ended: gymnasium keeps the player where it is.
      return this.result(0, id >= 0, false);
    }
    const u = slip.float();
    let cumulative = 0;
    let direction = id;
    for (const [d, prob] of slipOutcomes(id, this.config.successRate)) {
      cumulative += prob;
      if (cumulative > u) {
        direction = d;
        break;
      }
    }
    const before = this.player;
    this.player = moveOnLake(lake, before, direction);
    return this.result(this.player === lake.goal ? 1 : 0, true, this.player !== before);
  }

  render(): string {
    return renderFrozenLakeObservation(this.map, this.player, this.config.observationFormat);
  }

  /** The current map (throws before the first reset). */
  get map(): FrozenLakeMap {
    if (!this.lake) throw new Error(`${this.tag}: call reset(seed) before step(), render() or map`);
    return this.lake;
  }

  /** The player's cell (row * cols + col). */
  get position(): number {
    return this.player;
  }

  /** True once the player stands in a hole or on the goal. */
  get done(): boolean {
    const lake = this.map;
    return lake.holes[this.player] || this.player === lake.goal;
  }

  private result(reward: number, actionIsValid: boolean, actionIsEffective: boolean): StepResult {
    const success = this.player === this.map.goal;
    return { observation: this.render(), reward, done: this.done, info: { success, actionIsValid, actionIsEffective } };
  }
}
