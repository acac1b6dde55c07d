// Each arm's rate over the seeds of a lesson-lab folder (OUT/seed-S/{starpo,starpo-s}), judged run by run by the
// lesson's verdict (src/metrics/lessonVerdict.ts), with 95 % Wilson intervals:
//   vanilla StarPO  collapses after the warning (its 5-step mean success falls to half its best, once it improved,
//                   with the warning at or before that step);
//   StarPO-S        holds: ends within 10 points of its peak and at least 20 points above vanilla on the same seed.
// StarPO-S's own collapses (by vanilla's rule) are counted too. One row per seed, then one line per arm. Only finished runs count (a run with metrics but no `.done` marker beside
// it, when the folder has markers, is skipped).
//   npx tsx experiments/lab/lesson-arm-rates.ts runs/lesson-fresh4
import * as fs from 'node:fs';
import * as path from 'node:path';
import { readMetrics } from '../lib/analysis';
import { replayEchoTrap } from '../../src/metrics/echoTrap';
import { presetConfig } from '../../src/starpo/presets';
import { LESSON_CRITERIA, rate, runVerdict, type Rate } from '../../src/metrics/lessonVerdict';

const dir = process.argv[2];
if (!dir) throw new Error('usage: npx tsx experiments/lab/lesson-arm-rates.ts DIR');
const seeds = fs
  .readdirSync(dir)
  .filter((n) => /^seed-\d+$/.test(n))
  .map((n) => Number(n.slice(5)))
  .sort((a, b) => a - b);
const markers = fs.readdirSync(dir).some((n) => n.endsWith('.done'));
const finished = (s: number, arm: string) => {
  const metrics = path.join(dir, `seed-${s}`, arm, 'metrics.jsonl');
  return fs.existsSync(metrics) && (!markers || fs.existsSync(path.join(dir, `seed-${s}-${arm}.done`)));
};
const rows = (s: number, arm: string) =>
  replayEchoTrap(readMetrics(path.join(dir, `seed-${s}`, arm)), presetConfig('echo-trap', arm).echoTrap);
const pct = (v: number) => `${Math.round(v * 100)} %`;
const at = (v: number | null) => (v === null ? '-' : String(v));
const show = (r: Rate) =>
  `${r.count} of ${r.runs} (${pct(r.rate ?? 0)}; 95 % Wilson ${pct(r.lo ?? 0)}-${pct(r.hi ?? 0)})`;

let vRuns = 0,
  vCollapsed = 0,
  sRuns = 0,
  sHeld = 0,
  sCollapsed = 0;
console.log(
  '| seed | vanilla: start -> peak (step) -> final (last step) | warning | collapse | collapses after the warning | StarPO-S: peak (step) -> final (last step) | StarPO-S collapse | holds |',
);
console.log('|---:|---|---:|---:|---|---|---:|---|');
for (const s of seeds) {
  const hasV = finished(s, 'starpo'),
    hasS = finished(s, 'starpo-s');
  if (!hasV && !hasS) continue;
  const vr = hasV ? rows(s, 'starpo') : null,
    sr = hasS ? rows(s, 'starpo-s') : null;
  const v = vr ? runVerdict(vr) : null,
    sv = sr ? runVerdict(sr) : null;
  const last = (r: typeof vr) => r![r!.length - 1].step;
  let cells = '| | | | ';
  if (v) {
    vRuns++;
    if (v.collapsedAfterWarning) vCollapsed++;
    cells = `${pct(v.start)} -> ${pct(v.peak)} (${v.peakStep}) -> ${pct(v.final)} (${last(vr)}) | ${at(v.warningStep)} | ${at(v.collapseStep)} | ${v.collapsedAfterWarning ? '**yes**' : 'no'} | `;
  }
  let sCell = ' | | ';
  if (sv) {
    // Ends above: 20 points above vanilla's final on the same seed (a seed whose vanilla run is missing cannot count).
    const above = v !== null && sv.final >= v.final + LESSON_CRITERIA.margin;
    const holds = sv.holds && above;
    sRuns++;
    if (holds) sHeld++;
    if (sv.collapses) sCollapsed++;
    sCell = `${pct(sv.peak)} (${sv.peakStep}) -> ${pct(sv.final)} (${last(sr)}) | ${at(sv.collapseStep)} | ${holds ? '**yes**' : `no (${[!sv.holds && 'falls', !above && (v ? 'not 20 above' : 'no vanilla run')].filter(Boolean).join(', ')})`} |`;
  }
  console.log(`| ${s} | ${cells}${sCell}`);
}
console.log(`\nvanilla StarPO collapses after the warning: ${show(rate(vCollapsed, vRuns))}`);
console.log(`StarPO-S holds (within 10 points of its peak, 20 above vanilla): ${show(rate(sHeld, sRuns))}`);
console.log(`StarPO-S collapses (by vanilla's rule, whatever came after): ${show(rate(sCollapsed, sRuns))}`);
