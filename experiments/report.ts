// Markdown tables of the experiments' numbers, from docs/findings/<name>.json, for docs/findings.md.
//   npx tsx experiments/report.ts [name ...]   (default: every JSON there)
import * as fs from 'node:fs';
import * as path from 'node:path';
import { FINDINGS_DIR, pct, type FindingsJson } from './lib/experiment';

type Rate = { rate: number; lo: number; hi: number } | undefined;
const ci = (r: Rate) => (r ? `${pct(r.rate)} [${pct(r.lo)}, ${pct(r.hi)}]` : '-');
const at = (v: number | null) => (v === null ? '-' : String(v));

const names =
  process.argv.length > 2
    ? process.argv.slice(2)
    : fs
        .readdirSync(FINDINGS_DIR)
        .filter((f) => f.endsWith('.json'))
        .map((f) => f.replace(/\.json$/, ''))
        .sort();
for (const name of names) {
  const d = JSON.parse(fs.readFileSync(path.join(FINDINGS_DIR, `${name}.json`), 'utf8')) as FindingsJson;
  console.log(`### ${d.experiment}\n\n${d.title}\n\n\`${d.command}\` (${d.machine}, ${d.date.slice(0, 10)})\n`);
  console.log(
    '| run | steps | val start | val peak (step) | val final | train success peak (step) / final | std drop | entropy drop | echo warning | s/step |',
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const r of d.runs) {
    const s = r.summary;
    const secs = r.series['timing_s/step'];
    console.log(
      `| ${r.label} | ${r.stepsDone}/${r.steps}${r.complete ? '' : ' (stopped)'} | ${pct(s.valStart)} | ${pct(s.valPeak)} (${at(s.valPeakStep)}) | ${pct(s.valFinal)} | ` +
        `${pct(s.trainPeak)} (${at(s.trainPeakStep)}) / ${pct(s.trainFinal)} | ${at(s.stdDropStep)} | ${at(s.entropyDropStep)} | ${at(s.echoWarningStep)} | ${secs?.length ? (secs.reduce((a, [, v]) => a + v, 0) / secs.length).toFixed(1) : '-'} |`,
    );
  }
  const extra = d.extra as {
    heldOut?: { env: string; policy: string; suite: string; success: Rate }[];
    suites?: { trainedOn: string; suite: string; kind: string; warmStart: Rate; starpoS: Rate }[];
    updates?: Record<string, { optimizerSteps: number; trajectories: number; secondsPerStep: number | null }>;
  };
  if (extra.heldOut) {
    console.log('\n| env | policy | held-out success [95% CI] |\n|---|---|---|');
    for (const h of extra.heldOut) console.log(`| ${h.env} | ${h.policy} | ${ci(h.success)} |`);
  }
  if (extra.suites) {
    console.log('\n| trained on | suite | kind | warm start [95% CI] | StarPO-S [95% CI] |\n|---|---|---|---|---|');
    for (const s of extra.suites)
      console.log(`| ${s.trainedOn} | ${s.suite} | ${s.kind} | ${ci(s.warmStart)} | ${ci(s.starpoS)} |`);
  }
  if (extra.updates) {
    console.log('\n| keep | optimizer steps | trajectories trained on | s/step |\n|---|---:|---:|---:|');
    for (const [k, u] of Object.entries(extra.updates))
      console.log(`| ${k} | ${u.optimizerSteps} | ${u.trajectories} | ${u.secondsPerStep?.toFixed(1) ?? '-'} |`);
  }
  console.log('');
}
