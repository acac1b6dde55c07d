// Redraws an experiment's PNGs from its docs/findings/<name>.json (no run directories needed), e.g. after running
// the scripts elsewhere with --no-plots.   npx tsx experiments/plot.ts <name|all> [--dir DIR]
import * as fs from 'node:fs';
import * as path from 'node:path';
import { FINDINGS_DIR, renderPlots, type ExperimentDef, type FindingsJson } from './lib/experiment';

const NAMES = [
  '00-echo-trap',
  '01-vanilla-collapse',
  '02-filter-ratio',
  '03-kl-clip',
  '04-starpo-vs-starpo-s',
  '05-actions-per-turn',
  '06-generalisation',
];
const arg = process.argv[2];
const dirFlag = process.argv.indexOf('--dir');
const dir = dirFlag > 0 ? path.resolve(process.argv[dirFlag + 1]) : FINDINGS_DIR;
if (!arg || (arg !== 'all' && !NAMES.includes(arg))) {
  console.error(`usage: npx tsx experiments/plot.ts <${NAMES.join('|')}|all> [--dir DIR]`);
  process.exit(2);
}
for (const name of arg === 'all' ? NAMES : [arg]) {
  const file = path.join(dir, `${name}.json`);
  if (!fs.existsSync(file)) {
    console.error(`${file}: not there (run experiments/${name}.ts first)`);
    continue;
  }
  const { def } = (await import(`./${name}.ts`)) as { def: ExperimentDef };
  const files = await renderPlots(def, JSON.parse(fs.readFileSync(file, 'utf8')) as FindingsJson, dir);
  for (const f of files) console.log(`wrote ${path.relative(process.cwd(), f)}`);
}
