// Prints issue 16's lesson verdict (experiments/lib/lessonVerdict.ts) for every seed-S/{starpo,starpo-s} pair in DIR.
// With --signals S the early warning is replayed over the logged metrics with that `echoTrap.signals` rule (the
// detector only reads metrics, so the replay is what a run with that setting would have logged).
//   npx tsx experiments/lab/lesson-verdict.ts runs/lesson-lab/NAME [--signals reward_std_and_entropy]
import * as fs from 'node:fs';
import * as path from 'node:path';
import { readMetrics, type MetricsRow } from '../lib/analysis';
import { EchoTrapDetector, type EchoTrapSignals } from '../../src/metrics/echoTrap';
import { presetConfig } from '../../src/starpo/presets';
import { lessonVerdict } from '../lib/lessonVerdict';

const dir = process.argv[2];
const at = process.argv.indexOf('--signals');
const signals = at > 0 ? (process.argv[at + 1] as EchoTrapSignals) : null;

function replayWarning(rows: MetricsRow[]): MetricsRow[] {
  if (!signals) return rows;
  const detector = new EchoTrapDetector({ ...presetConfig('echo-trap', 'starpo').echoTrap, signals });
  return rows.map((r) => (typeof r.step === 'number' && r.step > 0 ? { ...r, ...detector.update(r.step, r) } : r));
}
const pct = (v: number) => `${(v * 100).toFixed(0)}%`;
let shown = 0, total = 0;
for (const name of fs.readdirSync(dir).filter((n) => /^seed-\d+$/.test(n)).sort()) {
  const [v, s] = ['starpo', 'starpo-s'].map((arm) => path.join(dir, name, arm));
  if (![v, s].every((d) => fs.existsSync(path.join(d, 'metrics.jsonl')))) continue;
  const [rv, rs] = [replayWarning(readMetrics(v)), replayWarning(readMetrics(s))];
  const r = lessonVerdict(rv, rs);
  total++; if (r.lesson) shown++;
  const failed = (['improves', 'warns', 'collapses', 'holds', 'endsAbove'] as const).filter((k) => !r[k]);
  console.log(`${name} (${rv.length}/${rs.length} rows) vanilla ${pct(r.vanilla.start)} -> ${pct(r.vanilla.peak)} @${r.vanilla.peakStep} -> ${pct(r.vanilla.final)}` +
    ` warn @${r.vanilla.warningStep ?? '-'} collapse @${r.vanilla.collapseStep ?? '-'} | S ${pct(r.starpoS.peak)} -> ${pct(r.starpoS.final)} | ` +
    (r.lesson ? 'LESSON' : `no (${failed.join(', ')})`));
}
console.log(`lesson on ${shown} of ${total} seeds`);
