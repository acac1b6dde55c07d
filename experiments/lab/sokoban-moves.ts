// Per-move quality of Sokoban episodes written by `ragen eval --trajectories FILE`: how many moves lie on a shortest
// solution (the BFS solver's plan length drops by one), how many failed episodes pushed the box where no solution
// is left (a deadlock), and at which turn a failed episode's first wasted move came. Issue 15's lab: it tells a
// policy that plans badly everywhere from one that loses a few levels to one bad push.
//   npx tsx experiments/lab/sokoban-moves.ts FILE.jsonl
import * as fs from 'node:fs';
import { makeEnv, solveSokoban, SokobanEnv } from '../../envs/index';

const file = process.argv[2];
if (!file)
  throw new Error('usage: npx tsx experiments/lab/sokoban-moves.ts FILE.jsonl (from ragen eval --trajectories)');
const planLength = (env: SokobanEnv) => solveSokoban(env.state, 100)?.length ?? Infinity;
let moves = 0,
  onShortestPath = 0,
  episodes = 0,
  failed = 0,
  deadlocked = 0;
const firstWastedTurn: Record<string, number> = {};
for (const line of fs.readFileSync(file, 'utf8').trim().split('\n')) {
  const episode = JSON.parse(line);
  if (!String(episode.tag).includes('Sokoban')) continue;
  episodes++;
  const env = makeEnv(episode.tag, episode.config) as SokobanEnv;
  env.reset(episode.seed);
  let firstWasted = -1;
  let deadlock = false;
  for (const turn of episode.turns) {
    for (const action of turn.actions) {
      const before = planLength(env);
      env.step(action);
      const after = planLength(env);
      moves++;
      if (after === before - 1) onShortestPath++;
      else if (firstWasted < 0) firstWasted = turn.turn;
      if (after === Infinity && before !== Infinity) deadlock = true;
    }
  }
  if (!episode.success) {
    failed++;
    if (deadlock) deadlocked++;
    firstWastedTurn[firstWasted] = (firstWastedTurn[firstWasted] ?? 0) + 1;
  }
}
const pct = (x: number) => `${(100 * x).toFixed(1)} %`;
console.log(`${episodes} episodes, ${moves} moves: ${pct(onShortestPath / moves)} on a shortest solution`);
console.log(`${failed} failed, ${deadlocked} of them after a push into a deadlock`);
console.log(`turn of a failed episode's first wasted move: ${JSON.stringify(firstWastedTurn)}`);
