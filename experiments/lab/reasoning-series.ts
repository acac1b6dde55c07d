// What becomes of the lesson's reasoning, step by step (issue 34 item 2): for each run of a lesson-lab folder, the
// share of distinct reasoning texts (reasoning/unique_fraction), how often the answer names the arm the reasoning
// picks (reasoning/answer_agreement; "-" where no reasoning picked one), the share of true checkable claims
// (reasoning/grounding; "-" where none was made) and the training success, at a few steps.
//   npx tsx experiments/lab/reasoning-series.ts runs/lesson-fresh3 [--steps 1,3,5,10,20,40,100]
import * as fs from 'node:fs';
import * as path from 'node:path';
import { labSeedDirs, readMetrics } from '../lib/analysis';

const args = process.argv.slice(2);
const stepsAt = args.indexOf('--steps');
const steps = stepsAt >= 0 ? args.splice(stepsAt, 2)[1].split(',').map(Number) : [1, 3, 5, 10, 20, 40, 100];
const dir = args[0];
if (!dir) throw new Error('usage: npx tsx experiments/lab/reasoning-series.ts DIR [--steps 1,3,5]');

const cell = (v: unknown, digits = 2) => (typeof v === 'number' && Number.isFinite(v) ? v.toFixed(digits) : '-');
const seeds = labSeedDirs(dir);
for (const arm of ['starpo', 'starpo-s']) {
  console.log(`${arm}: step: unique fraction / answer agreement / grounding / training success`);
  for (const seed of seeds) {
    const run = path.join(dir, seed, arm);
    if (!fs.existsSync(path.join(run, 'metrics.jsonl'))) continue;
    const byStep = new Map(
      readMetrics(run)
        .filter((r) => 'reasoning/unique_fraction' in r)
        .map((r) => [r.step, r]),
    );
    const cells = steps.map((s) => {
      const r = byStep.get(s);
      if (!r) return `${s}: -`;
      const success = Object.entries(r).find(([k]) => /^train\/[^/]+\/success$/.test(k))?.[1];
      return `${s}: ${cell(r['reasoning/unique_fraction'])}/${cell(r['reasoning/answer_agreement'])}/${cell(r['reasoning/grounding'])}/${cell(success)}`;
    });
    console.log(`  ${seed.padEnd(9)} ${cells.join('  ')}`);
  }
}
