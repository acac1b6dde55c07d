// Every experiment in one go: trains the union of their runs once (a run shared by several experiments is trained
// once), then writes each experiment's JSON and plots from the run directories.
//   npx tsx experiments/all.ts [--jobs N] [--backend B] [--minutes M] [--only 01,02,...] [--no-plots] [--smoke]
// Roughly 3.5 hours on a 2-core CPU (the echo-trap arms alone ~65 min); each experiment 01-06 alone fits in about
// 30 minutes (see its header).
import { Command } from 'commander';
import * as path from 'node:path';
import { REPO, runExperiment, withCommonOptions, type ExperimentDef } from './lib/experiment';
import { trainAll, type RunSpec } from './lib/runs';

const NAMES = [
  '00-echo-trap',
  '01-vanilla-collapse',
  '02-filter-ratio',
  '03-kl-clip',
  '04-starpo-vs-starpo-s',
  '05-actions-per-turn',
  '06-generalisation',
  '07-echo-trap-lesson',
];

const program = withCommonOptions(new Command())
  .option('--only <list>', 'comma-separated experiment numbers or names (default: all)')
  .option(
    '--match <regex>',
    'train only the runs whose name matches (e.g. ^sokoban- to split the work between machines)',
  )
  .option('--train-only', "train, then stop without writing the experiments' JSON and plots");
program.parse();
const f = program.opts<{
  jobs: string;
  backend: string;
  minutes?: string;
  only?: string;
  episodes: string;
  plots: boolean;
  smoke?: boolean;
  match?: string;
  trainOnly?: boolean;
}>();
const wanted = f.only
  ? f.only.split(',').map((s) => NAMES.find((n) => n === s || n.startsWith(`${s}-`) || n.startsWith(`0${s}-`)))
  : NAMES;
if (wanted.some((n) => !n)) {
  console.error(`--only: expected some of ${NAMES.join(', ')}`);
  process.exit(2);
}
const defs = await Promise.all(wanted.map(async (n) => ((await import(`./${n}.ts`)) as { def: ExperimentDef }).def));

// Runs are shared by name within a runs root (the echo-trap arms live in their own root, runs/echo-trap).
const byRoot = new Map<string, Map<string, RunSpec>>();
const match = f.match ? new RegExp(f.match) : null;
for (const d of defs) {
  const root = path.join(REPO, `${d.root ?? 'runs/experiments'}${f.smoke ? '-smoke' : ''}`);
  const unique = byRoot.get(root) ?? new Map<string, RunSpec>();
  byRoot.set(root, unique);
  for (const r of d.runs)
    if (!unique.has(r.name) && (!match || match.test(r.name)))
      unique.set(r.name, { ...r, steps: f.smoke ? 2 : r.steps });
}
for (const [root, unique] of byRoot) {
  console.log(`${path.relative(REPO, root)}: ${unique.size} distinct runs, ${f.jobs} at a time`);
  await trainAll([...unique.values()], {
    root,
    jobs: Number(f.jobs),
    backend: f.backend,
    minutes: f.minutes ? Number(f.minutes) : null,
    extraSet: f.smoke ? ['trainer.testFreq=2'] : [],
    log: (l) => console.log(`[train] ${l}`),
  });
}
if (f.trainOnly) process.exit(0);
const common = [
  '--no-train',
  '--backend',
  f.backend,
  '--episodes',
  f.episodes,
  ...(f.plots ? [] : ['--no-plots']),
  ...(f.smoke ? ['--smoke'] : []),
];
for (const d of defs) await runExperiment(d, [process.argv[0], d.name, ...common]);
