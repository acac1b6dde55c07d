// Finding 5 (paper Table 3, spec §7.1): the number of actions the agent may send per turn. 1 to 7 on Sokoban;
// the paper found 5-6 best and 7 worse. The episode budget follows the per-turn one, as in RAGEN's script
// (max_actions_per_traj = turns x max_actions_per_turn).
// One command: npx tsx experiments/05-actions-per-turn.ts   (7 runs, ~21 core-minutes)
import { STEPS } from './lib/configs';
import { isMain, runExperiment, type ExperimentDef } from './lib/experiment';

const TURNS = 3; // fixed here (RAGEN 5); sokoban-tiny itself plays up to 10 turns of one move
const K = [1, 2, 3, 4, 5, 6, 7];

export const def: ExperimentDef = {
  name: '05-actions-per-turn',
  title: 'Sokoban (StarPO-S) with 1 to 7 actions per turn',
  paper:
    'Table 3 (success %, Sokoban / SokobanNewVocab / LargeSokoban / FrozenLake): 1: 12.11 / 13.67 / 1.17 / 11.72; 2: 16.41 / 21.09 / 3.52 / 18.36; 3: 19.53 / 19.53 / 1.95 / 20.88; 4: 26.95 / 26.95 / 5.08 / 20.70; 5: 28.13 / 25.78 / 6.25 / 21.09; 6: 33.59 / 31.64 / 6.64 / 18.36; 7: 22.27 / 28.52 / 3.91 / 19.53; script: max_actions_per_traj = 5 x max_actions_per_turn (spec §7.1).',
  departures: `sokoban-tiny with 3 turns, so max_actions_per_traj = 3 x k; ${STEPS.sokoban} steps instead of 200; success on the 32 held-out SimpleSokoban validation seeds only. The warm start answers one move per turn (since 2026-11-25; 2-5 before), so with few steps k mostly bounds what RL could learn to send.`,
  runs: K.map((k) => ({
    name: `sokoban-starpo-s-apt${k}`,
    label: `${k} action${k > 1 ? 's' : ''} / turn`,
    preset: 'sokoban-tiny',
    set: [`agent.maxTurn=${TURNS}`, `agent.maxActionsPerTurn=${k}`, `agent.maxActionsPerTraj=${TURNS * k}`],
    steps: STEPS.sokoban,
  })),
  charts: [
    {
      id: 'val-success',
      title: 'SimpleSokoban validation success by actions per turn',
      yLabel: 'success',
      metric: 'val-env/{tag}/success',
      yMin: 0,
    },
    {
      id: 'train-success',
      title: 'SimpleSokoban training-batch success by actions per turn',
      yLabel: 'success',
      metric: 'train/{tag}/success',
      smooth: 5,
      yMin: 0,
    },
  ],
};

if (isMain(import.meta.url)) await runExperiment(def);
