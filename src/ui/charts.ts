// What the live charts plot, and the data in the shape uPlot wants. Pure TypeScript (Chart.svelte draws it).
//
// Each chart is named by its main metric key (the DOM gets `data-testid="chart-<key>"`, DESIGN.md) and may draw
// companion series (e.g. the chosen groups' std next to the in-group std). In classroom mode several runs (arms)
// share one chart: their series are overlaid, one colour per arm.
import { EchoTrapDetector } from '../metrics/echoTrap';
import type { MetricRow } from '../metrics/jsonl';
import { defaultRunConfig } from '../starpo/config';

export interface ChartSpec {
  /** The main metric key: the chart's test id is `chart-<key>`. */
  key: string;
  title: string;
  /** Every key drawn, the main one first. */
  series: string[];
}

/** Train success keys present in the rows (`train/<Tag>/success`), in first-seen order. */
export function successKeys(rows: readonly MetricRow[]): string[] {
  const keys = new Set<string>();
  for (const row of rows) for (const k of Object.keys(row)) if (/^train\/[^/]+\/success$/.test(k)) keys.add(k);
  return [...keys];
}

/**
 * The playground's charts (issue #5: success, reward mean and in-group std, entropy, gradient norm, response and
 * reasoning length). `trainTags` are the run's training env tags (success is per tag, RAGEN's keys); validation
 * success of the same tag is drawn on the same chart.
 */
export function chartSpecs(trainTags: readonly string[]): ChartSpec[] {
  const success = trainTags.map((tag) => ({
    key: `train/${tag}/success`,
    title: `${tag} success`,
    series: [`train/${tag}/success`, `val-env/${tag}/success`],
  }));
  return [
    ...success,
    // RAGEN logs the groups' mean reward as rollout/in_group_mean; critic/score/mean adds the format penalty.
    { key: 'rollout/in_group_mean', title: 'reward mean', series: ['rollout/in_group_mean', 'critic/score/mean'] },
    { key: 'rollout/in_group_std', title: 'in-group reward std', series: ['rollout/in_group_std', 'rollout/chosen_in_group_std'] },
    { key: 'actor/entropy_loss', title: 'entropy', series: ['actor/entropy_loss'] },
    { key: 'actor/grad_norm', title: 'gradient norm', series: ['actor/grad_norm'] },
    { key: 'response_length/mean', title: 'response length (tokens)', series: ['response_length/mean'] },
    { key: 'reasoning_length/mean', title: 'reasoning length (tokens in <think>)', series: ['reasoning_length/mean'] },
  ];
}

/** One run's rows with a label (the arm name in classroom mode). */
export interface LabelledRows {
  label: string;
  rows: readonly MetricRow[];
}

export interface ChartData {
  /** Series labels, parallel to `columns.slice(1)`: "key" for one run, "label: key" when runs are overlaid. */
  labels: string[];
  /** uPlot's columnar data: x (steps, ascending) first, then one column per series, null where no value. */
  columns: [number[], ...(number | null)[][]];
}

/**
 * The columns of one chart over the union of the runs' steps. A series that has no finite value anywhere is
 * left out (e.g. critic/score/mean in a run that does not log it), so the legend lists only what is drawn.
 */
export function chartData(spec: ChartSpec, runs: readonly LabelledRows[]): ChartData {
  const steps = [...new Set(runs.flatMap((r) => r.rows.map((row) => row.step)))].sort((a, b) => a - b);
  const index = new Map(steps.map((s, i) => [s, i]));
  const labels: string[] = [];
  const columns: (number | null)[][] = [];
  for (const run of runs) {
    for (const key of spec.series) {
      const column: (number | null)[] = steps.map(() => null);
      let any = false;
      for (const row of run.rows) {
        const v = row[key];
        if (typeof v === 'number' && Number.isFinite(v)) {
          column[index.get(row.step)!] = v;
          any = true;
        }
      }
      if (!any) continue;
      labels.push(runs.length > 1 ? `${run.label}: ${key}` : key);
      columns.push(column);
    }
  }
  return { labels, columns: [steps, ...columns] };
}

export interface EchoTrapMark {
  step: number;
  /** Why it fired, when known (the detector's sentence). */
  reason: string | null;
}

/**
 * Where the echo-trap warning fired in a run: the first row with `echo_trap/warning` = 1 (the Trainer logs it).
 * Rows without any echo_trap key (a metrics.jsonl from elsewhere) are fed through the same detector the Trainer
 * uses, with its default settings.
 */
export function echoTrapMark(rows: readonly MetricRow[]): EchoTrapMark | null {
  const logged = rows.some((r) => 'echo_trap/warning' in r);
  if (logged) {
    const row = rows.find((r) => r['echo_trap/warning'] === 1);
    return row ? { step: row.step, reason: null } : null;
  }
  const detector = new EchoTrapDetector(defaultRunConfig().echoTrap);
  for (const row of [...rows].sort((a, b) => a.step - b.step)) detector.update(row.step, row);
  const report = detector.report();
  return report.fired && report.firstFiredStep !== null ? { step: report.firstFiredStep, reason: report.reason } : null;
}

/** Series colours: a run's series share a hue family so overlaid arms stay apart. */
export const SERIES_COLOURS = ['#2563eb', '#93c5fd', '#dc2626', '#fca5a5', '#059669', '#6ee7b7'];
