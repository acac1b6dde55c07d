// Issue 16's test of the classroom lesson, for one training seed: does vanilla StarPO improve, raise the early
// warning and then collapse, while StarPO-S on the same seed holds and ends well above it?
//
// All on the training-batch success (the lesson's main curve), smoothed by a trailing moving average:
//   improves   its peak is at least `minGain` above where it started;
//   warns      the trainer's echo-trap warning fires (echo_trap/warning) before the collapse;
//   collapses  after the peak, the smoothed success falls to `collapseFraction` of the peak or less;
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
  return {
    smooth,
    arm: {
      start: smooth[0][1], peak: smooth[peakIdx][1], peakStep: smooth[peakIdx][0], final: smooth[smooth.length - 1][1],
      warningStep: warning?.step ?? null, warningSignal: typeof signal === 'string' ? signal : null,
    },
  };
}

export function lessonVerdict(vanillaRows: readonly MetricsRow[], starpoSRows: readonly MetricsRow[], c: LessonCriteria = LESSON_CRITERIA): LessonVerdict {
  const v = curve(vanillaRows, c.window), s = curve(starpoSRows, c.window);
  const after = v.smooth.filter(([step]) => step > v.arm.peakStep);
  const collapseStep = after.find(([, value]) => value <= c.collapseFraction * v.arm.peak)?.[0] ?? null;
  const improves = v.arm.peak >= v.arm.start + c.minGain;
  const collapses = improves && collapseStep !== null;
  const warns = v.arm.warningStep !== null && (collapseStep === null || v.arm.warningStep <= collapseStep);
  const holds = s.arm.final >= s.arm.peak - c.holdTolerance;
  const endsAbove = s.arm.final >= v.arm.final + c.margin;
  return {
    vanilla: { ...v.arm, collapseStep }, starpoS: s.arm,
    improves, warns, collapses, holds, endsAbove,
    lesson: improves && warns && collapses && holds && endsAbove,
  };
}
