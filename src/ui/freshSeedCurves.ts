// Every fresh seed at once: the curves each row of a lesson's fresh-seed table carries, laid
// out for one chart per metric: one thin line per seed and arm, and each arm's mean over the seeds. What a class sees
// then does not hang on the one recorded seed.
import type { FreshSeedTable } from './lessonRobustness';

export type CurveMetric = 'success' | 'mi';
export type CurveArm = 'vanilla' | 'starpoS';
export const CURVE_ARMS: readonly CurveArm[] = ['vanilla', 'starpoS'];

export interface SeedCurve {
  arm: CurveArm;
  seed: number;
  /** One value per step of SeedCurves.steps; null where this seed has none. */
  values: (number | null)[];
}

export interface SeedCurves {
  metric: CurveMetric;
  /** Every step any seed has a value at, ascending. */
  steps: number[];
  curves: SeedCurve[];
  /** Each arm's mean over the seeds that have a value at the step (null where none has). */
  mean: Record<CurveArm, (number | null)[]>;
}

/** The table's curves of one metric, or null when no row carries them (older tables; MI on a run without it). */
export function seedCurves(table: FreshSeedTable, metric: CurveMetric): SeedCurves | null {
  const arms = table.rows.flatMap((row) =>
    CURVE_ARMS.flatMap((arm) => {
      const s = row.series?.[arm];
      const values = s && (metric === 'success' ? s.success : s.mi);
      return s && values ? [{ arm, seed: row.seed, step: s.step, values }] : [];
    }),
  );
  if (arms.length === 0) return null;
  const steps = [...new Set(arms.flatMap((a) => a.step))].sort((a, b) => a - b);
  const index = new Map(steps.map((s, i) => [s, i]));
  const curves: SeedCurve[] = arms.map((a) => {
    const values: (number | null)[] = steps.map(() => null);
    a.step.forEach((s, i) => (values[index.get(s)!] = a.values[i]));
    return { arm: a.arm, seed: a.seed, values };
  });
  const meanOf = (arm: CurveArm) =>
    steps.map((_, i) => {
      const xs = curves
        .filter((c) => c.arm === arm)
        .map((c) => c.values[i])
        .filter((v): v is number => v !== null);
      return xs.length === 0 ? null : xs.reduce((a, b) => a + b, 0) / xs.length;
    });
  return { metric, steps, curves, mean: { vanilla: meanOf('vanilla'), starpoS: meanOf('starpoS') } };
}

/** The last non-null value of a series (the legend's "at the end"), or null. */
export function lastValue(values: readonly (number | null)[]): number | null {
  for (let i = values.length - 1; i >= 0; i--) if (values[i] !== null) return values[i];
  return null;
}
