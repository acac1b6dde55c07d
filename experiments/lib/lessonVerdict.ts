// Issue 16's test of the classroom lesson, for one training seed: does vanilla StarPO improve, raise the early
// warning and then collapse, while StarPO-S on the same seed holds and ends well above it?
//
// All on the training-batch success (the lesson's main curve), smoothed by a trailing moving average:
//   improves   its peak is at least `minGain` above where it started;
//   warns      the trainer's echo-trap warning fires (echo_trap/warning) before the collapse;
//   collapses  the smoothed success falls to `collapseFraction` of its best so far or less (a later recovery does
//              not undo a collapse: the class saw it happen);
//   holds      StarPO-S ends within `holdTolerance` of its own peak;
//   ends above StarPO-S's final success is at least `margin` above vanilla's.
import { movingAverage, series, trainTag, type MetricsRow, type Series } from './analysis';

export interface LessonCriteria {
  window: number;
  minGain: number;
  collapseFraction: number;
  holdTolerance: number;
  margin: number;
}

/** The numbers issue 16 names (collapse to half the peak, StarPO-S within 10 points of its peak and 20 above). */
export const LESSON_CRITERIA: LessonCriteria = { window: 5, minGain: 0.1, collapseFraction: 0.5, holdTolerance: 0.1, margin: 0.2 };

export interface ArmCurve {
  start: number;
  peak: number;
  peakStep: number;
  final: number;
  warningStep: number | null;
  warningSignal: string | null;
  /** The step `echo_trap/converged` turned 1 (low reward std with nothing trained on it, success at its best), or null. */
  convergedStep: number | null;
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

function curve(rows: readonly MetricsRow[], window: number): { smooth: Series; arm: ArmCurve } {
  const tag = trainTag(rows);
  if (!tag) throw new Error('lesson verdict: the run has no train/<tag>/success metric');
  const smooth = movingAverage(series(rows, `train/${tag}/success`), window);
  if (smooth.length === 0) throw new Error('lesson verdict: the run has no training steps');
  let peakIdx = 0;
  smooth.forEach(([, v], i) => { if (v > smooth[peakIdx][1]) peakIdx = i; });
  const warning = rows.find((r) => r['echo_trap/warning'] === 1);
  const signal = warning?.['echo_trap/signal'];
  const converged = rows.find((r) => r['echo_trap/converged'] === 1);
  return {
    smooth,
    arm: {
      start: smooth[0][1], peak: smooth[peakIdx][1], peakStep: smooth[peakIdx][0], final: smooth[smooth.length - 1][1],
      warningStep: warning?.step ?? null, warningSignal: typeof signal === 'string' ? signal : null,
      convergedStep: converged?.step ?? null,
    },
  };
}

/** One arm's curve on its own (start, peak, final, marks), and whether it held: StarPO-S's half of the verdict. */
export function armVerdict(rows: readonly MetricsRow[], c: LessonCriteria = LESSON_CRITERIA): ArmCurve & { holds: boolean } {
  const { arm } = curve(rows, c.window);
  return { ...arm, holds: arm.final >= arm.peak - c.holdTolerance };
}

/** Vanilla's half of the verdict, which reads only its own rows: its curve and the step it collapsed at, if any. */
export function vanillaVerdict(rows: readonly MetricsRow[], c: LessonCriteria = LESSON_CRITERIA): LessonVerdict['vanilla'] {
  const v = curve(rows, c.window);
  // The first fall to a fraction of the best so far, counted once the run had improved.
  let best = v.smooth[0], collapseStep: number | null = null;
  for (const point of v.smooth) {
    if (point[1] > best[1]) best = point;
    if (best[1] >= v.arm.start + c.minGain && point[1] <= c.collapseFraction * best[1]) { collapseStep = point[0]; break; }
  }
  // The peak the lesson talks about: the one vanilla fell from (its overall best when it never fell).
  return collapseStep === null ? { ...v.arm, collapseStep } : { ...v.arm, peak: best[1], peakStep: best[0], collapseStep };
}

export function lessonVerdict(vanillaRows: readonly MetricsRow[], starpoSRows: readonly MetricsRow[], c: LessonCriteria = LESSON_CRITERIA): LessonVerdict {
  const vanilla = vanillaVerdict(vanillaRows, c), s = curve(starpoSRows, c.window);
  const { collapseStep } = vanilla;
  const improves = vanilla.peak >= vanilla.start + c.minGain;
  const collapses = collapseStep !== null;
  const warns = vanilla.warningStep !== null && (collapseStep === null || vanilla.warningStep <= collapseStep);
  const holds = s.arm.final >= s.arm.peak - c.holdTolerance;
  const endsAbove = s.arm.final >= vanilla.final + c.margin;
  return {
    vanilla, starpoS: s.arm,
    improves, warns, collapses, holds, endsAbove,
    lesson: improves && warns && collapses && holds && endsAbove,
  };
}
