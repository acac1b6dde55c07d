// Breadth-first Sokoban solver: the shortest sequence of primitive actions that puts every box on a target.
// Used by tests (solvability of generated levels), by the warm-start demonstrations, and for RAGEN's "solvable
// within the action budget" statistics. Boxes are interchangeable, so a search node is (player, sorted boxes).

import { TARGET, WALL, isBox, type SokobanState } from './grid';
import { SOKOBAN_ACTIONS, neighbour } from './dynamics';

/**
 * The shortest action list (names from SOKOBAN_ACTIONS) that solves `state`, [] if it is already solved, or null
 * if no solution has at most `maxDepth` actions. Moves into walls are never part of a shortest solution, so the
 * search skips them.
 */
export function solveSokoban(state: SokobanState, maxDepth = 100): string[] | null {
  if (!Number.isInteger(maxDepth) || maxDepth < 0) {
    throw new Error(`solveSokoban: maxDepth must be an integer >= 0, got ${maxDepth}`);
  }
  return search(state, maxDepth, Infinity).path;
}

/**
 * Whether any sequence of moves solves `state`: true, false (every reachable state was visited and none is
 * solved), or null when `maxStates` distinct states were visited without deciding (large levels with many boxes).
 */
export function isSokobanSolvable(state: SokobanState, maxStates = 200_000): boolean | null {
  const { path, exhausted } = search(state, Infinity, maxStates);
  return path !== null ? true : exhausted ? false : null;
}

/** Breadth-first search up to `maxDepth` actions and `maxStates` visited states; `exhausted` = nothing left to try. */
function search(
  state: SokobanState,
  maxDepth: number,
  maxStates: number,
): { path: string[] | null; exhausted: boolean } {
  const walls = (cell: number) => cell < 0 || state.fixed[cell] === WALL;
  const startBoxes: number[] = [];
  state.cells.forEach((code, cell) => isBox(code) && startBoxes.push(cell));
  const solved = (boxes: readonly number[]) => boxes.every((cell) => state.fixed[cell] === TARGET);
  if (solved(startBoxes)) return { path: [], exhausted: false };

  // Flat node storage: node i has player[i], boxes[i], depth[i], and was reached from parent[i] by action[i].
  const players = [state.player];
  const boxLists = [startBoxes];
  const parents = [-1];
  const actions = [-1];
  const depths = [0];
  const seen = new Set<string>([key(state.player, startBoxes)]);

  let cutByDepth = false;
  for (let head = 0; head < players.length; head++) {
    if (players.length > maxStates) return { path: null, exhausted: false };
    if (depths[head] >= maxDepth) {
      cutByDepth = true;
      continue;
    }
    const player = players[head];
    const boxes = boxLists[head];
    for (let a = 0; a < SOKOBAN_ACTIONS.length; a++) {
      const to = neighbour(state, player, a);
      if (walls(to)) continue;
      let nextBoxes = boxes;
      const pushed = boxes.indexOf(to);
      if (pushed >= 0) {
        const beyond = neighbour(state, to, a);
        if (walls(beyond) || boxes.includes(beyond)) continue;
        nextBoxes = boxes.slice();
        nextBoxes[pushed] = beyond;
        nextBoxes.sort((x, y) => x - y);
      }
      const k = key(to, nextBoxes);
      if (seen.has(k)) continue;
      seen.add(k);
      players.push(to);
      boxLists.push(nextBoxes);
      parents.push(head);
      actions.push(a);
      depths.push(depths[head] + 1);
      if (pushed >= 0 && solved(nextBoxes))
        return { path: pathTo(players.length - 1, parents, actions), exhausted: false };
    }
  }
  return { path: null, exhausted: !cutByDepth };
}

function key(player: number, sortedBoxes: readonly number[]): string {
  return String.fromCharCode(player, ...sortedBoxes);
}

function pathTo(node: number, parents: readonly number[], actions: readonly number[]): string[] {
  const path: string[] = [];
  for (let n = node; parents[n] >= 0; n = parents[n]) path.push(SOKOBAN_ACTIONS[actions[n]]);
  return path.reverse();
}
