// What broke vanilla StarPO where its success fell before its MI did (issue 34, item 2; docs/lab/echo-trap-probes.md,
// "The mechanism preset takes the floor"). For every vanilla run of the given lesson-lab directories that collapsed
// (lessonVerdict: its 5-step mean training success fell to half its peak or less): the update with the largest PPO KL
// among the 10 steps up to the collapse, how much its groups still disagreed then (the batch's mean in-group reward
// std: one 3-to-1 group of 8 lakes adds 0.0625, a 2-to-2 group 0.072; 0 means every lake's 4 rollouts agreed), and
// the valid-action rate before that update and at the collapse (a broken answer format shows there).
//   npx tsx experiments/lab/vanilla-breaks.ts runs/mech-fresh runs/mech-fresh3-full
import * as path from 'node:path';
import { labSeedDirs, readMetrics, trainTag, type MetricsRow } from '../lib/analysis';
import { vanillaVerdict } from '../lib/lessonVerdict';

const num = (r: MetricsRow | undefined, key: string) => (typeof r?.[key] === 'number' ? (r[key] as number) : NaN);
const fmt = (v: number, digits = 2) => (Number.isFinite(v) ? v.toFixed(digits) : '-');

const dirs = process.argv.slice(2);
if (dirs.length === 0) throw new Error('usage: npx tsx experiments/lab/vanilla-breaks.ts LAB_DIR [LAB_DIR ...]');
console.log(
  '| run | collapse | peak (step) | largest-KL update (step) | its KL | its mean in-group std | valid actions before it -> at collapse |',
);
console.log('|---|---:|---|---:|---:|---:|---|');
let runs = 0,
  agreeing = 0;
for (const dir of dirs) {
  const seeds = labSeedDirs(dir);
  for (const seed of seeds) {
    const rows = readMetrics(path.join(dir, seed, 'starpo'));
    if (rows.length === 0) continue;
    const v = vanillaVerdict(rows);
    if (v.collapseStep === null) continue;
    const c = v.collapseStep;
    const near = rows.filter((r) => r.step > c - 10 && r.step <= c && Number.isFinite(num(r, 'actor/ppo_kl')));
    const worst = near.reduce((a, b) => (num(b, 'actor/ppo_kl') > num(a, 'actor/ppo_kl') ? b : a), near[0]);
    const before = rows.find((r) => r.step === worst.step - 1);
    const std = num(worst, 'rollout/in_group_std');
    const validKey = `train/${trainTag(rows)}/action_is_valid`;
    const validRate = (r: MetricsRow | undefined) => num(r, validKey);
    runs++;
    if (std <= 0.2) agreeing++;
    console.log(
      `| ${dir}/${seed} | ${c} | ${(v.peak * 100).toFixed(0)} % (${v.peakStep}) | ${worst.step} | ${fmt(num(worst, 'actor/ppo_kl'))} | ${fmt(std)} | ${fmt(validRate(before))} -> ${fmt(validRate(rows.find((r) => r.step === c)))} |`,
    );
  }
}
console.log(
  `\n\`${runs} collapsed vanilla runs; the largest-KL update before the collapse had a mean in-group std of 0.2 or less (at least 5 of 8 lakes agreeing) on ${agreeing}\``,
);
