// From metrics.jsonl rows to the numbers the findings report: series per metric, and per run the peak and final
// success and when the echo-trap signs (in-group reward std, entropy) fell. Reading the file, the success keys and
// the per-key summaries are the product's (src/metrics): this file adds only what the findings need besides.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { defaultRunConfig } from '../../src/starpo/config';
import type { MetricRow } from '../../src/metrics/jsonl';
import { METRICS_FILE, readMetricsJsonl } from '../../src/metrics/jsonlSink';
import { trainSuccessKey, valSuccessKey } from '../../src/metrics/keys';
import { summarizeMetrics, summarizeSeries } from '../../src/metrics/summary';
import { movingAverage, series, trainTag, type Series } from '../../src/metrics/lessonVerdict';

export { movingAverage, series, trainTag, type Series };

/** A metrics.jsonl row: numbers, except the text metric `echo_trap/signal` (src/metrics/jsonl.ts TEXT_METRIC_KEYS). */
export type MetricsRow = MetricRow;

/** The seed-S folders of a lesson-lab directory (experiments/lab/lesson-lab.sh), in seed order: seed-9 before seed-10. */
export function labSeedDirs(dir: string): string[] {
  return fs
    .readdirSync(dir)
    .filter((n) => /^seed-\d+$/.test(n))
    .sort((a, b) => Number(a.slice(5)) - Number(b.slice(5)));
}

/**
 * The rows of `dir`/metrics.jsonl by step ([] when there is none yet), read as `ragen train --resume` reads them (a
 * line cut off by a killed run is dropped). A step logged twice keeps its later line: a run resumed by hand after
 * its metrics were copied elsewhere may repeat one.
 */
export function readMetrics(dir: string): MetricsRow[] {
  const file = path.join(dir, METRICS_FILE);
  if (!fs.existsSync(file)) return [];
  const byStep = new Map<number, MetricsRow>();
  for (const row of readMetricsJsonl(file)) byStep.set(row.step, row);
  return [...byStep.values()].sort((a, b) => a.step - b.step);
}

/**
 * The first step at which the trailing `window`-step mean of a series falls below `fraction` of its mean over the
 * first `window` steps (RAGEN's warning signs: reward std and entropy falling from their early level), or null.
 */
export function firstDrop(s: Series, fraction: number, window = 5): number | null {
  if (s.length < 2 * window) return null;
  const early = s.slice(0, window).reduce((a, [, v]) => a + v, 0) / window;
  if (!(early > 0)) return null;
  const smooth = movingAverage(s, window);
  for (let i = window; i < smooth.length; i++) if (smooth[i][1] < fraction * early) return smooth[i][0];
  return null;
}

export interface RunSummary {
  steps: number;
  tag: string | null;
  valStart: number | null; // validation success before training (step 0)
  valPeak: number | null;
  valPeakStep: number | null;
  valFinal: number | null;
  trainPeak: number | null; // training-batch success, 5-step moving average
  trainPeakStep: number | null;
  trainFinal: number | null;
  stdDropStep: number | null; // first step the in-group reward std fell below half its early level
  entropyDropStep: number | null;
  gradNormSpikeStep: number | null; // first step flagged by the trainer's grad-norm spike detector
  echoWarningStep: number | null; // first step the trainer's echo-trap warning fired
  echoWarningSignal: string | null; // what fired it (echo_trap/signal, e.g. 'reward_std+entropy')
}

export const KEYS = {
  std: 'rollout/in_group_std',
  entropy: 'actor/entropy_loss',
  gradNorm: 'actor/grad_norm',
  reasoning: 'reasoning_length/mean',
} as const;

export function summarise(rows: readonly MetricsRow[]): RunSummary {
  const tag = trainTag(rows);
  // Validation success and the trainer's echo-trap flags as `ragen train` reports them at the end of a run; the
  // warning only as the run logged it (summarizeMetrics would replay it on rows that carry none).
  const product = summarizeMetrics(rows, { echoTrap: defaultRunConfig().echoTrap });
  const val = tag ? product.series[valSuccessKey(tag)] : undefined;
  const logged = product.echoTrap.source === 'logged' ? product.echoTrap : null;
  // Training-batch success is noisy: its peak and final value are those of the 5-step moving average.
  const smoothed = tag
    ? movingAverage(series(rows, trainSuccessKey(tag)), 5).map(([step, value]) => ({ step, value }))
    : [];
  const train = summarizeSeries(smoothed, 'value');
  return {
    steps: rows.length ? rows[rows.length - 1].step : 0,
    tag,
    valStart: val?.first.step === 0 ? val.first.value : null, // steps start at 0: a value there comes first
    valPeak: val?.peak.value ?? null,
    valPeakStep: val?.peak.step ?? null,
    valFinal: val?.last.value ?? null,
    trainPeak: train?.peak.value ?? null,
    trainPeakStep: train?.peak.step ?? null,
    trainFinal: train?.last.value ?? null,
    stdDropStep: firstDrop(series(rows, KEYS.std), 0.5),
    entropyDropStep: firstDrop(series(rows, KEYS.entropy), 0.5),
    gradNormSpikeStep: logged?.gradNormSpikeStep ?? null,
    echoWarningStep: logged?.firedStep ?? null,
    echoWarningSignal: logged?.signal ?? null,
  };
}
