// Prints the lesson verdict (experiments/lib/lessonVerdict.ts, issues 16 and 34) for every seed-S/{starpo,starpo-s}
// pair in DIR, as a markdown table, and counts how often each mark fired on each arm: the early warning
// (`echo_trap/warning`) and convergence (`echo_trap/converged`).
// The marks are replayed over the logged metrics by today's detector (src/metrics/echoTrap.ts) with the preset's
// `echoTrap` settings, so runs logged by older code are judged by the same rule; --signals S replays with another
// `echoTrap.signals` rule, --logged reads the marks as the runs logged them. (The detector only reads metrics, so a
// replay is what a run with that setting would have logged.)
//   npx tsx experiments/lab/lesson-verdict.ts runs/lesson-lab/NAME [--signals reward_std_and_entropy] [--logged]
// --json FILE --seeds-named COMMIT --preset-commit COMMIT [--command TEXT: how the runs were made] also writes the table of the seeds with both arms in the form the
// lesson page reads (src/ui/lessonRobustness.ts), e.g. public/lessons/echo-trap/fresh-seeds.json.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { labSeedDirs, readMetrics, type MetricsRow } from '../lib/analysis';
import { replayEchoTrap, type EchoTrapSignals } from '../../src/metrics/echoTrap';
import { presetConfig } from '../../src/starpo/presets';
import { armVerdict, lessonVerdict } from '../lib/lessonVerdict';
import { type FreshSeedRow } from '../../src/ui/lessonRobustness';
import { armSeries, freshSeedRow, writeFreshSeedTable } from '../lib/freshSeedTable';

const dir = process.argv[2];
const at = process.argv.indexOf('--signals');
const signals = at > 0 ? (process.argv[at + 1] as EchoTrapSignals) : null;
const logged = process.argv.includes('--logged');
const jsonRows: FreshSeedRow[] = [];

function replayMarks(rows: MetricsRow[], arm: string): MetricsRow[] {
  if (logged) return rows;
  const settings = presetConfig('echo-trap', arm).echoTrap;
  return replayEchoTrap(rows, signals ? { ...settings, signals } : settings);
}
const pct = (v: number) => `${(v * 100).toFixed(0)} %`;
const at_ = (step: number | null) => (step === null ? '-' : String(step));
let shown = 0,
  total = 0;
const fired = { vanillaWarning: 0, vanillaConverged: 0, sWarning: 0, sConverged: 0 };
console.log(
  '| seed | vanilla: start -> peak (step) -> final | warning | collapse | vanilla converged | StarPO-S: peak -> final | StarPO-S warning | StarPO-S converged | lesson |',
);
console.log('|---:|---|---:|---:|---:|---|---:|---:|---|');
const seeds = labSeedDirs(dir);
let sOnly = 0,
  sOnlyHeld = 0;
for (const name of seeds) {
  const [v, s] = ['starpo', 'starpo-s'].map((arm) => path.join(dir, name, arm));
  // Only finished runs: lesson-lab.sh marks them with seed-S-ARM.done.
  const done = (arm: string) => fs.existsSync(path.join(dir, `${name}-${arm}.done`));
  if (!done('starpo-s')) continue;
  if (!done('starpo')) {
    // StarPO-S alone: if it did not hold, the seed fails whatever vanilla does; otherwise the verdict is open.
    const a = armVerdict(replayMarks(readMetrics(s), 'starpo-s'));
    sOnly++;
    if (a.holds) sOnlyHeld++;
    if (a.warningStep !== null) fired.sWarning++;
    if (a.convergedStep !== null) fired.sConverged++;
    const vanillaState = fs.existsSync(path.join(dir, `${name}-starpo.lock`)) ? 'not finished' : 'not run';
    console.log(
      `| ${name.slice(5)} | ${vanillaState} | | | | ${pct(a.peak)} -> ${pct(a.final)} | ${at_(a.warningStep)} | ${at_(a.convergedStep)} | ` +
        `${a.holds ? `open: vanilla ${vanillaState}` : 'no (holds failed)'} |`,
    );
    continue;
  }
  const [vRows, sRows] = [replayMarks(readMetrics(v), 'starpo'), replayMarks(readMetrics(s), 'starpo-s')];
  const r = lessonVerdict(vRows, sRows);
  total++;
  if (r.lesson) shown++;
  if (r.vanilla.warningStep !== null) fired.vanillaWarning++;
  if (r.vanilla.convergedStep !== null) fired.vanillaConverged++;
  if (r.starpoS.warningStep !== null) fired.sWarning++;
  if (r.starpoS.convergedStep !== null) fired.sConverged++;
  const failed = (['improves', 'warns', 'collapses', 'holds', 'endsAbove'] as const).filter((k) => !r[k]);
  jsonRows.push(
    freshSeedRow(Number(name.slice(5)), r, failed, undefined, {
      vanilla: armSeries(vRows, false),
      starpoS: armSeries(sRows, false),
    }),
  );
  console.log(
    `| ${name.slice(5)} | ${pct(r.vanilla.start)} -> ${pct(r.vanilla.peak)} (${r.vanilla.peakStep}) -> ${pct(r.vanilla.final)} | ` +
      `${at_(r.vanilla.warningStep)} | ${at_(r.vanilla.collapseStep)} | ${at_(r.vanilla.convergedStep)} | ${pct(r.starpoS.peak)} -> ${pct(r.starpoS.final)} | ` +
      `${at_(r.starpoS.warningStep)} | ${at_(r.starpoS.convergedStep)} | ${r.lesson ? '**yes**' : `no (${failed.join(', ')})`} |`,
  );
}
const sTotal = total + sOnly;
console.log(
  `\nlesson on ${shown} of ${total} seeds with both arms` +
    (sOnly > 0 ? `; ${sOnly} more with StarPO-S only (it held on ${sOnlyHeld})` : '') +
    `; warning fired on vanilla ${fired.vanillaWarning}/${total}, StarPO-S ${fired.sWarning}/${sTotal}; ` +
    `converged on vanilla ${fired.vanillaConverged}/${total}, StarPO-S ${fired.sConverged}/${sTotal}` +
    (logged ? ' (as logged)' : ` (replayed by today's detector${signals ? `, signals ${signals}` : ''})`),
);

writeFreshSeedTable(
  'lesson-verdict',
  { preset: 'echo-trap', criteria: 'outcome', rows: jsonRows },
  `bash experiments/lab/lesson-lab.sh ${dir} "${jsonRows.map((r) => r.seed).join(' ')}"`,
);
