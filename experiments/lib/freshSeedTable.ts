// The lesson page's fresh-seed table (src/ui/lessonRobustness.ts), as the lab scripts write it: one row per seed from
// its lesson verdict, and the file with its provenance. experiments/lab/lesson-verdict.ts writes the outcome lesson's
// (issue 34 item 1), experiments/lab/lesson-mi-verdict.ts the mechanism lesson's (item 2).
import * as fs from 'node:fs';
import { parseFreshSeedTable, type FreshSeedRow, type FreshSeedTable } from '../../src/ui/lessonRobustness';
import type { LessonVerdict } from './lessonVerdict';

/** The value after `name` on the command line, or null. */
export function argValue(name: string, argv: readonly string[] = process.argv): string | null {
  const i = argv.indexOf(name);
  return i > 0 ? argv[i + 1] ?? null : null;
}

/** One seed's row: both arms' curves and marks from the verdict, the conditions that failed, and the MI if measured. */
export function freshSeedRow(seed: number, r: LessonVerdict, failed: FreshSeedRow['failed'], mi?: FreshSeedRow['mi']): FreshSeedRow {
  const { start, peak, peakStep, final, warningStep, collapseStep } = r.vanilla;
  return {
    seed,
    vanilla: { start, peak, peakStep, final, warningStep, collapseStep },
    starpoS: { peak: r.starpoS.peak, final: r.starpoS.final, warningStep: r.starpoS.warningStep, convergedStep: r.starpoS.convergedStep },
    ...(mi ? { mi } : {}),
    failed,
  };
}

/**
 * Writes `--json FILE` (needs `--seeds-named COMMIT` and `--preset-commit COMMIT`; `--command TEXT` overrides how the
 * runs were made), checked by the page's own reader; exits with 2 naming what is missing.
 */
export function writeFreshSeedTable(script: string, table: Pick<FreshSeedTable, 'preset' | 'criteria' | 'rows'>, defaultCommand: string): void {
  const file = argValue('--json');
  if (!file) return;
  const seedsNamedAt = argValue('--seeds-named'), presetCommit = argValue('--preset-commit');
  if (!seedsNamedAt || !presetCommit) {
    console.error(`${script}: --json needs --seeds-named COMMIT and --preset-commit COMMIT`);
    process.exit(2);
  }
  const checked = parseFreshSeedTable({
    format: 1, ...table, seedsNamedAt, presetCommit, date: new Date().toISOString(), command: argValue('--command') ?? defaultCommand,
  });
  fs.writeFileSync(file, JSON.stringify(checked, null, 2) + '\n');
  console.log(`wrote ${file} (${table.rows.length} seeds)`);
}
