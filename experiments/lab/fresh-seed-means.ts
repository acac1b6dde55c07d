// The means the lesson page draws thick over every fresh seed (src/ui/freshSeedCurves.ts), printed at a few steps:
// each arm's mean training success (5-step mean) and, where the table has it, MI (nats), with how many seeds had a
// value there. Reads a shipped fresh-seed table, e.g.
//   npx tsx experiments/lab/fresh-seed-means.ts public/lessons/echo-trap-frozenlake/fresh-seeds.json [--steps 1,50,100]
import * as fs from 'node:fs';
import { CURVE_ARMS, seedCurves } from '../../src/ui/freshSeedCurves';
import { parseFreshSeedTable } from '../../src/ui/lessonRobustness';
import { argValue } from '../lib/freshSeedTable';

const file = process.argv[2];
if (!file || file.startsWith('--'))
  throw new Error('usage: npx tsx experiments/lab/fresh-seed-means.ts FRESH_SEEDS_JSON [--steps 1,50,100]');
const table = parseFreshSeedTable(JSON.parse(fs.readFileSync(file, 'utf8')), file);
const wanted = argValue('--steps')?.split(',').map(Number);
const name = { vanilla: 'vanilla', starpoS: 'StarPO-S' };

for (const metric of ['success', 'mi'] as const) {
  const c = seedCurves(table, metric);
  if (!c) continue;
  const steps = wanted ?? c.steps.filter((s, i) => s === 1 || i % 5 === 0 || i === c.steps.length - 1);
  console.log(
    `\n${metric === 'mi' ? 'MI (nats)' : 'training success (5-step mean)'}, mean over the seeds with a value (n):`,
  );
  console.log(`| arm | ${steps.map((s) => `step ${s}`).join(' | ')} |\n|---|${steps.map(() => '---:').join('|')}|`);
  for (const arm of CURVE_ARMS) {
    const cells = steps.map((s) => {
      const i = c.steps.indexOf(s);
      if (i < 0) return '-';
      const n = c.curves.filter((x) => x.arm === arm && x.values[i] !== null).length;
      const m = c.mean[arm][i];
      return m === null
        ? '-'
        : `${metric === 'mi' ? m.toFixed(2) : `${Math.round(m * 100)} %`}${n < table.rows.length ? ` (n=${n})` : ''}`;
    });
    console.log(`| ${name[arm]} | ${cells.join(' | ')} |`);
  }
}
