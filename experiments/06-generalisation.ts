// Finding 6 (paper README, Table 4; spec §7.1-7.2): trained on SimpleSokoban, the agent transfers to LargerSokoban,
// SokobanDifferentGridVocab and FrozenLake; trained on one Bandit arm pair, to BanditTest and to swapped names.
// `ragen eval`'s default suites are exactly these out-of-distribution sets; warm start vs StarPO-S final checkpoint.
// One command: npx tsx experiments/06-generalisation.ts   (2 runs + 4 evals, ~11 core-minutes; the runs are 04's)
import * as path from 'node:path';
import { PRESET, starpoS, type Env } from './lib/configs';
import { REPO, isMain, runExperiment, type ExperimentDef } from './lib/experiment';

const ENVS: Env[] = ['sokoban', 'bandit'];

export const def: ExperimentDef = {
  name: '06-generalisation',
  title:
    'Generalisation: SimpleSokoban -> LargerSokoban, new grid vocabulary, FrozenLake; Bandit -> BanditTest, swapped names',
  paper:
    'Table 4 (StarPO-S, %): trained on Bandit -> Bandit 100.00, BanditRev 67.58; trained on Sokoban -> FrozenLake 19.92, LargeSokoban 2.34, Sokoban 21.48, SokobanNewVocab 18.75. README: training on SimpleSokoban generalises to LargerSokoban, another grid vocabulary and FrozenLake (spec §7.1, §7.2).',
  departures:
    "Tiny warm-started models trained 10 (Sokoban) / 40 (Bandit) steps; 32 seeds per suite. Our BanditTest names (Trader / Librarian) never appear in the tiny warm start's demonstrations.",
  runs: ENVS.map(starpoS),
  evalMinutes: 4, // 4 `ragen eval` scorecards (shared with 04's cache when it ran first)
  charts: [
    {
      id: 'val-success',
      title: 'Validation success during training',
      yLabel: 'success',
      metric: 'val-env/{tag}/success',
      yMin: 0,
      yMax: 1,
    },
  ],
  async after(ctx) {
    const rows: Record<string, unknown>[] = [];
    for (const env of ENVS) {
      const warm = await ctx.evaluate(path.join(REPO, 'public/warmstart', PRESET[env]), `${PRESET[env]}-warmstart`);
      const run = ctx.outcomes.find((o) => o.spec.name === starpoS(env).name)!;
      const trained = await ctx.evaluate(run.dir, path.basename(run.dir));
      for (const s of trained) {
        const w = warm.find((x) => x.suite === s.suite);
        rows.push({
          trainedOn: PRESET[env],
          suite: s.suite,
          kind: s.kind,
          episodes: s.episodes,
          warmStart: w?.success,
          starpoS: s.success,
        });
      }
    }
    return { suites: rows };
  },
};

if (isMain(import.meta.url)) await runExperiment(def);
