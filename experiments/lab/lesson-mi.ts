// How input-dependent the lesson's reasoning is (issue 34): RAGEN-2's first-turn MI estimate and retrieval accuracy
// above chance, over every step that logged them (runs trained with collapse.enabled=true), split into step 1 (the
// warm start, before any update) and later steps.
//   npx tsx experiments/lab/lesson-mi.ts runs/lesson-lab/A-lr2e3-mb8 runs/lesson-lab/B-g4-mb8-40
import * as fs from 'node:fs';
import * as path from 'node:path';
import { readMetrics } from '../lib/analysis';

const P = 'collapse_first_turn_sample';
const found: { run: string; step: number; mi: number; above: number }[] = [];
for (const dir of process.argv.slice(2)) {
  for (const seed of fs.readdirSync(dir).filter((n) => /^seed-\d+$/.test(n))) {
    for (const arm of ['starpo', 'starpo-s']) {
      const run = path.join(dir, seed, arm);
      if (!fs.existsSync(path.join(run, 'metrics.jsonl'))) continue;
      for (const r of readMetrics(run)) {
        const mi = r[`${P}/mi_estimate`],
          acc = r[`${P}/retrieval_accuracy`],
          chance = r[`${P}/retrieval_chance_level`];
        if (typeof mi === 'number' && typeof acc === 'number' && typeof chance === 'number' && Number.isFinite(mi)) {
          found.push({ run, step: r.step, mi, above: acc - chance });
        }
      }
    }
  }
}
const range = (xs: number[], digits: number) =>
  `${Math.min(...xs).toFixed(digits)} to ${Math.max(...xs).toFixed(digits)}`;
for (const [label, rows] of [
  ['step 1', found.filter((f) => f.step === 1)],
  ['later steps', found.filter((f) => f.step > 1)],
] as const) {
  if (rows.length === 0) continue;
  console.log(
    `${label}: ${rows.length} measurements in ${new Set(rows.map((r) => r.run)).size} runs; ` +
      `mi_estimate ${range(
        rows.map((r) => r.mi),
        4,
      )} nats; retrieval above chance ${range(
        rows.map((r) => r.above),
        2,
      )}`,
  );
}
