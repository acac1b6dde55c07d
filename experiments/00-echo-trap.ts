// The first echo-trap record (issue #4): vanilla StarPO and StarPO-S on FrozenLake (frozenlake-tiny, lr 1e-4), same
// seeds, 150 steps each, as the `echo-trap` preset was until issue 16 moved the lesson to Bandit (docs/lab/echo-trap-probes.md,
// 'Settings that did not show the lesson'). Trains both arms into runs/echo-trap unless they are there already, then
// draws the collapse indicators side by side.
// One command: npx tsx experiments/00-echo-trap.ts   (~75 min for StarPO and ~25 min for StarPO-S, in parallel, on 2 cores)
import { VANILLA } from './lib/configs';
import { isMain, runExperiment, type ExperimentDef } from './lib/experiment';

export const def: ExperimentDef = {
  name: '00-echo-trap',
  title: 'The echo-trap preset: vanilla StarPO vs StarPO-S on FrozenLake, 150 steps',
  paper:
    'Fig. 6: FrozenLake-PPO (vanilla) reward std drops at step ~40, reward mean collapses at ~90, gradient-norm spike at ~90; StarPO-S delays or avoids the collapse (Fig. 9); reasoning length declines over training (Fig. 11) (spec §7.1).',
  departures:
    'frozenlake-tiny: a ~100k-parameter warm-started model, 8 env groups x 4 rollouts, lr 1e-4, 32 validation maps; 150 steps instead of 200.',
  root: 'runs/echo-trap',
  runs: [
    {
      name: 'starpo',
      label: 'StarPO (vanilla PPO)',
      preset: 'frozenlake-tiny',
      set: [...VANILLA, 'trainer.saveFreq=0'],
      steps: 150,
    },
    { name: 'starpo-s', label: 'StarPO-S', preset: 'frozenlake-tiny', set: ['trainer.saveFreq=0'], steps: 150 },
  ],
  charts: [
    {
      id: 'val-success',
      title: 'Validation success (32 held-out maps, T=0.5)',
      yLabel: 'success',
      metric: 'val-env/{tag}/success',
      yMin: 0,
      yMax: 1,
      markers: true,
    },
    {
      id: 'train-success',
      title: 'Training-batch success',
      yLabel: 'success',
      metric: 'train/{tag}/success',
      smooth: 10,
      yMin: 0,
      yMax: 1,
    },
    {
      id: 'reward-std',
      title: 'In-group reward std (all groups, before the filter)',
      yLabel: 'reward std',
      metric: 'rollout/in_group_std',
      smooth: 10,
      yMin: 0,
    },
    { id: 'entropy', title: 'Policy entropy', yLabel: 'entropy', metric: 'actor/entropy_loss', smooth: 10 },
    {
      id: 'grad-norm',
      title: 'Actor gradient norm',
      yLabel: 'grad norm',
      metric: 'actor/grad_norm',
      smooth: 10,
      yMin: 0,
    },
    {
      id: 'reasoning-length',
      title: 'Reasoning length (tokens inside <think>)',
      yLabel: 'tokens',
      metric: 'reasoning_length/mean',
      smooth: 10,
    },
    {
      id: 'diversity',
      title: 'Reasoning diversity (pairwise, within a batch)',
      yLabel: 'pairwise diversity',
      metric: 'reasoning/pairwise_diversity',
      smooth: 10,
    },
  ],
};

if (isMain(import.meta.url)) await runExperiment(def);
