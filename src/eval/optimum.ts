// The ceiling of a suite: the expected success of the best possible agent on the suite's seeds under the run's
// protocol (at most maxTurn answers of at most maxActionsPerTurn actions each, executed without a look in between,
// and the episode's action budget). Shown in the scorecard next to the agent, so "18 %" reads against what was
// reachable, not against 100 %.
//   Sokoban     1 for a level the BFS solver solves within min(budget, turns x actions per turn, the env's maxSteps)
//               moves, else 0 (moves are deterministic: a plan can be cut into answers with no loss);
//   FrozenLake  the exact optimum of envs/frozenlakeTurns.ts from the start cell (slips averaged over exactly);
//   Bandit      1 (the high-risk arm is always there to choose).
import {
  FrozenLakeEnv,
  SokobanEnv,
  makeEnv,
  planFrozenLakeTurns,
  solveSokoban,
  type FrozenLakeMap,
  type FrozenLakeTurnPlanner,
  type TurnProtocol,
} from '../../envs/index';
import type { EvalSuite } from './suites';

/**
 * The turn planner of a lake under a protocol. Planners are kept per map (a generated map is a new object at every
 * reset; a fixed map is the same object) and slip rate and protocol, because one plans every turn of an episode.
 */
const turnPlanners = new WeakMap<FrozenLakeMap, Map<string, FrozenLakeTurnPlanner>>();
export function frozenLakeTurnPlanner(
  map: FrozenLakeMap,
  successRate: number,
  protocol: TurnProtocol,
): FrozenLakeTurnPlanner {
  let byProtocol = turnPlanners.get(map);
  if (!byProtocol) turnPlanners.set(map, (byProtocol = new Map()));
  const key = `${successRate}/${protocol.maxTurn}/${protocol.maxActionsPerTurn}/${protocol.maxActionsPerTraj}`;
  let planner = byProtocol.get(key);
  if (!planner) byProtocol.set(key, (planner = planFrozenLakeTurns(map, successRate, protocol)));
  return planner;
}

/** The parts of the agent's protocol that bound what any agent can do. */
export interface ProtocolLimits {
  maxTurn: number;
  maxActionsPerTurn: number;
}

/** The best possible agent's success probability on the initial state of `seed`. */
export function optimalSuccessOnSeed(
  suite: Pick<EvalSuite, 'tag' | 'config' | 'maxActionsPerTraj'>,
  seed: number,
  limits: ProtocolLimits,
): number {
  const env = makeEnv(suite.tag, suite.config);
  const budget = suite.maxActionsPerTraj ?? env.spec.maxActionsPerTraj;
  env.reset(seed);
  if (env instanceof SokobanEnv) {
    const moves = Math.min(budget, limits.maxTurn * limits.maxActionsPerTurn, env.config.maxSteps);
    return solveSokoban(env.state, moves) === null ? 0 : 1;
  }
  if (env instanceof FrozenLakeEnv) {
    const planner = frozenLakeTurnPlanner(env.map, env.config.successRate, {
      maxTurn: limits.maxTurn,
      maxActionsPerTurn: limits.maxActionsPerTurn,
      maxActionsPerTraj: budget,
    });
    return planner.successProbability(env.map.start, budget, limits.maxTurn);
  }
  return 1; // Bandit: one pull of the high arm
}

/** The expected success of the best possible agent on seeds baseSeed .. baseSeed + episodes - 1: mean and per seed. */
export function optimalSuccess(
  suite: Pick<EvalSuite, 'tag' | 'config' | 'maxActionsPerTraj'>,
  seeds: { baseSeed: number; episodes: number },
  limits: ProtocolLimits,
): { mean: number; perSeed: number[] } {
  const perSeed: number[] = [];
  for (let i = 0; i < seeds.episodes; i++) perSeed.push(optimalSuccessOnSeed(suite, seeds.baseSeed + i, limits));
  return { mean: perSeed.reduce((a, b) => a + b, 0) / Math.max(1, perSeed.length), perSeed };
}
