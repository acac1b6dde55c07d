// The Echo Trap lesson's one verdict, shared by the lesson page, `ragen lesson` and experiments/: for one run, did
// it improve, warn, collapse, hold; for one training seed, did vanilla StarPO fall while StarPO-S held above it; and
// over many runs, how often each arm collapsed or held, with a 95% Wilson interval and one sentence a class reads.
//
// All on the training-batch success (`train/<tag>/success`, the lesson's main curve), smoothed by a trailing moving
// average of `window` steps:
//   improves   its peak is at least `minGain` above where it started;
//   warns      the trainer's echo-trap warning (`echo_trap/warning`) fired, at or before the collapse if any;
//   collapses  the smoothed success falls to `collapseFraction` of its best so far or less, once the run has
//              improved (a later recovery does not undo a collapse: the class saw it happen);
//   holds      the run ends within `holdTolerance` of its own peak;
//   ends above StarPO-S's final success is at least `margin` above vanilla's on the same seed.
// CollapseWatch applies the collapse rule online, one training step at a time, so that a trainer can stop a run a
// few steps after its collapse (`trainer.stopAfterCollapse`) by exactly the rule the verdict later reads.
import type { MetricRow } from './jsonl';
import { parseSuccessKey } from './keys';
import { wilsonInterval } from './wilson';

export type Series = [step: number, value: number][];

export interface LessonCriteria {
  window: number;
  minGain: number;
  collapseFraction: number;
  holdTolerance: number;
  margin: number;
}

/** The lesson's numbers: a collapse is a fall to half the best so far; StarPO-S within 10 points of its peak and 20 above. */
export const LESSON_CRITERIA: LessonCriteria = {
  window: 5,
  minGain: 0.1,
  collapseFraction: 0.5,
  holdTolerance: 0.1,
  margin: 0.2,
};

/** [step, value] for every row that has `key` as a finite number. */
export function series(rows: readonly MetricRow[], key: string): Series {
  const out: Series = [];
  for (const r of rows) {
    const v = r[key];
    if (typeof v === 'number' && Number.isFinite(v)) out.push([r.step, v]);
  }
  return out;
}

/** The env tag a run trains on, read from its metric keys (train/<Tag>/success); the first one when there are several. */
export function trainTag(rows: readonly MetricRow[]): string | null {
  for (const r of rows)
    for (const k of Object.keys(r)) {
      const parsed = parseSuccessKey(k);
      if (parsed?.split === 'train') return parsed.tag;
    }
  return null;
}

/** Trailing moving average over `window` points (fewer at the start). */
export function movingAverage(s: Series, window: number): Series {
  return s.map(([step], i) => {
    const part = s.slice(Math.max(0, i - window + 1), i + 1);
    return [step, part.reduce((a, [, v]) => a + v, 0) / part.length];
  });
}

/** Where the collapse rule stands after some steps: plain JSON, so a checkpoint can carry it across a resume. */
export interface CollapseWatchState {
  /** The last `window` raw success values. */
  recent: number[];
  /** The first smoothed value (the run's start). */
  start: number | null;
  best: { step: number; value: number } | null;
  collapse: { step: number; peak: number; peakStep: number } | null;
}

/**
 * The collapse rule, online: feed it each training step's success in step order; it reports the step the smoothed
 * success first fell to `collapseFraction` of its best so far, once the best was `minGain` above the start. The
 * same rule as runVerdict's collapseStep on the same rows (a test holds the two together).
 */
export class CollapseWatch {
  private s: CollapseWatchState = { recent: [], start: null, best: null, collapse: null };

  constructor(private readonly c: LessonCriteria = LESSON_CRITERIA) {}

  static fromState(state: CollapseWatchState, c: LessonCriteria = LESSON_CRITERIA): CollapseWatch {
    const watch = new CollapseWatch(c);
    watch.s = structuredClone(state);
    return watch;
  }

  state(): CollapseWatchState {
    return structuredClone(this.s);
  }

  /** The collapse seen so far: its step and the peak it fell from, or null. */
  get collapse(): CollapseWatchState['collapse'] {
    return this.s.collapse;
  }

  /** One training step's success; returns the collapse once seen (from that step on), else null. */
  observe(step: number, success: number): CollapseWatchState['collapse'] {
    if (this.s.collapse || !Number.isFinite(success)) return this.s.collapse;
    const recent = [...this.s.recent, success].slice(-this.c.window);
    this.s.recent = recent;
    const value = recent.reduce((a, v) => a + v, 0) / recent.length;
    this.s.start ??= value;
    if (!this.s.best || value > this.s.best.value) this.s.best = { step, value };
    const best = this.s.best;
    if (best.value >= this.s.start + this.c.minGain && value <= this.c.collapseFraction * best.value) {
      this.s.collapse = { step, peak: best.value, peakStep: best.step };
    }
    return this.s.collapse;
  }
}

export interface ArmCurve {
  start: number;
  peak: number;
  peakStep: number;
  final: number;
  /** The last step with a training success. */
  lastStep: number;
  warningStep: number | null;
  warningSignal: string | null;
  /** The step `echo_trap/converged` turned 1 (low reward std with nothing trained on it, success at its best), or null. */
  convergedStep: number | null;
}

function curve(rows: readonly MetricRow[], window: number): { smooth: Series; arm: ArmCurve } {
  const tag = trainTag(rows);
  if (!tag) throw new Error('lesson verdict: the run has no train/<tag>/success metric');
  const smooth = movingAverage(series(rows, `train/${tag}/success`), window);
  if (smooth.length === 0) throw new Error('lesson verdict: the run has no training steps');
  let peakIdx = 0;
  smooth.forEach(([, v], i) => {
    if (v > smooth[peakIdx][1]) peakIdx = i;
  });
  const warning = rows.find((r) => r['echo_trap/warning'] === 1);
  const signal = warning?.['echo_trap/signal'];
  const converged = rows.find((r) => r['echo_trap/converged'] === 1);
  const last = smooth[smooth.length - 1];
  return {
    smooth,
    arm: {
      start: smooth[0][1],
      peak: smooth[peakIdx][1],
      peakStep: smooth[peakIdx][0],
      final: last[1],
      lastStep: last[0],
      warningStep: warning?.step ?? null,
      warningSignal: typeof signal === 'string' ? signal : null,
      convergedStep: converged?.step ?? null,
    },
  };
}

/** One arm's curve on its own (start, peak, final, marks), and whether it held: StarPO-S's half of the verdict. */
export function armVerdict(
  rows: readonly MetricRow[],
  c: LessonCriteria = LESSON_CRITERIA,
): ArmCurve & { holds: boolean } {
  const { arm } = curve(rows, c.window);
  return { ...arm, holds: arm.final >= arm.peak - c.holdTolerance };
}

/** A run's curve and the step it collapsed at, if any; its peak is the one it fell from (its overall best when it never fell). */
export function vanillaVerdict(
  rows: readonly MetricRow[],
  c: LessonCriteria = LESSON_CRITERIA,
): ArmCurve & { collapseStep: number | null } {
  const v = curve(rows, c.window);
  const watch = new CollapseWatch(c);
  // The smoothed curve's steps are the raw series' steps: replaying the raw values gives the same smoothing.
  const tag = trainTag(rows)!;
  for (const [step, value] of series(rows, `train/${tag}/success`)) if (watch.observe(step, value)) break;
  const fall = watch.collapse;
  return fall === null
    ? { ...v.arm, collapseStep: null }
    : { ...v.arm, peak: fall.peak, peakStep: fall.peakStep, collapseStep: fall.step };
}

/** One run of either arm, judged on its own. */
export interface RunVerdict extends ArmCurve {
  collapseStep: number | null;
  improves: boolean;
  /** The warning fired (at any step). */
  warned: boolean;
  collapses: boolean;
  /** It collapsed, and the warning had fired at or before the collapse step. */
  collapsedAfterWarning: boolean;
  /** It ends within `holdTolerance` of its overall peak. */
  holds: boolean;
}

export function runVerdict(rows: readonly MetricRow[], c: LessonCriteria = LESSON_CRITERIA): RunVerdict {
  const fell = vanillaVerdict(rows, c);
  const overall = armVerdict(rows, c);
  const collapses = fell.collapseStep !== null;
  return {
    ...fell,
    improves: overall.peak >= fell.start + c.minGain,
    warned: fell.warningStep !== null,
    collapses,
    collapsedAfterWarning: collapses && fell.warningStep !== null && fell.warningStep <= fell.collapseStep!,
    holds: overall.holds,
  };
}

export interface LessonVerdict {
  vanilla: ArmCurve & { collapseStep: number | null };
  starpoS: ArmCurve;
  improves: boolean;
  warns: boolean;
  collapses: boolean;
  holds: boolean;
  endsAbove: boolean;
  /** Every one of the above. */
  lesson: boolean;
}

/** One training seed's verdict: vanilla improves, warns and collapses; StarPO-S holds and ends `margin` above it. */
export function lessonVerdict(
  vanillaRows: readonly MetricRow[],
  starpoSRows: readonly MetricRow[],
  c: LessonCriteria = LESSON_CRITERIA,
): LessonVerdict {
  const vanilla = vanillaVerdict(vanillaRows, c),
    s = curve(starpoSRows, c.window);
  const { collapseStep } = vanilla;
  const improves = vanilla.peak >= vanilla.start + c.minGain;
  const collapses = collapseStep !== null;
  const warns = vanilla.warningStep !== null && (collapseStep === null || vanilla.warningStep <= collapseStep);
  const holds = s.arm.final >= s.arm.peak - c.holdTolerance;
  const endsAbove = s.arm.final >= vanilla.final + c.margin;
  return {
    vanilla,
    starpoS: s.arm,
    improves,
    warns,
    collapses,
    holds,
    endsAbove,
    lesson: improves && warns && collapses && holds && endsAbove,
  };
}

/** How many of an arm's runs did what. */
export interface ArmCounts {
  runs: number;
  collapsed: number;
  collapsedAfterWarning: number;
  held: number;
  /** StarPO-S only: runs that held and ended `margin` above vanilla on the same seed (the "StarPO-S holds"). */
  heldAboveVanilla?: number;
}

/** Count an arm's run verdicts; `endsAbove[i]` (StarPO-S only) says whether run i ended `margin` above vanilla's. */
export function armCounts(runs: readonly RunVerdict[], endsAbove?: readonly boolean[]): ArmCounts {
  if (endsAbove && endsAbove.length !== runs.length)
    throw new Error(`armCounts: ${runs.length} runs but ${endsAbove.length} endsAbove flags`);
  const counts: ArmCounts = {
    runs: runs.length,
    collapsed: runs.filter((r) => r.collapses).length,
    collapsedAfterWarning: runs.filter((r) => r.collapsedAfterWarning).length,
    held: runs.filter((r) => r.holds).length,
  };
  if (endsAbove) counts.heldAboveVanilla = runs.filter((r, i) => r.holds && endsAbove[i]).length;
  return counts;
}

/** A count out of the runs, as a rate with its 95% Wilson interval (null when there are no runs). */
export interface Rate {
  count: number;
  runs: number;
  rate: number | null;
  lo: number | null;
  hi: number | null;
}

export function rate(count: number, runs: number): Rate {
  if (runs === 0) return { count, runs, rate: null, lo: null, hi: null };
  const { lo, hi } = wilsonInterval(count, runs);
  return { count, runs, rate: count / runs, lo, hi };
}

/** Every count of an arm as a rate with its Wilson interval. */
export function armRates(counts: ArmCounts): Record<Exclude<keyof ArmCounts, 'runs'>, Rate | undefined> {
  return {
    collapsed: rate(counts.collapsed, counts.runs),
    collapsedAfterWarning: rate(counts.collapsedAfterWarning, counts.runs),
    held: rate(counts.held, counts.runs),
    heldAboveVanilla: counts.heldAboveVanilla === undefined ? undefined : rate(counts.heldAboveVanilla, counts.runs),
  };
}

/** How many of the collapses came after the warning, in words: ", each after the warning", ", 2 after the warning". */
function afterWarning(c: ArmCounts): string {
  if (c.collapsed === 0) return '';
  if (c.collapsedAfterWarning === c.collapsed)
    return c.collapsed === 1 ? ', after the warning' : ', each after the warning';
  if (c.collapsedAfterWarning === 0)
    return c.collapsed === 1 ? ', without the warning first' : ', none after the warning';
  return `, ${c.collapsedAfterWarning} after the warning`;
}

/**
 * The lesson's count in words, the same on the page and in `ragen lesson`:
 * "vanilla StarPO collapsed in 3 of 4 runs, each after the warning; StarPO-S in 0 of 4".
 */
export function lessonSentence(vanilla: ArmCounts, starpoS: ArmCounts): string {
  const runs = (n: number) => (n === 1 ? 'run' : 'runs');
  return (
    `vanilla StarPO collapsed in ${vanilla.collapsed} of ${vanilla.runs} ${runs(vanilla.runs)}${afterWarning(vanilla)}; ` +
    `StarPO-S in ${starpoS.collapsed} of ${starpoS.runs}${afterWarning(starpoS)}`
  );
}
