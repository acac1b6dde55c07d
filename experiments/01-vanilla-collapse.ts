// Finding 1 (paper Fig. 5 / 6, spec §7.1): vanilla StarPO, PPO and GRPO, on Bandit, FrozenLake and Sokoban improves
// and then collapses, and the in-group reward std and the entropy fall before success does.
// One command: npx tsx experiments/01-vanilla-collapse.ts   (6 runs, ~50 core-minutes: ~25 min on 2 cores)
import { ENVS, vanilla } from './lib/configs';
import { isMain, runExperiment, type ExperimentDef } from './lib/experiment';

export const def: ExperimentDef = {
  name: '01-vanilla-collapse',
  title: 'Vanilla StarPO (PPO and GRPO) on Bandit, FrozenLake and Sokoban: improvement, then collapse?',
  paper:
    'Fig. 5: all vanilla runs improve then collapse; GRPO at ~step 20 (Bandit) and ~10 (Sokoban), PPO stable until ~100 (Bandit) and ~50 (Sokoban); on FrozenLake GRPO is more stable than PPO. Fig. 6: FrozenLake-PPO reward std drops at step 40, reward at 90; Bandit-PPO std bottoms ~70 before reward peaks ~120; gradient-norm spikes at ~170 / 110 / 90 (spec §7.1).',
  departures:
    "Tiny warm-started models, 8x4 rollouts, 40 / 30 / 10 steps (Bandit / FrozenLake / Sokoban) instead of 200: a 2-core CPU budget. The paper's collapse happens after 10 to 100+ steps, so only the earliest (GRPO) collapses are within reach here.",
  runs: ENVS.flatMap((env) => [vanilla(env, 'ppo'), vanilla(env, 'grpo')]),
  charts: [
    {
      id: 'train-success',
      title: 'Training-batch success',
      yLabel: 'success',
      metric: 'train/{tag}/success',
      smooth: 5,
      yMin: 0,
      yMax: 1,
    },
    {
      id: 'val-success',
      title: 'Validation success (held-out seeds, T=0.5)',
      yLabel: 'success',
      metric: 'val-env/{tag}/success',
      yMin: 0,
      yMax: 1,
      markers: true,
    },
    {
      id: 'reward-std',
      title: 'In-group reward std (echo-trap sign 1)',
      yLabel: 'reward std',
      metric: 'rollout/in_group_std',
      smooth: 5,
    },
    { id: 'entropy', title: 'Policy entropy (echo-trap sign 2)', yLabel: 'entropy', metric: 'actor/entropy_loss' },
    { id: 'grad-norm', title: 'Actor gradient norm', yLabel: 'grad norm', metric: 'actor/grad_norm' },
  ],
};

if (isMain(import.meta.url)) await runExperiment(def);
