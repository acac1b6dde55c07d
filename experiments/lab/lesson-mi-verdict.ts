// Issue 34, item 2: does RAGEN-2's input-dependence signal fall in vanilla StarPO before its success does, and stay up
// in StarPO-S? Per seed of a lesson-lab directory whose runs logged the collapse diagnostics (collapse.enabled=true):
// the first-turn MI estimate (nats) and retrieval accuracy above chance, averaged over two windows of steps:
//   early: steps 10-30 (after the first updates, while both arms learn);
//   late:  vanilla: the 20 steps before its success collapse (lessonVerdict's collapse step; its last 20 steps when it
//          did not collapse); StarPO-S: its last 20 steps.
// "falls" = vanilla's success collapsed (lessonVerdict: its 5-step mean fell to half its peak or less) and its late
// MI is below half its early MI: the MI fell before the success did. "stays" = StarPO-S's late MI is at least half its
// early MI. "both" is item 2 on that seed.
// With --series, every measurement of every run follows: step, MI, retrieval above chance, training success.
// --json FILE --seeds-named COMMIT --preset-commit COMMIT [--preset NAME] [--command TEXT] also writes the seeds with
// both arms as the mechanism lesson's fresh-seed table (src/ui/lessonRobustness.ts, criteria 'mechanism'), e.g.
// public/lessons/echo-trap-frozenlake/fresh-seeds.json.
//   npx tsx experiments/lab/lesson-mi-verdict.ts runs/names/lr20 [--series]
import * as fs from 'node:fs';
import * as path from 'node:path';
import { labSeedDirs, readMetrics, type MetricsRow } from '../lib/analysis';
import { lessonVerdict, vanillaVerdict } from '../lib/lessonVerdict';
import { type FreshSeedRow } from '../../src/ui/lessonRobustness';
import { argValue, armSeries, freshSeedRow, writeFreshSeedTable } from '../lib/freshSeedTable';

const P = 'collapse_first_turn_sample';
const EARLY: [number, number] = [10, 30];
const LATE = 20;

function window(rows: readonly MetricsRow[], from: number, to: number): { mi: number; above: number; n: number } {
  const picked = rows.filter(
    (r) =>
      r.step >= from &&
      r.step <= to &&
      typeof r[`${P}/mi_estimate`] === 'number' &&
      Number.isFinite(r[`${P}/mi_estimate`]),
  );
  const mean = (f: (r: MetricsRow) => number) => picked.reduce((s, r) => s + f(r), 0) / picked.length;
  return {
    mi: mean((r) => r[`${P}/mi_estimate`] as number),
    above: mean((r) => (r[`${P}/retrieval_accuracy`] as number) - (r[`${P}/retrieval_chance_level`] as number)),
    n: picked.length,
  };
}

const jsonRows: FreshSeedRow[] = [];
const orNull = (w: { mi: number; n: number }) => (w.n > 0 ? w.mi : null);

const dir = process.argv[2];
const showSeries = process.argv.includes('--series');
if (!dir || dir.startsWith('--'))
  throw new Error('usage: npx tsx experiments/lab/lesson-mi-verdict.ts LAB_DIR [--series]');
const trainSuccess = (r: MetricsRow) =>
  Object.entries(r).find(([k]) => /^train\/[^/]+\/success$/.test(k))?.[1] as number;
const fmt = (w: { mi: number; above: number; n: number }) =>
  w.n ? `${w.mi.toFixed(3)} (${w.above >= 0 ? '+' : ''}${w.above.toFixed(2)}, n=${w.n})` : '-';
console.log(
  '| seed | vanilla: start -> peak (step) -> final | warning | MI below half (step) | collapse | vanilla MI early -> late | ' +
    'StarPO-S: peak -> final | StarPO-S MI early -> late | MI falls first | MI stays | item 2 | item 1 (lesson) |',
);
console.log('|---:|---|---:|---:|---:|---|---|---|---|---|---|---|');
const pct = (v: number) => `${(v * 100).toFixed(0)} %`;
/** The first measurement after the early window where the MI is below half its early mean: when the template formed. */
const miHalvedAt = (rows: readonly MetricsRow[], early: number) =>
  rows.find(
    (r) =>
      r.step > EARLY[1] && Number.isFinite(r[`${P}/mi_estimate`]) && (r[`${P}/mi_estimate`] as number) < 0.5 * early,
  )?.step ?? null;
/** Vanilla's half of item 2: its MI early and over the 20 steps before its collapse, and whether it fell first. */
function vanillaMi(v: readonly MetricsRow[], collapseStep: number | null) {
  const end = collapseStep ?? v[v.length - 1].step;
  const early = window(v, ...EARLY),
    late = window(v, end - LATE, end);
  return { early, late, falls: collapseStep !== null && late.n > 0 && late.mi < 0.5 * early.mi };
}
/** The seed folders of the lab directory, in seed order. */
const seedDirs = labSeedDirs(dir);
let falls = 0,
  stays = 0,
  both = 0,
  seeds = 0;
for (const seed of seedDirs) {
  const runs = ['starpo', 'starpo-s'].map((arm) => path.join(dir, seed, arm));
  if (!runs.every((r) => fs.existsSync(path.join(dir, `${seed}-${path.basename(r)}.done`)))) continue;
  const [v, s] = runs.map((r) => readMetrics(r));
  const verdict = lessonVerdict(v, s);
  const { early: vEarly, late: vLate, falls: f } = vanillaMi(v, verdict.vanilla.collapseStep);
  const sEnd = s[s.length - 1].step;
  const sEarly = window(s, ...EARLY),
    sLate = window(s, sEnd - LATE, sEnd);
  const st = sLate.n > 0 && sLate.mi >= 0.5 * sEarly.mi;
  seeds++;
  falls += +f;
  stays += +st;
  both += +(f && st);
  jsonRows.push(
    freshSeedRow(
      Number(seed.slice(5)),
      verdict,
      [...(f ? [] : ['miFalls' as const]), ...(st ? [] : ['miStays' as const])],
      {
        vanillaEarly: orNull(vEarly),
        vanillaLate: orNull(vLate),
        starpoSEarly: orNull(sEarly),
        starpoSLate: orNull(sLate),
      },
      { vanilla: armSeries(v, true), starpoS: armSeries(s, true) },
    ),
  );
  const vc = verdict.vanilla;
  console.log(
    `| ${seed.slice(5)} | ${pct(vc.start)} -> ${pct(vc.peak)} (${vc.peakStep}) -> ${pct(vc.final)} | ${vc.warningStep ?? '-'} | ` +
      `${miHalvedAt(v, vEarly.mi) ?? '-'} | ${vc.collapseStep ?? '-'} | ${fmt(vEarly)} -> ${fmt(vLate)} | ` +
      `${pct(verdict.starpoS.peak)} -> ${pct(verdict.starpoS.final)} | ${fmt(sEarly)} -> ${fmt(sLate)} | ${f ? 'yes' : 'no'} | ${st ? 'yes' : 'no'} | ` +
      `${f && st ? '**yes**' : 'no'} | ${verdict.lesson ? 'yes' : 'no'} |`,
  );
}
console.log(
  `MI fell in vanilla before its collapse on ${falls} of ${seeds} seeds, stayed up in StarPO-S on ${stays}; both on ${both}`,
);

// A check stopped part-way leaves seeds whose vanilla arm ran (to its collapse, or further) but whose StarPO-S arm did
// not finish. Vanilla's half of the verdict reads only its own rows, so it is printed for them too.
const vanillaOnly = seedDirs
  .filter(
    (seed) =>
      !fs.existsSync(path.join(dir, `${seed}-starpo-s.done`)) || !fs.existsSync(path.join(dir, `${seed}-starpo.done`)),
  )
  .filter((seed) => fs.existsSync(path.join(dir, seed, 'starpo', 'metrics.jsonl')));
if (vanillaOnly.length > 0) {
  console.log(
    '\nvanilla only (a pair not finished) | steps | peak (step) | warning | collapse | MI early -> late | MI falls first',
  );
  for (const seed of vanillaOnly) {
    const v = readMetrics(path.join(dir, seed, 'starpo'));
    const vc = vanillaVerdict(v);
    const m = vanillaMi(v, vc.collapseStep);
    console.log(
      `${seed.slice(5)} | ${v[v.length - 1].step} | ${pct(vc.peak)} (${vc.peakStep}) | ${vc.warningStep ?? '-'} | ${vc.collapseStep ?? '-'} | ` +
        `${fmt(m.early)} -> ${fmt(m.late)} | ${m.falls ? 'yes' : 'no'}`,
    );
  }
}

const preset = argValue('--preset') ?? 'echo-trap-frozenlake';
writeFreshSeedTable(
  'lesson-mi-verdict',
  { preset, criteria: 'mechanism', rows: jsonRows },
  `PRESET=${preset} bash experiments/lab/lesson-lab.sh ${dir} "${jsonRows.map((r) => r.seed).join(' ')}"`,
);

// Every run in the directory, finished or not: MI at step 1, over steps 10-30 and over its last 20 steps, and its
// training success over its last 5 steps.
console.log('\nrun | steps | MI step 1 | MI steps 10-30 | MI last 20 steps | success, last 5 steps');
for (const seed of seedDirs) {
  for (const arm of ['starpo', 'starpo-s']) {
    const run = path.join(dir, seed, arm);
    if (!fs.existsSync(path.join(run, 'metrics.jsonl'))) continue;
    const rows = readMetrics(run).filter((r) => r.step >= 1);
    if (rows.length === 0) continue;
    const last = rows[rows.length - 1].step;
    const tail = rows.slice(-5).map(trainSuccess);
    const done = fs.existsSync(path.join(dir, `${seed}-${arm}.done`)) ? '' : ' (stopped)';
    console.log(
      `${seed.slice(5)} ${arm} | ${last}${done} | ${fmt(window(rows, 1, 1))} | ${fmt(window(rows, ...EARLY))} | ` +
        `${fmt(window(rows, last - LATE, last))} | ${((100 * tail.reduce((a, b) => a + b, 0)) / tail.length).toFixed(0)} %`,
    );
  }
}

if (showSeries) {
  console.log('\nrun: step MI (retrieval above chance) success, at every measurement');
  for (const seed of seedDirs) {
    for (const arm of ['starpo', 'starpo-s']) {
      const run = path.join(dir, seed, arm);
      if (!fs.existsSync(path.join(run, 'metrics.jsonl'))) continue;
      const points = readMetrics(run)
        .filter((r) => r.step >= 1 && Number.isFinite(r[`${P}/mi_estimate`]))
        .map((r) => {
          const w = window([r], r.step, r.step);
          return `${r.step}: ${w.mi.toFixed(2)} (${w.above >= 0 ? '+' : ''}${w.above.toFixed(2)}) ${(100 * trainSuccess(r)).toFixed(0)} %`;
        });
      console.log(`${seed.slice(5)} ${arm}: ${points.join(' | ')}`);
    }
  }
}
