// Finding 4 (paper Fig. 9, spec §7.1): StarPO-S beats vanilla StarPO (PPO) on all three tasks. Same seeds, same
// steps; then `ragen eval` of the warm start and of each arm's final checkpoint on the held-out seeds, with 95 %
// Wilson intervals. One command: npx tsx experiments/04-starpo-vs-starpo-s.ts   (6 runs + 9 evals, ~47 core-minutes;
// the StarPO arms are 01's PPO runs, reused when 01 ran first)
import * as path from 'node:path';
import { ENVS, ENV_LABEL, PRESET, starpoS, vanilla } from './lib/configs';
import { REPO, isMain, runExperiment, type ExperimentDef } from './lib/experiment';

export const def: ExperimentDef = {
  name: '04-starpo-vs-starpo-s',
  title: 'StarPO vs StarPO-S on Bandit, FrozenLake and Sokoban, and held-out success against the warm start',
  paper:
    'Fig. 9: StarPO-S beats vanilla StarPO (PPO) on all three tasks (Bandit ~1.0, Sokoban ~0.2-0.3, FrozenLake ~0.2) (spec §7.1).',
  departures:
    'Tiny warm-started models; 40 / 30 / 10 steps (Bandit / FrozenLake / Sokoban) instead of 200; held-out evaluation on 32 seeds per suite (RAGEN 256) at T=0.5.',
  runs: ENVS.flatMap((env) => [vanilla(env, 'ppo'), starpoS(env)]),
  evalMinutes: 6, // 9 `ragen eval` scorecards, 32 seeds per suite: ~10 s (Bandit) to ~90 s (Sokoban) each
  charts: [
    {
      id: 'train-success',
      title: 'Training-batch success: StarPO (PPO) vs StarPO-S',
      yLabel: 'success',
      metric: 'train/{tag}/success',
      smooth: 5,
      yMin: 0,
      yMax: 1,
    },
    {
      id: 'val-success',
      title: 'Validation success: StarPO (PPO) vs StarPO-S',
      yLabel: 'success',
      metric: 'val-env/{tag}/success',
      yMin: 0,
      yMax: 1,
    },
  ],
  async after(ctx) {
    const heldOut: Record<string, unknown>[] = [];
    for (const env of ENVS) {
      const tag = ENV_LABEL[env] === 'Sokoban' ? 'SimpleSokoban' : ENV_LABEL[env];
      const entries: [string, string][] = [
        ['warm start', path.join(REPO, 'public/warmstart', PRESET[env])],
        ['StarPO', ctx.outcomes.find((o) => o.spec.name === vanilla(env, 'ppo').name)!.dir],
        ['StarPO-S', ctx.outcomes.find((o) => o.spec.name === starpoS(env).name)!.dir],
      ];
      for (const [policy, dir] of entries) {
        const label = policy === 'warm start' ? `${PRESET[env]}-warmstart` : path.basename(dir);
        const suite = (await ctx.evaluate(dir, label)).find((s) => s.suite === tag);
        heldOut.push({ env: ENV_LABEL[env], policy, suite: tag, episodes: suite?.episodes, success: suite?.success });
      }
    }
    return { heldOut };
  },
};

if (isMain(import.meta.url)) await runExperiment(def);
