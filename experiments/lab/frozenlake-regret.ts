// Where a FrozenLake policy loses success against the protocol optimum (issue 15). Reads the episodes of
// `ragen eval --trajectories FILE` and, for every turn played, compares the answer with the best one under the
// preset's protocol (envs/frozenlakeTurns.ts), slips averaged over exactly:
//   regret of a turn = V*(cell, actions left, turns left) - Q(answer), where Q = P(goal during the answer) +
//                      sum over the cells c it may end on of P(c) V*(c, actions left - |answer|, turns left - 1);
//   length part      = V* - the best answer with as many actions as the agent's (sending too few or too many);
//   direction part   = that best answer's value - Q (the right number of actions, the wrong ones).
// Summed over an episode's turns, the regrets add up to V*(start) - P(success) in expectation, so the table says how
// many points of the gap to the optimum each turn and each kind of mistake costs.
//   npx tsx experiments/lab/frozenlake-regret.ts --episodes FILE.jsonl [--suite FrozenLake] [--preset frozenlake-tiny]
import * as fs from 'node:fs';
import { Command } from 'commander';
import {
  FROZENLAKE_ACTIONS,
  FrozenLakeEnv,
  makeEnv,
  moveOnLake,
  slipOutcomes,
  type FrozenLakeTurnPlanner,
} from '../../envs/index';
import type { EpisodeRecord } from '../../src/eval/episodes';
import { frozenLakeTurnPlanner } from '../../src/eval/optimum';
import { envBlocks } from '../../src/starpo/config';
import { presetConfig } from '../../src/starpo/presets';

const o = new Command()
  .requiredOption('--episodes <file>', 'episodes written by ragen eval --trajectories')
  .option('--suite <name>', 'the suite whose episodes are read', 'FrozenLake')
  .option('--preset <name>', 'the preset whose turn and action limits the episodes were played with', 'frozenlake-tiny')
  .parse()
  .opts<{ episodes: string; suite: string; preset: string }>();

const config = presetConfig(o.preset);
const episodes = fs
  .readFileSync(o.episodes, 'utf8')
  .trimEnd()
  .split('\n')
  .map((l) => JSON.parse(l) as EpisodeRecord)
  .filter((e) => e.suite === o.suite);
if (episodes.length === 0) throw new Error(`${o.episodes} holds no episode of suite ${o.suite}`);

interface Lake {
  env: FrozenLakeEnv;
  planner: FrozenLakeTurnPlanner;
  /** The episode's action budget. */
  budget: number;
}
function lakeOf(e: EpisodeRecord): Lake {
  const env = makeEnv(e.tag, e.config ?? undefined);
  if (!(env instanceof FrozenLakeEnv)) throw new Error(`suite ${o.suite} plays ${e.tag}, not FrozenLake`);
  env.reset(e.seed);
  const budget = envBlocks(config, 'val')[0].maxActionsPerTraj ?? env.spec.maxActionsPerTraj;
  const protocol = {
    maxTurn: config.agent.maxTurn,
    maxActionsPerTurn: config.agent.maxActionsPerTurn,
    maxActionsPerTraj: budget,
  };
  return { env, planner: frozenLakeTurnPlanner(env.map, env.config.successRate, protocol), budget };
}

/** Q of an answer (action ids) from `cell` with `actionsLeft` / `turnsLeft` before it, optimal play after it. */
function answerValue(
  { env, planner }: Lake,
  cell: number,
  answer: readonly number[],
  actionsLeft: number,
  turnsLeft: number,
): number {
  const { map } = env;
  let on = new Map([[cell, 1]]);
  let goal = 0;
  for (const action of answer) {
    const next = new Map<number, number>();
    for (const [from, p] of on) {
      for (const [direction, q] of slipOutcomes(action, env.config.successRate)) {
        const to = moveOnLake(map, from, direction);
        if (to === map.goal) goal += p * q;
        else if (!map.holes[to]) next.set(to, (next.get(to) ?? 0) + p * q);
      }
    }
    on = next;
  }
  for (const [c, p] of on) goal += p * planner.successProbability(c, actionsLeft - answer.length, turnsLeft - 1);
  return goal;
}

/** The best value over all answers of exactly `length` actions. */
function bestOfLength(lake: Lake, cell: number, length: number, actionsLeft: number, turnsLeft: number): number {
  let best = 0;
  const search = (prefix: number[]): void => {
    if (prefix.length === length) best = Math.max(best, answerValue(lake, cell, prefix, actionsLeft, turnsLeft));
    else for (let a = 0; a < FROZENLAKE_ACTIONS.length; a++) search([...prefix, a]);
  };
  search([]);
  return best;
}

const rows = new Map<string, { turns: number; regret: number; length: number; direction: number }>();
const add = (key: string, regret: number, length: number, direction: number): void => {
  const row = rows.get(key) ?? { turns: 0, regret: 0, length: 0, direction: 0 };
  rows.set(key, {
    turns: row.turns + 1,
    regret: row.regret + regret,
    length: row.length + length,
    direction: row.direction + direction,
  });
};
let optimum = 0;
let successes = 0;
for (const e of episodes) {
  const lake = lakeOf(e);
  optimum += lake.planner.successProbability(lake.env.map.start, lake.budget, config.agent.maxTurn);
  if (e.success) successes++;
  let used = 0;
  e.turns.forEach((turn, i) => {
    const cell = lake.env.position;
    const actionsLeft = lake.budget - used;
    const turnsLeft = config.agent.maxTurn - i;
    const answer = turn.actions.map((name) => FROZENLAKE_ACTIONS.indexOf(name as (typeof FROZENLAKE_ACTIONS)[number]));
    const best = lake.planner.successProbability(cell, actionsLeft, turnsLeft);
    const q = answerValue(lake, cell, answer, actionsLeft, turnsLeft);
    const sameLength = answer.length === 0 ? q : bestOfLength(lake, cell, answer.length, actionsLeft, turnsLeft);
    add(`turn ${turn.turn}`, best - q, best - sameLength, sameLength - q);
    add('all turns', best - q, best - sameLength, sameLength - q);
    // Replay the executed actions (the slips of the episode's seed) to know the cell of the next turn.
    for (const name of turn.actions) lake.env.step(name);
    used += turn.actions.length;
  });
}

const n = episodes.length;
const pts = (x: number): string => (100 * x).toFixed(1).padStart(6);
console.log(
  `${o.suite}: ${n} episodes, success ${pts(successes / n)} %, protocol optimum from the start ${pts(optimum / n)} %`,
);
console.log('points of success lost per episode (summed over its turns), and per turn played:');
console.log('              turns  regret  length  direction   regret per turn played');
for (const [key, r] of rows) {
  console.log(
    `${key.padEnd(12)} ${String(r.turns).padStart(6)}  ${pts(r.regret / n)}  ${pts(r.length / n)}  ${pts(r.direction / n)}     ${pts(r.regret / r.turns)}`,
  );
}
