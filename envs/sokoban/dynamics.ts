// One primitive Sokoban action, with gym-sokoban's "push" semantics and reward (spec §2.2).

import { BOX, BOX_ON_TARGET, FLOOR, PLAYER, TARGET, WALL, isBox, type SokobanState } from './grid';

/** RAGEN's action ids 1..4 are Up, Down, Left, Right. */
export const SOKOBAN_ACTIONS = ['Up', 'Down', 'Left', 'Right'] as const;
/** (row, col) step of each action, in SOKOBAN_ACTIONS order. */
export const SOKOBAN_STEP: readonly (readonly [number, number])[] = [
  [-1, 0],
  [1, 0],
  [0, -1],
  [0, 1],
];

/** gym-sokoban's rewards. */
export const STEP_PENALTY = -0.1;
export const BOX_ON_TARGET_REWARD = 1;
export const SOLVED_REWARD = 10;

/** The cell one step from `cell` in `direction`, or -1 off the grid (which acts as a wall). */
export function neighbour(state: SokobanState, cell: number, direction: number): number {
  const row = Math.floor(cell / state.cols) + SOKOBAN_STEP[direction][0];
  const col = (cell % state.cols) + SOKOBAN_STEP[direction][1];
  return row < 0 || row >= state.rows || col < 0 || col >= state.cols ? -1 : row * state.cols + col;
}

function isFree(state: SokobanState, cell: number): boolean {
  return cell >= 0 && (state.cells[cell] === FLOOR || state.cells[cell] === TARGET);
}

/**
 * Applies action `direction` (index into SOKOBAN_ACTIONS) to `state` in place and returns whether the player
 * moved. A box ahead is pushed if the cell beyond it is free (floor or empty target); otherwise the player walks
 * into a free cell or stays put. The vacated cell gets its fixed code back (floor or target).
 */
export function applyMove(state: SokobanState, direction: number): boolean {
  const from = state.player;
  const to = neighbour(state, from, direction);
  if (to < 0 || state.cells[to] === WALL) return false;
  if (isBox(state.cells[to])) {
    const beyond = neighbour(state, to, direction);
    if (!isFree(state, beyond)) return false;
    state.cells[beyond] = state.fixed[beyond] === TARGET ? BOX_ON_TARGET : BOX;
  } else if (!isFree(state, to)) {
    return false;
  }
  state.cells[to] = PLAYER;
  state.cells[from] = state.fixed[from];
  state.player = to;
  return true;
}

/**
 * gym-sokoban's reward for one step, given the boxes on targets before and after it: −0.1 always, +1 when that
 * count rose, −1 when it fell, +10 when every box is on a target (also on later steps: RAGEN's manager never
 * steps a solved env, and gym keeps paying 9.9 if one does).
 */
export function stepReward(before: number, after: number, numBoxes: number): number {
  // Accumulated in gym's order so the float sums are bit-identical to RAGEN's (e.g. -0.1 + 1 + 10 = 10.9).
  let reward = STEP_PENALTY;
  if (after > before) reward += BOX_ON_TARGET_REWARD;
  else if (after < before) reward -= BOX_ON_TARGET_REWARD;
  if (after === numBoxes) reward += SOLVED_REWARD;
  return reward;
}
