// A run in a few numbers, from its metrics rows: first / peak / last of success, reward std and entropy (the
// paper's collapse indicators) and when the echo-trap warning fired. Used by the CLI's end-of-run report and
// the docs. Browser-safe: give it rows from `readMetricsJsonl` (Node) or `parseMetricsJsonl` (text).

import { EchoTrapDetector, SIGNAL_KEY, type EchoTrapConfig } from './echoTrap';
import { metricText, type MetricRow } from './jsonl';
import { isSuccessKey } from './keys';

export interface Point {
  step: number;
  value: number;
}

export interface SeriesSummary {
  /** First finite value and its step. */
  first: Point;
  /** Largest value (earliest step on ties). */
  peak: Point;
  /** Smallest value (earliest step on ties). */
  min: Point;
  /** Last finite value and its step. */
  last: Point;
  /** How many rows had a finite value. */
  count: number;
}

export interface RunSummary {
  /** Number of rows (training steps logged). */
  steps: number;
  firstStep: number | null;
  lastStep: number | null;
  /** Per summarised key; a key with no finite value anywhere is absent. */
  series: Record<string, SeriesSummary>;
  echoTrap: {
    /** Step at which the warning fired, or null. */
    firedStep: number | null;
    /** What fired (`echo_trap/signal`, e.g. 'reward_std+entropy'), or null. */
    signal: string | null;
    /** First step with a gradient-norm spike, or null. */
    gradNormSpikeStep: number | null;
    /** 'logged': read from echo_trap/* keys in the rows; 'replayed': recomputed with a fresh detector. */
    source: 'logged' | 'replayed';
  };
}

/** The keys summarised besides every `train/<Tag>/success` and `val-env/<Tag>/success` in the rows. */
export const SUMMARY_KEYS = [
  'rollout/in_group_std',
  'actor/entropy_loss',
  'actor/grad_norm',
  'response_length/mean',
  'reasoning_length/mean',
];

/** first / peak / min / last of one key over the rows (NaN and missing values skipped), or null if none. */
export function summarizeSeries(rows: readonly MetricRow[], key: string): SeriesSummary | null {
  let s: SeriesSummary | null = null;
  for (const row of rows) {
    const value = row[key];
    if (typeof value !== 'number' || !Number.isFinite(value)) continue;
    const p = { step: row.step, value };
    if (!s) {
      s = { first: p, peak: p, min: p, last: p, count: 1 };
      continue;
    }
    if (value > s.peak.value) s.peak = p;
    if (value < s.min.value) s.min = p;
    s.last = p;
    s.count += 1;
  }
  return s;
}

export interface SummaryOptions {
  /** Detector settings (the run's `echoTrap` config) for rows that carry no echo_trap/* keys: the warning is replayed. */
  echoTrap: EchoTrapConfig;
}

export function summarizeMetrics(rows: readonly MetricRow[], opts: SummaryOptions): RunSummary {
  const sorted = [...rows].sort((a, b) => a.step - b.step);
  const keys = new Set<string>();
  for (const row of sorted) for (const k of Object.keys(row)) if (isSuccessKey(k)) keys.add(k);
  const series: Record<string, SeriesSummary> = {};
  for (const key of [...[...keys].sort(), ...SUMMARY_KEYS]) {
    const s = summarizeSeries(sorted, key);
    if (s) series[key] = s;
  }
  return {
    steps: sorted.length,
    firstStep: sorted.length > 0 ? sorted[0].step : null,
    lastStep: sorted.length > 0 ? sorted[sorted.length - 1].step : null,
    series,
    echoTrap: echoTrapSteps(sorted, opts.echoTrap),
  };
}

function echoTrapSteps(rows: readonly MetricRow[], config: EchoTrapConfig): RunSummary['echoTrap'] {
  const logged = rows.some((r) => 'echo_trap/warning' in r);
  if (logged) {
    const fired = rows.find((r) => r['echo_trap/warning'] === 1);
    const spike = rows.find((r) => r['echo_trap/grad_norm_spike'] === 1);
    return {
      firedStep: fired?.step ?? null,
      signal: fired ? metricText(fired, SIGNAL_KEY) : null,
      gradNormSpikeStep: spike?.step ?? null,
      source: 'logged',
    };
  }
  const detector = new EchoTrapDetector(config);
  for (const row of rows) detector.update(row.step, row);
  const report = detector.report();
  return {
    firedStep: report.firstFiredStep,
    signal: report.signal,
    gradNormSpikeStep: report.firstGradNormSpikeStep,
    source: 'replayed',
  };
}

/** A short plain-text report, one line per series, for the CLI. */
export function formatSummary(summary: RunSummary): string {
  const n = (v: number) =>
    Math.abs(v) >= 1000 || (v !== 0 && Math.abs(v) < 0.001) ? v.toExponential(2) : v.toFixed(3);
  const at = (p: Point) => `${n(p.value)} @${p.step}`;
  const lines = [`steps: ${summary.steps}${summary.steps > 0 ? ` (${summary.firstStep}..${summary.lastStep})` : ''}`];
  for (const [key, s] of Object.entries(summary.series)) {
    lines.push(`${key}: first ${at(s.first)}, peak ${at(s.peak)}, last ${at(s.last)}`);
  }
  const e = summary.echoTrap;
  lines.push(
    `echo trap warning: ${e.firedStep === null ? 'not fired' : `fired at step ${e.firedStep}${e.signal ? ` (signal: ${e.signal})` : ''}`}` +
      `; grad-norm spike: ${e.gradNormSpikeStep === null ? 'none' : `step ${e.gradNormSpikeStep}`}` +
      (e.source === 'replayed' ? ' (replayed from the logged metrics)' : ''),
  );
  return lines.join('\n');
}
