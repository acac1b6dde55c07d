// The optimal FrozenLake policy under RAGEN's agent protocol, and its exact success probability.
//
// The agent does not see the lake after every move. Each turn it sends ONE answer of up to `maxActionsPerTurn`
// actions, which the env executes one after another without showing anything in between (open loop); the episode
// ends early in a hole or on the goal, and in all it may take at most `maxTurn` turns and `maxActionsPerTraj`
// actions. The closed-loop planner (planFrozenLake: a fresh look after every action) overstates what an agent can
// reach with several actions per answer, and one action per answer wastes the action budget once turns run short.
//
// Dynamic programme over (cell c, actions left a, turns left t):
//   V(c, a, 0) = 0;  V(c, a, t) = max over action sequences s, 1 <= |s| <= min(k, a), of
//                    P(goal while playing s from c) + sum over cells c' of P(s ends at c', still on the ice) V(c', a - |s|, t - 1)
// with every slip drawn as the env draws it (slipOutcomes: intended move with probability successRate, each
// perpendicular move with (1 - successRate) / 2; the border stops a move). Among answers of the same success
// probability the planner takes the one whose successes come soonest: the least E[actions used x 1{goal}]
// (carried along as a second value W), so it never wastes a move, then the shortest answer (it keeps the most
// to decide after the next look), then the first in RAGEN's action id order.
//
// When t >= a the agent can afford one action per turn: closed-loop play, which is optimal, so those layers use
// one-action answers only. Otherwise the sequences (4 + 16 + ... + 4^k of them) are searched depth first, sharing
// prefixes and carrying the distribution over cells along, by branch and bound: a prefix is dropped when even an
// agent that could look after each of its remaining actions could not reach the best value found so far (or could
// only tie it without winning the tie). Nothing optimal is dropped, so the value is exact and the answer is the one
// the tie rules name, whatever order the search went in. Layers (t, a) are computed on demand and kept: the start
// of a 5-turn / 10-action protocol needs only the pairs it can reach.
import { FROZENLAKE_ACTIONS, moveOnLake, slipOutcomes, type FrozenLakeMap } from './frozenlake';

/** RAGEN's limits on one episode (agent_proxy.max_turn, max_actions_per_turn; custom_envs.<Tag>.max_actions_per_traj). */
export interface TurnProtocol {
  maxTurn: number;
  maxActionsPerTurn: number;
  maxActionsPerTraj: number;
}

export interface FrozenLakeTurnPlanner {
  readonly protocol: Readonly<TurnProtocol>;
  /**
   * Probability that optimal play under the protocol reaches the goal from `cell` with `actionsLeft` actions and
   * `turnsLeft` turns left (1 on the goal, 0 in a hole).
   */
  successProbability(cell: number, actionsLeft: number, turnsLeft: number): number;
  /**
   * An optimal answer for this turn: 1 to min(maxActionsPerTurn, actionsLeft) action names, or [] when nothing is
   * left to decide (no action or turn left, or the episode is over). Ties: see the top of envs/frozenlakeTurns.ts.
   * With a turn to spare for every action left (turnsLeft >= actionsLeft) it is one move.
   */
  bestAnswer(cell: number, actionsLeft: number, turnsLeft: number): string[];
}

/** A value layer (t, a), per cell: V, W (see the top of this file) and the chosen answer's action ids. */
interface Layer {
  value: Float64Array;
  steps: Float64Array;
  answer: number[][];
}

const EPS = 1e-12;

function checkProtocol(p: TurnProtocol): void {
  for (const key of ['maxTurn', 'maxActionsPerTurn', 'maxActionsPerTraj'] as const) {
    if (!Number.isInteger(p[key]) || p[key] < 1)
      throw new Error(`planFrozenLakeTurns: ${key} must be an integer >= 1, got ${p[key]}`);
  }
  // The search is exact but exponential in the answer length in the worst case. No answer is longer than the
  // episode's budget, so only a protocol where both exceed 10 is refused.
  if (Math.min(p.maxActionsPerTurn, p.maxActionsPerTraj) > 10) {
    throw new Error(
      `planFrozenLakeTurns: answers of up to ${Math.min(p.maxActionsPerTurn, p.maxActionsPerTraj)} actions (maxActionsPerTurn ${p.maxActionsPerTurn}, maxActionsPerTraj ${p.maxActionsPerTraj}) are more than this planner searches (at most 10)`,
    );
  }
}

/** True when answer `x` comes before `y` of the same length in RAGEN's action id order, first actions first. */
function lexicallyBefore(x: readonly number[], y: readonly number[]): boolean {
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return x[i] < y[i];
  return false;
}

/** The tie rules: is a candidate (value v, steps w, answer) better than the best so far? */
function isBetter(
  v: number,
  w: number,
  answer: readonly number[],
  best: number,
  bestW: number,
  bestAnswer: readonly number[],
): boolean {
  if (v > best + EPS) return true;
  if (v < best - EPS) return false;
  if (w < bestW - EPS) return true;
  if (w > bestW + EPS) return false;
  return (
    answer.length < bestAnswer.length || (answer.length === bestAnswer.length && lexicallyBefore(answer, bestAnswer))
  );
}

/** The lake as the planner reads it: each (cell, action)'s outcomes in three slots (probability 0 = unused slot). */
interface Lake {
  cells: number;
  goal: number;
  holes: readonly boolean[];
  outNext: Int32Array;
  outProb: Float64Array;
}

function lakeOf(map: FrozenLakeMap, successRate: number): Lake {
  const cells = map.rows * map.cols;
  const outNext = new Int32Array(cells * 4 * 3);
  const outProb = new Float64Array(cells * 4 * 3);
  for (let cell = 0; cell < cells; cell++) {
    for (let a = 0; a < 4; a++) {
      // Slips that land on the same cell (the border stops them) share a slot.
      const merged = new Map<number, number>();
      for (const [direction, prob] of slipOutcomes(a, successRate)) {
        if (prob <= 0) continue;
        const next = moveOnLake(map, cell, direction);
        merged.set(next, (merged.get(next) ?? 0) + prob);
      }
      [...merged].forEach(([next, prob], i) => {
        outNext[(cell * 4 + a) * 3 + i] = next;
        outProb[(cell * 4 + a) * 3 + i] = prob;
      });
    }
  }
  return { cells, goal: map.goal, holes: map.holes, outNext, outProb };
}

/**
 * Buffers of the answer search, reused for every cell and layer of a planner. Per depth l (actions of the answer
 * so far) and action x: the distribution over ice cells after the extended prefix (dense, with the list of its
 * non-zero cells), its goal mass, sum of (step x goal mass), bound, and the order the four extensions are tried in.
 */
class SearchScratch {
  readonly dist: Float64Array[][];
  readonly nonZero: Int32Array[][];
  readonly count: Int32Array[];
  readonly goal: Float64Array[];
  readonly goalSteps: Float64Array[];
  readonly bound: Float64Array[];
  readonly order: Int8Array[];
  /** The root of a search: the start cell with probability 1. */
  readonly rootDist: Float64Array;
  readonly rootCell = new Int32Array(1);

  constructor(maxLength: number, cells: number) {
    const perDepth = <T>(make: () => T) => Array.from({ length: maxLength }, make);
    this.dist = perDepth(() => Array.from({ length: 4 }, () => new Float64Array(cells)));
    this.nonZero = perDepth(() => Array.from({ length: 4 }, () => new Int32Array(cells)));
    this.count = perDepth(() => new Int32Array(4));
    this.goal = perDepth(() => new Float64Array(4));
    this.goalSteps = perDepth(() => new Float64Array(4));
    this.bound = perDepth(() => new Float64Array(4));
    this.order = perDepth(() => new Int8Array(4));
    this.rootDist = new Float64Array(cells);
  }
}

/** What the next turn is worth after an answer of l actions: after[l] = layer (t − 1, a − l) (zero at t = 1). */
interface After {
  value: readonly Float64Array[];
  steps: readonly Float64Array[];
}

/**
 * The best answer (1 to maxLength actions) from `start`. An answer of l actions that reaches the goal with mass
 * g (g_i of it at step i) and leaves the player on c with probability P(c) is worth V = g + sum P(c) after.value[l][c]
 * and W = sum i g_i + sum P(c) (l after.value[l][c] + after.steps[l][c]). `bound[l][c]` bounds the V that any
 * completion of a prefix of l actions ending on c can still add.
 */
function searchAnswer(
  lake: Lake,
  s: SearchScratch,
  start: number,
  maxLength: number,
  after: After,
  bound: readonly Float64Array[],
): { value: number; steps: number; answer: number[] } {
  const { goal: goalCell, holes, outNext, outProb } = lake;
  let best = -1;
  let bestW = Infinity;
  let bestAnswer: number[] = [];
  const prefix: number[] = [];

  const search = (
    l: number,
    from: Float64Array,
    fromCells: Int32Array,
    fromCount: number,
    goal: number,
    goalSteps: number,
  ) => {
    const goals = s.goal[l];
    const stepsOfGoals = s.goalSteps[l];
    const bounds = s.bound[l];
    const order = s.order[l];
    for (let x = 0; x < 4; x++) {
      const to = s.dist[l][x];
      const toCells = s.nonZero[l][x];
      for (let i = 0; i < s.count[l][x]; i++) to[toCells[i]] = 0;
      let toCount = 0;
      let reached = 0;
      for (let i = 0; i < fromCount; i++) {
        const c = fromCells[i];
        const p = from[c];
        for (let slot = (c * 4 + x) * 3, end = slot + 3; slot < end; slot++) {
          const q = outProb[slot];
          if (q === 0) continue;
          const next = outNext[slot];
          if (next === goalCell) reached += p * q;
          else if (!holes[next]) {
            if (to[next] === 0) toCells[toCount++] = next;
            to[next] += p * q;
          }
        }
      }
      s.count[l][x] = toCount;
      goals[x] = goal + reached;
      stepsOfGoals[x] = goalSteps + (l + 1) * reached;
      let ub = goals[x];
      for (let i = 0; i < toCount; i++) ub += to[toCells[i]] * bound[l + 1][toCells[i]];
      bounds[x] = ub;
      // Insertion into the order, most promising first (ties keep action id order).
      let i = x;
      while (i > 0 && bounds[order[i - 1]] < ub) {
        order[i] = order[i - 1];
        i--;
      }
      order[i] = x;
    }
    for (let i = 0; i < 4; i++) {
      const x = order[i];
      if (bounds[x] < best - EPS) break; // neither this nor the rest can reach the best value
      // A subtree that can at best tie on V, and whose W cannot drop below the best's (every success still to come
      // needs at least l + 2 actions), wins only by being shorter than the best answer.
      const leastW = Math.max(0, stepsOfGoals[x] + (l + 2) * (best - goals[x]) - (l + 2) * EPS);
      const canOnlyTie = bounds[x] <= best + EPS && leastW >= bestW - EPS;
      if (canOnlyTie && bestAnswer.length < l + 1) continue;
      const to = s.dist[l][x];
      const toCells = s.nonZero[l][x];
      const toCount = s.count[l][x];
      let v = goals[x];
      let w = stepsOfGoals[x];
      const nextValue = after.value[l + 1];
      const nextSteps = after.steps[l + 1];
      for (let j = 0; j < toCount; j++) {
        const c = toCells[j];
        v += to[c] * nextValue[c];
        w += to[c] * ((l + 1) * nextValue[c] + nextSteps[c]);
      }
      prefix.push(x);
      if (isBetter(v, w, prefix, best, bestW, bestAnswer)) {
        best = v;
        bestW = w;
        bestAnswer = prefix.slice();
      }
      if (l + 1 < maxLength && toCount > 0 && !(canOnlyTie && bestAnswer.length <= l + 1)) {
        search(l + 1, to, toCells, toCount, goals[x], stepsOfGoals[x]);
      }
      prefix.pop();
    }
  };

  s.rootDist.fill(0);
  s.rootDist[start] = 1;
  s.rootCell[0] = start;
  search(0, s.rootDist, s.rootCell, 1, 0, 0);
  return { value: Math.max(0, best), steps: bestW, answer: bestAnswer };
}

/** The optimal policy of `map` with slip model `successRate` under `protocol` (see the top of this file). */
export function planFrozenLakeTurns(
  map: FrozenLakeMap,
  successRate: number,
  protocol: TurnProtocol,
): FrozenLakeTurnPlanner {
  checkProtocol(protocol);
  if (!(successRate >= 0 && successRate <= 1))
    throw new Error(`planFrozenLakeTurns: successRate must be in [0, 1], got ${successRate}`);
  const { maxTurn: T, maxActionsPerTurn: K, maxActionsPerTraj: A } = protocol;
  const lake = lakeOf(map, successRate);
  const { cells, outNext, outProb } = lake;
  const terminal = (cell: number) => map.holes[cell] || cell === map.goal;
  const scratch = new SearchScratch(Math.min(K, A), cells);

  const emptyLayer = (): Layer => {
    const value = new Float64Array(cells);
    value[map.goal] = 1;
    return { value, steps: new Float64Array(cells), answer: Array.from({ length: cells }, () => []) };
  };

  const layers = new Map<number, Layer>();
  const layer = (t: number, a: number): Layer => {
    // On the last turn only the answer itself counts, so every budget of at least k actions plays the same.
    const key = t * (A + 1) + (t === 1 ? Math.min(a, K) : a);
    const cached = layers.get(key);
    if (cached) return cached;
    const found = t === 0 || a === 0 ? emptyLayer() : t >= a ? oneMoveLayer(t, a) : searchedLayer(t, a);
    layers.set(key, found);
    return found;
  };

  /** t >= a: one action per answer, then look (closed-loop play, optimal with a turn to spare per action). */
  const oneMoveLayer = (t: number, a: number): Layer => {
    const next = layer(t - 1, a - 1);
    const out = emptyLayer();
    for (let cell = 0; cell < cells; cell++) {
      if (terminal(cell)) continue;
      let best = -1;
      let bestW = Infinity;
      let bestX = 0;
      for (let x = 0; x < 4; x++) {
        let v = 0;
        let w = 0;
        for (let slot = (cell * 4 + x) * 3, end = slot + 3; slot < end; slot++) {
          const q = outProb[slot];
          if (q === 0) continue;
          const to = outNext[slot];
          v += q * next.value[to];
          w += q * (to === map.goal ? 1 : next.value[to] + next.steps[to]);
        }
        if (v > best + EPS || (v >= best - EPS && w < bestW - EPS)) {
          best = v;
          bestW = w;
          bestX = x;
        }
      }
      out.value[cell] = best;
      out.steps[cell] = bestW;
      out.answer[cell] = [bestX];
    }
    return out;
  };

  /** a > t >= 1: search the answers of every cell. */
  const searchedLayer = (t: number, a: number): Layer => {
    const maxLength = Math.min(K, a);
    const zero = new Float64Array(cells);
    const after: After = { value: [zero], steps: [zero] };
    for (let l = 1; l <= maxLength; l++) {
      const next = t > 1 ? layer(t - 1, a - l) : null;
      (after.value as Float64Array[]).push(next ? next.value : zero);
      (after.steps as Float64Array[]).push(next ? next.steps : zero);
    }
    // bound[l][c]: the most an agent on c after l actions of the answer could still win if it could look after
    // every further action of the answer (and stop it anywhere from length max(l, 1) on): >= any blind completion.
    // On the last turn a tighter one is at hand: with r actions of this answer left, a player known to be on c
    // wins at most V(c, r, 1), a smaller layer of this same table (at l = 0 no bound is needed).
    const bound: Float64Array[] = Array.from({ length: maxLength + 1 }, () => new Float64Array(cells));
    if (t === 1) {
      for (let l = 1; l < maxLength; l++) bound[l] = layer(1, maxLength - l).value;
    } else {
      for (let l = maxLength; l >= 0; l--) {
        for (let c = 0; c < cells; c++) {
          if (terminal(c)) continue;
          let best = l >= 1 ? after.value[l][c] : 0;
          for (let x = 0; l < maxLength && x < 4; x++) {
            let v = 0;
            for (let slot = (c * 4 + x) * 3, end = slot + 3; slot < end; slot++) {
              const q = outProb[slot];
              if (q !== 0) v += q * (outNext[slot] === map.goal ? 1 : bound[l + 1][outNext[slot]]);
            }
            if (v > best) best = v;
          }
          bound[l][c] = best;
        }
      }
    }
    const out = emptyLayer();
    for (let start = 0; start < cells; start++) {
      if (terminal(start)) continue;
      const found = searchAnswer(lake, scratch, start, maxLength, after, bound);
      out.value[start] = found.value;
      out.steps[start] = found.steps;
      out.answer[start] = found.answer;
    }
    return out;
  };

  const checkQuery = (cell: number, actionsLeft: number, turnsLeft: number) => {
    if (!Number.isInteger(cell) || cell < 0 || cell >= cells) throw new Error(`turn planner: no cell ${cell}`);
    if (!Number.isInteger(actionsLeft) || actionsLeft < 0 || actionsLeft > A) {
      throw new Error(`turn planner: actionsLeft must be an integer in [0, ${A}], got ${actionsLeft}`);
    }
    if (!Number.isInteger(turnsLeft) || turnsLeft < 0 || turnsLeft > T) {
      throw new Error(`turn planner: turnsLeft must be an integer in [0, ${T}], got ${turnsLeft}`);
    }
  };
  return {
    protocol: Object.freeze({ ...protocol }),
    successProbability(cell, actionsLeft, turnsLeft) {
      checkQuery(cell, actionsLeft, turnsLeft);
      return layer(turnsLeft, actionsLeft).value[cell];
    },
    bestAnswer(cell, actionsLeft, turnsLeft) {
      checkQuery(cell, actionsLeft, turnsLeft);
      return layer(turnsLeft, actionsLeft).answer[cell].map((x) => FROZENLAKE_ACTIONS[x]);
    },
  };
}
