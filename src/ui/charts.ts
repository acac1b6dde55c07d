// What the live charts plot, and the data in the shape uPlot wants. Pure TypeScript (Chart.svelte draws it).
//
// Each chart is named by its main metric key (the DOM gets `data-testid="chart-<key>"`, docs/architecture.md), says
// what its y axis measures (label and unit) and what to watch for, and may draw companion series (validation next to
// training success, the kept groups' std next to all groups'), dashed. When several runs (arms) share a chart, as in
// the classroom's StarPO vs StarPO-S, each arm has ONE colour on every chart: the colour belongs to the arm, the line
// style to the series.
import { EchoTrapDetector, SIGNAL_KEY } from '../metrics/echoTrap';
import { metricNumber, metricText, type MetricRow } from '../metrics/jsonl';
import { isSuccessKey } from '../metrics/keys';
import { defaultRunConfig } from '../starpo/config';

export interface SeriesSpec {
  key: string;
  /** Short name in the legend, e.g. 'validation'. */
  label: string;
  /** Companion series are dashed; the chart's main series is solid. */
  dashed: boolean;
}

export interface ChartSpec {
  /** The main metric key: the chart's test id is `chart-<key>`. */
  key: string;
  title: string;
  /** Every series drawn, the main one first. */
  series: SeriesSpec[];
  /** The y axis label, with its unit: short, it runs along a 180 px axis. */
  yLabel: string;
  /** The metric's unit where the axis label is in plain words instead (the lesson's charts). */
  unit?: string;
  /** A fixed y range (success rates: 0 to 1, so 0.4 to 0.5 does not look like a leap); otherwise it fits the data. */
  range?: [number, number];
  /** One line for a newcomer: what this curve shows and what to watch for. */
  watch: string;
}

/** Train success keys present in the rows (`train/<Tag>/success`), in first-seen order. */
export function successKeys(rows: readonly MetricRow[]): string[] {
  const keys = new Set<string>();
  for (const row of rows) for (const k of Object.keys(row)) if (isSuccessKey(k, 'train')) keys.add(k);
  return [...keys];
}

/** What "success" means in an env, when it is not obvious. */
function successMeaning(tag: string): string {
  if (tag.startsWith('Bandit')) {
    return 'Success = the agent picked the arm with the higher expected reward (one pull’s reward is random, so a success can pay 0).';
  }
  if (tag.includes('Sokoban')) return 'Success = every box pushed onto a target within the turn budget.';
  if (tag.includes('FrozenLake'))
    return 'Success = reached the goal without falling into a hole (the ice is slippery).';
  return 'Success = the episode was solved.';
}

const solid = (key: string, label: string): SeriesSpec => ({ key, label, dashed: false });
const dashed = (key: string, label: string): SeriesSpec => ({ key, label, dashed: true });
/** A chart named by its main series, the first one. */
const chart = (title: string, yLabel: string, series: SeriesSpec[], watch: string): ChartSpec => ({
  key: series[0].key,
  title,
  series,
  yLabel,
  watch,
});

/** RAGEN-2's input-dependence signal: the mutual information between a first turn's prompt and its reasoning. */
export const INPUT_DEPENDENCE_KEY = 'collapse_first_turn_sample/mi_estimate';

/** Whether any row logged the input-dependence signal (a run with `collapse.enabled`). */
export function hasInputDependence(rows: readonly MetricRow[]): boolean {
  return rows.some((row) => Number.isFinite(row[INPUT_DEPENDENCE_KEY]));
}

const inputDependenceChart = (): ChartSpec =>
  chart(
    'input dependence of the reasoning',
    'MI, nats',
    [solid(INPUT_DEPENDENCE_KEY, 'prompt ↔ reasoning')],
    'How much the reasoning depends on which prompt it sees (RAGEN-2’s mutual information, every few steps). A fall ' +
      'while success holds means the reasoning has become a template that ignores its input: the echo trap’s first stage.',
  );

/**
 * The playground's charts: success, reward mean and in-group std, entropy, gradient norm, response and reasoning
 * length; with `inputDependence`, RAGEN-2's MI after success. `trainTags` are the run's training env tags
 * (success is per tag, RAGEN's keys); validation success of the same tag is drawn on the same chart.
 */
export function chartSpecs(trainTags: readonly string[], inputDependence = false): ChartSpec[] {
  const success: ChartSpec[] = trainTags.map((tag) => ({
    ...chart(
      `${tag} success`,
      'success rate',
      [solid(`train/${tag}/success`, 'training'), dashed(`val-env/${tag}/success`, 'validation')],
      `${successMeaning(tag)} It should rise; validation (dashed) plays fixed held-out states.`,
    ),
    range: [0, 1],
  }));
  return [
    ...success,
    ...(inputDependence ? [inputDependenceChart()] : []),
    // RAGEN logs the groups' mean reward as rollout/in_group_mean; critic/score/mean adds the format penalty.
    chart(
      'reward mean',
      'reward / episode',
      [
        solid('rollout/in_group_mean', 'env reward, all groups'),
        dashed('critic/score/mean', 'trained score, kept groups only (with format penalty)'),
      ],
      'Average reward of this step’s episodes. The dashed line is what training sees: the format penalty included, ' +
        'averaged over the groups the filter kept only, so it can sit above the env reward of all groups.',
    ),
    chart(
      'in-group reward std',
      'reward std',
      [solid('rollout/in_group_std', 'all groups'), dashed('rollout/chosen_in_group_std', 'groups kept by the filter')],
      'How much the N rollouts of one starting state disagree. An early fall towards 0 is the echo-trap warning sign.',
    ),
    chart(
      'entropy',
      'nats / token',
      [solid('actor/entropy_loss', 'policy entropy')],
      'How unsure the policy is per token. A collapse means it keeps repeating the same answers.',
    ),
    chart(
      'gradient norm',
      'L2 norm',
      [solid('actor/grad_norm', 'actor gradient')],
      'Size of each update. Spikes tend to come with a collapse, after the warning signs.',
    ),
    chart(
      'response length',
      'tokens / answer',
      [solid('response_length/mean', 'response')],
      'Tokens the policy writes per answer (think + answer).',
    ),
    chart(
      'reasoning length',
      'tokens / think',
      [solid('reasoning_length/mean', 'inside <think>')],
      'Shrinking reasoning can mean the policy is settling on fixed templates.',
    ),
  ];
}

/**
 * The classroom lesson's charts, in the order the echo trap unfolds: success (and, in the mechanism lesson, the
 * reasoning's input dependence), then the early signs (in-group reward std, entropy), then the late ones
 * (gradient-norm spikes, shrinking reasoning). Fewer and larger than the playground's, for a projector.
 */
export function lessonChartSpecs(trainTags: readonly string[], inputDependence = false): ChartSpec[] {
  const order = [
    ...(inputDependence ? [INPUT_DEPENDENCE_KEY] : []),
    'rollout/in_group_std',
    'actor/entropy_loss',
    'actor/grad_norm',
    'reasoning_length/mean',
  ];
  const all = chartSpecs(trainTags, inputDependence);
  return [...all.filter((s) => isSuccessKey(s.key, 'train')), ...order.map((key) => all.find((s) => s.key === key)!)];
}

/** One run's rows with a label (the arm name in classroom mode). */
export interface LabelledRows {
  label: string;
  rows: readonly MetricRow[];
}

/**
 * Arm colours, in arm order: dark enough for text contrast >= 4.5:1 on white (so also for lines), and told apart
 * with common colour blindness (blue / orange first).
 */
export const ARM_COLOURS = ['#1d4ed8', '#c2410c', '#047857', '#7e22ce'] as const;

/** The colour of the run at `index` among the runs on screen: the same on every chart. */
export function armColour(index: number): string {
  return ARM_COLOURS[index % ARM_COLOURS.length];
}

export interface ChartSeries {
  /** The run (arm) it belongs to. */
  arm: string;
  key: string;
  /** The legend's text: the series label, prefixed with the arm when several runs share the chart. */
  label: string;
  colour: string;
  dashed: boolean;
  /** One value per step of `ChartData.steps`; null where the run logged none. */
  values: (number | null)[];
  /** The newest finite value (what the legend shows when not hovering). */
  last: number | null;
}

export interface ChartData {
  /** x: the union of the runs' steps, ascending. */
  steps: number[];
  series: ChartSeries[];
}

/**
 * The series of one chart over the union of the runs' steps. A series that has no finite value anywhere is left
 * out (e.g. critic/score/mean in a run that does not log it), so the legend lists only what is drawn.
 */
export function chartData(spec: ChartSpec, runs: readonly LabelledRows[]): ChartData {
  const steps = [...new Set(runs.flatMap((r) => r.rows.map((row) => row.step)))].sort((a, b) => a - b);
  const index = new Map(steps.map((s, i) => [s, i]));
  const series: ChartSeries[] = [];
  runs.forEach((run, armIndex) => {
    for (const s of spec.series) {
      const values: (number | null)[] = steps.map(() => null);
      let last: number | null = null;
      let lastStep = -Infinity;
      for (const row of run.rows) {
        const v = row[s.key];
        if (typeof v === 'number' && Number.isFinite(v)) {
          values[index.get(row.step)!] = v;
          if (row.step >= lastStep) [last, lastStep] = [v, row.step];
        }
      }
      if (last === null) continue;
      series.push({
        arm: run.label,
        key: s.key,
        label: runs.length > 1 ? `${run.label} · ${s.label}` : s.label,
        colour: armColour(armIndex),
        dashed: s.dashed,
        values,
        last,
      });
    }
  });
  return { steps, series };
}

/** A legend value: 3 significant digits, '–' for none. */
export function formatValue(v: number | null): string {
  if (v === null || !Number.isFinite(v)) return '–';
  if (v === 0) return '0';
  const abs = Math.abs(v);
  if (abs >= 1000 || abs < 0.001) return v.toExponential(2);
  return Number(v.toPrecision(3)).toString();
}

/** An echo-trap warning as a chart marks it: the step, the arm it belongs to (and its colour), what fired. */
export interface ChartMark {
  step: number;
  arm: string;
  colour: string;
  text: string;
}

export interface EchoTrapMark {
  /** The step at which the warning fired. */
  step: number;
  /** In-group reward std, entropy and the MI z-score EMA at that step, as fractions of their early baseline (NaN when unknown). */
  rewardStdRatio: number;
  entropyRatio: number;
  miRatio: number;
  /** What fired, as the run logged it in `echo_trap/signal` (e.g. 'reward_std+entropy'), or what the replay found. */
  signal: string | null;
}

/**
 * Where the echo-trap warning fired in a run: the first row with `echo_trap/warning` = 1 (the Trainer logs it,
 * with the ratios and the signal that fired it). Rows without any echo_trap key (a metrics.jsonl from elsewhere) are
 * fed through the same detector the Trainer uses, with its default settings.
 */
export function echoTrapMark(rows: readonly MetricRow[]): EchoTrapMark | null {
  const sorted = [...rows].sort((a, b) => a.step - b.step);
  if (sorted.some((r) => 'echo_trap/warning' in r)) {
    const row = sorted.find((r) => r['echo_trap/warning'] === 1);
    if (!row) return null;
    return {
      step: row.step,
      rewardStdRatio: metricNumber(row, 'echo_trap/reward_std_ratio'),
      entropyRatio: metricNumber(row, 'echo_trap/entropy_ratio'),
      miRatio: metricNumber(row, 'echo_trap/mi_ratio'),
      signal: metricText(row, SIGNAL_KEY),
    };
  }
  const detector = new EchoTrapDetector(defaultRunConfig().echoTrap);
  for (const row of sorted) {
    const out = detector.update(row.step, row);
    if (out['echo_trap/warning'] === 1) {
      return {
        step: row.step,
        rewardStdRatio: out['echo_trap/reward_std_ratio'],
        entropyRatio: out['echo_trap/entropy_ratio'],
        miRatio: out['echo_trap/mi_ratio'],
        signal: detector.report().signal,
      };
    }
  }
  return null;
}

/** How each part of `echo_trap/signal` reads in the explanation, and the ratio it shows. */
const SIGNAL_WORDS: Record<string, { words: string; ratio: (m: EchoTrapMark) => number }> = {
  reward_std: { words: 'in-group reward std', ratio: (m) => m.rewardStdRatio },
  entropy: { words: 'entropy', ratio: (m) => m.entropyRatio },
  mi_zscore_ema: { words: 'the input dependence of the reasoning (MI z-score)', ratio: (m) => m.miRatio },
};

/**
 * One line saying what fired, e.g. "fired at step 8: in-group reward std fell to 5% and entropy to 10% of their
 * early level (signal: reward_std+entropy)". Names the signals of `echo_trap/signal`; a row without one (an older
 * run) is explained from the ratios it has.
 */
export function echoTrapExplanation(mark: EchoTrapMark): string {
  const pct = (r: number) => `${Math.round(r * 100)}%`;
  const named = mark.signal ? mark.signal.split('+').filter((n) => n in SIGNAL_WORDS) : [];
  const names = named.length
    ? named
    : ['reward_std', 'entropy'].filter((n) => Number.isFinite(SIGNAL_WORDS[n].ratio(mark)));
  const parts = names
    .filter((n) => Number.isFinite(SIGNAL_WORDS[n].ratio(mark)))
    .map((n, i) => `${SIGNAL_WORDS[n].words}${i === 0 ? ' fell' : ''} to ${pct(SIGNAL_WORDS[n].ratio(mark))}`);
  const what =
    parts.length > 1
      ? `${parts.slice(0, -1).join(', ')} and ${parts[parts.length - 1]} of their early level`
      : parts.length === 1
        ? `${parts[0]} of its early level`
        : 'in-group reward std and entropy fell far below their early level';
  return `fired at step ${mark.step}: ${what}${mark.signal ? ` (signal: ${mark.signal})` : ''}`;
}
