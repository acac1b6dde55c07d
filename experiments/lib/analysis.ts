// From metrics.jsonl rows to the numbers the findings report: series per metric, and per run the peak and final
// success and when the echo-trap signs (in-group reward std, entropy) fell.
import * as fs from 'node:fs';
import * as path from 'node:path';

/** A metrics.jsonl row: numbers, except the text metric `echo_trap/signal` (src/metrics/jsonl.ts TEXT_METRIC_KEYS). */
export type MetricsRow = Record<string, number | string> & { step: number };
export type Series = [step: number, value: number][];

export function readMetrics(dir: string): MetricsRow[] {
  const file = path.join(dir, 'metrics.jsonl');
  if (!fs.existsSync(file)) return [];
  const byStep = new Map<number, MetricsRow>();
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    if (!line.trim()) continue;
    try {
      const row = JSON.parse(line) as MetricsRow;
      byStep.set(row.step, row);   // a resumed run may repeat a step: the later line wins
    } catch {
      // a line cut off by a killed run
    }
  }
  return [...byStep.values()].sort((a, b) => a.step - b.step);
}

/** [step, value] for every row that has `key` as a finite number. */
export function series(rows: readonly MetricsRow[], key: string): Series {
  const out: Series = [];
  for (const r of rows) {
    const v = r[key];
    if (typeof v === 'number' && Number.isFinite(v)) out.push([r.step, v]);
  }
  return out;
}

/** The env tag a run trains on, read from its metric keys (train/<Tag>/success). */
export function trainTag(rows: readonly MetricsRow[]): string | null {
  for (const r of rows) for (const k of Object.keys(r)) {
    const m = /^train\/([^/]+)\/success$/.exec(k);
    if (m) return m[1];
  }
  return null;
}

/** Centred-free trailing moving average over `window` points (fewer at the start). */
export function movingAverage(s: Series, window: number): Series {
  return s.map(([step], i) => {
    const part = s.slice(Math.max(0, i - window + 1), i + 1);
    return [step, part.reduce((a, [, v]) => a + v, 0) / part.length];
  });
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
  valStart: number | null;      // validation success before training (step 0)
  valPeak: number | null;
  valPeakStep: number | null;
  valFinal: number | null;
  trainPeak: number | null;     // training-batch success, 5-step moving average
  trainPeakStep: number | null;
  trainFinal: number | null;
  stdDropStep: number | null;   // first step the in-group reward std fell below half its early level
  entropyDropStep: number | null;
  gradNormSpikeStep: number | null;  // first step flagged by the trainer's grad-norm spike detector
  echoWarningStep: number | null;    // first step the trainer's echo-trap warning fired
  echoWarningSignal: string | null;  // what fired it (echo_trap/signal, e.g. 'reward_std+entropy')
}

export const KEYS = {
  std: 'rollout/in_group_std',
  entropy: 'actor/entropy_loss',
  gradNorm: 'actor/grad_norm',
  reasoning: 'reasoning_length/mean',
} as const;

export function summarise(rows: readonly MetricsRow[]): RunSummary {
  const tag = trainTag(rows);
  const val = tag ? series(rows, `val-env/${tag}/success`) : [];
  const train = tag ? movingAverage(series(rows, `train/${tag}/success`), 5) : [];
  const peak = (s: Series) => s.reduce<[number, number] | null>((best, p) => (best === null || p[1] > best[1] ? p : best), null);
  const firstFlag = (key: string) => rows.find((r) => r[key] === 1)?.step ?? null;
  const firstText = (flag: string, key: string) => {
    const v = rows.find((r) => r[flag] === 1)?.[key];
    return typeof v === 'string' ? v : null;
  };
  const vp = peak(val), tp = peak(train);
  return {
    steps: rows.length ? rows[rows.length - 1].step : 0,
    tag,
    valStart: val.find(([s]) => s === 0)?.[1] ?? null,
    valPeak: vp?.[1] ?? null,
    valPeakStep: vp?.[0] ?? null,
    valFinal: val.length ? val[val.length - 1][1] : null,
    trainPeak: tp?.[1] ?? null,
    trainPeakStep: tp?.[0] ?? null,
    trainFinal: train.length ? train[train.length - 1][1] : null,
    stdDropStep: firstDrop(series(rows, KEYS.std), 0.5),
    entropyDropStep: firstDrop(series(rows, KEYS.entropy), 0.5),
    gradNormSpikeStep: firstFlag('echo_trap/grad_norm_spike'),
    echoWarningStep: firstFlag('echo_trap/warning'),
    echoWarningSignal: firstText('echo_trap/warning', 'echo_trap/signal'),
  };
}
