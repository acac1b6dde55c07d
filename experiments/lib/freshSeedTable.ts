// The lesson page's fresh-seed table (src/ui/lessonRobustness.ts), as the lab scripts write it: one row per seed from
// its lesson verdict, and the file with its provenance. experiments/lab/lesson-verdict.ts writes the outcome lesson's
// (issue 34 item 1), experiments/lab/lesson-mi-verdict.ts the mechanism lesson's (item 2). Each row carries both arms'
// curves (armSeries), from which the page draws every fresh seed at once.
import * as fs from 'node:fs';
import { parseFreshSeedTable, type FreshSeedRow, type FreshSeedTable } from '../../src/ui/lessonRobustness';
import { movingAverage, series, trainTag, type MetricsRow } from './analysis';
import { LESSON_CRITERIA, type LessonVerdict } from './lessonVerdict';

type ArmSeries = NonNullable<FreshSeedRow['series']>['vanilla'];

/**
 * One arm's curves for the page, at step 1 and every `every` steps (where collapse.enabled measures the MI): the
 * training success as the verdict smooths it (trailing mean over LESSON_CRITERIA.window steps) and the first-turn MI
 * when `withMi` (null at a step the run did not measure).
 */
export function armSeries(rows: readonly MetricsRow[], withMi: boolean, every = 5): ArmSeries {
  const tag = trainTag(rows);
  if (!tag) throw new Error('fresh-seed series: the run has no train/<tag>/success metric');
  const smooth = movingAverage(series(rows, `train/${tag}/success`), LESSON_CRITERIA.window);
  const byStep = new Map(rows.map((r) => [r.step, r]));
  const picked = smooth.filter(([step]) => step === 1 || step % every === 0);
  const mi = (step: number) => {
    const v = byStep.get(step)?.['collapse_first_turn_sample/mi_estimate'];
    return typeof v === 'number' && Number.isFinite(v) ? round(v) : null;
  };
  return {
    step: picked.map(([step]) => step),
    success: picked.map(([, v]) => round(v)),
    ...(withMi ? { mi: picked.map(([step]) => mi(step)) } : {}),
  };
}

/** 4 decimals: the page draws these, and the file stays readable in a diff. */
const round = (v: number) => Math.round(v * 1e4) / 1e4;

/** The value after `name` on the command line, or null. */
export function argValue(name: string, argv: readonly string[] = process.argv): string | null {
  const i = argv.indexOf(name);
  return i > 0 ? (argv[i + 1] ?? null) : null;
}

/** One seed's row: both arms' curves and marks from the verdict, the conditions that failed, and the MI if measured. */
export function freshSeedRow(
  seed: number,
  r: LessonVerdict,
  failed: FreshSeedRow['failed'],
  mi?: FreshSeedRow['mi'],
  curves?: FreshSeedRow['series'],
): FreshSeedRow {
  const { start, peak, peakStep, final, warningStep, collapseStep } = r.vanilla;
  return {
    seed,
    vanilla: { start, peak, peakStep, final, warningStep, collapseStep },
    starpoS: {
      peak: r.starpoS.peak,
      final: r.starpoS.final,
      warningStep: r.starpoS.warningStep,
      convergedStep: r.starpoS.convergedStep,
    },
    ...(mi ? { mi } : {}),
    ...(curves ? { series: curves } : {}),
    failed,
  };
}

/**
 * Writes `--json FILE` (needs `--seeds-named COMMIT` and `--preset-commit COMMIT`; `--command TEXT` overrides how the
 * runs were made), checked by the page's own reader; exits with 2 naming what is missing.
 */
export function writeFreshSeedTable(
  script: string,
  table: Pick<FreshSeedTable, 'preset' | 'criteria' | 'rows'>,
  defaultCommand: string,
): void {
  const file = argValue('--json');
  if (!file) return;
  const seedsNamedAt = argValue('--seeds-named'),
    presetCommit = argValue('--preset-commit');
  if (!seedsNamedAt || !presetCommit) {
    console.error(`${script}: --json needs --seeds-named COMMIT and --preset-commit COMMIT`);
    process.exit(2);
  }
  const checked = parseFreshSeedTable({
    format: 1,
    ...table,
    seedsNamedAt,
    presetCommit,
    date: new Date().toISOString(),
    command: argValue('--command') ?? defaultCommand,
  });
  fs.writeFileSync(file, freshSeedTableText(checked));
  console.log(`wrote ${file} (${table.rows.length} seeds)`);
}

/** The table as the page reads it: indented JSON with each list of numbers on one line, so that a diff of a
 *  retrained table shows which seed's curve changed rather than thousands of one-number lines. */
export function freshSeedTableText(table: FreshSeedTable): string {
  return (
    JSON.stringify(table, null, 2).replace(/\[[-\d\s,.eE+nul]*\]/g, (list) =>
      list.replace(/\s+/g, '').replace(/,/g, ', '),
    ) + '\n'
  );
}
