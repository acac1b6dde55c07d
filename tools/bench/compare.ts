// Whole training steps of an older commit against the working tree, measured back to back in one sitting, so a
// speed-up is a ratio taken on the same machine under the same load, never against a figure from another day.
//
//   npx tsx tools/bench/compare.ts --old d74b472 [--rounds 3] [--repeats 2] [--configs bandit-tiny,...] [--json F]
//
// The old commit is checked out in a temporary git worktree that borrows this tree's node_modules (the old code
// needs a subset of today's packages). Each round runs every config once on each side, alternating old and new,
// each as its own `ragen bench --only step` process; the figure is the median over the rounds of seconds per step.
// Configs: the one-arm tiny presets, and `echo-trap-starpo`, the echo-trap preset's vanilla StarPO arm as it was at
// d74b472 (frozenlake-tiny plus the vanilla StarPO settings), spelled as --step-set overrides on both sides.
// The working tree runs with its default --workers (auto: two cores when there are two); the old commit had one.
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Command } from 'commander';

const REPO = path.resolve(import.meta.dirname, '../..');

/** Each config as `ragen bench` arguments (the same on both sides). */
const CONFIGS: Record<string, string[]> = {
  'bandit-tiny': ['--presets', 'bandit-tiny'],
  'frozenlake-tiny': ['--presets', 'frozenlake-tiny'],
  'sokoban-tiny': ['--presets', 'sokoban-tiny'],
  'echo-trap-starpo': [
    '--presets',
    'frozenlake-tiny',
    ...[
      'filter.ratio=1',
      'algorithm.useKlInReward=true',
      'algorithm.klCoef=0.001',
      'algorithm.klEstimator=kl',
      'actor.clipRatioHigh=0.2',
      'trainer.seed=0',
    ].flatMap((s) => ['--step-set', s]),
  ],
};

const program = new Command()
  .requiredOption('--old <commit>', 'the older commit to compare against')
  .option('--rounds <n>', 'rounds of old + new per config', '3')
  .option('--repeats <n>', 'timed steps per bench process (after one warm-up step)', '2')
  .option('--configs <names>', `comma-separated: ${Object.keys(CONFIGS).join(', ')}`, Object.keys(CONFIGS).join(','))
  .option('--new-args <args>', 'extra arguments for the working tree\'s bench (e.g. "--workers 1")', '')
  .option('--json <file>', 'write the figures and the command as JSON')
  .parse();
const o = program.opts<{
  old: string;
  rounds: string;
  repeats: string;
  configs: string;
  newArgs: string;
  json?: string;
}>();
const configs = o.configs.split(',');
for (const c of configs)
  if (!CONFIGS[c]) throw new Error(`unknown config '${c}' (expected: ${Object.keys(CONFIGS).join(', ')})`);

const oldDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ragen-old-'));
execFileSync('git', ['-C', REPO, 'worktree', 'add', '--detach', '--quiet', oldDir, o.old], { stdio: 'inherit' });
fs.symlinkSync(path.join(REPO, 'node_modules'), path.join(oldDir, 'node_modules'));
const oldCommit = execFileSync('git', ['-C', oldDir, 'rev-parse', '--short', 'HEAD']).toString().trim();
const newCommit =
  execFileSync('git', ['-C', REPO, 'rev-parse', '--short', 'HEAD']).toString().trim() +
  (execFileSync('git', ['-C', REPO, 'status', '--porcelain']).toString().trim() ? '+changes' : '');

/** Seconds per step of one config on one side: one `ragen bench --only step` process. */
function secondsPerStep(dir: string, config: string, extra: string[]): number {
  const json = path.join(os.tmpdir(), `ragen-compare-${process.pid}.json`);
  execFileSync(
    process.execPath,
    [
      path.join(dir, 'bin/ragen.js'),
      'bench',
      '--only',
      'step',
      '--step-repeats',
      o.repeats,
      '--json',
      json,
      ...CONFIGS[config],
      ...extra,
    ],
    { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] },
  );
  // Read, then removed: `ragen bench` refuses to overwrite a --json file, and the next process reuses the name.
  const report = JSON.parse(fs.readFileSync(json, 'utf8')) as { results: { step: Record<string, number> } };
  fs.rmSync(json);
  const key = Object.keys(report.results.step).find((k) => k.endsWith(' step s'));
  if (!key) throw new Error(`no step figure in ${json}`);
  return report.results.step[key];
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const figures: Record<string, { old: number[]; new: number[] }> = {};
try {
  for (let round = 1; round <= Number(o.rounds); round++) {
    for (const config of configs) {
      const f = (figures[config] ??= { old: [], new: [] });
      f.old.push(secondsPerStep(oldDir, config, []));
      f.new.push(secondsPerStep(REPO, config, o.newArgs.split(' ').filter(Boolean)));
      console.log(
        `round ${round} ${config}: old ${f.old.at(-1)!.toFixed(2)} s/step, new ${f.new.at(-1)!.toFixed(2)} s/step`,
      );
    }
  }
} finally {
  execFileSync('git', ['-C', REPO, 'worktree', 'remove', '--force', oldDir]);
}

const command = `npx tsx tools/bench/compare.ts ${process.argv.slice(2).join(' ')}`;
console.log(
  `\n${command}\nold ${oldCommit}, new ${newCommit}; median of ${o.rounds} rounds, ${o.repeats} timed steps each; ${os.cpus().length} cores, ${os.cpus()[0]?.model ?? ''}`,
);
console.log('| config | old s/step | new s/step | speed-up |\n|---|---:|---:|---:|');
const rows: Record<string, { old: number; new: number; speedup: number }> = {};
for (const config of configs) {
  const f = figures[config];
  const r = { old: median(f.old), new: median(f.new), speedup: median(f.old) / median(f.new) };
  rows[config] = r;
  console.log(`| ${config} | ${r.old.toFixed(2)} | ${r.new.toFixed(2)} | ${r.speedup.toFixed(2)}x |`);
}
if (o.json)
  fs.writeFileSync(
    o.json,
    JSON.stringify({ command, oldCommit, newCommit, date: new Date().toISOString(), rows, figures }, null, 2) + '\n',
  );
