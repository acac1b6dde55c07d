// The lesson charts' captions, in words a class reads, and what each caption claims about its chart as data, so a
// test can check every claim against the recording that ships with the site (tests/unit/ui/lesson-captions.test.ts).
// A caption says only what its claims say. The metric key and unit stay one click away (the chart's details).
import type { MetricRow } from '../metrics/jsonl';
import type { LessonPreset } from './lesson';
import type { LessonRunRows } from './lessonRuns';

/**
 * What a caption says about one arm's curve, judged on the arm's mean over its runs (`armCurve`):
 *   falls      it ends at half its peak or less;
 *   dips       at its lowest it is at half its start or less (whatever it does later);
 *   holds      it ends within 0.1 of its peak;
 *   halfKept   it ends above half its peak;
 *   rises      it ends at least twice as high as its lowest point, and 0.1 above it;
 *   above      it ends above `other`'s end;
 *   gaps       on some training steps the metric is missing (no update was made);
 *   noGaps     every training step has it.
 */
export type Relation = 'falls' | 'dips' | 'holds' | 'halfKept' | 'rises' | 'above' | 'gaps' | 'noGaps';
export type ArmRole = 'vanilla' | 'stabilised';

export interface CaptionClaim {
  arm: ArmRole;
  relation: Relation;
  /** For 'above': the arm it ends above. */
  other?: ArmRole;
}

export interface LessonCaption {
  /** The chart's metric key (`chart-<key>`). */
  key: string;
  /** The title in plain words. */
  title: string;
  /** The axis, as a class reads it. */
  yLabel: string;
  /** The caption under the chart. */
  text: string;
  claims: readonly CaptionClaim[];
}

const SUCCESS_NOTE =
  'Each thin line is one run (one training seed), the thick line the mean of an arm’s runs; a run that stopped after its collapse counts at its last value.';

const BANDIT: readonly LessonCaption[] = [
  {
    key: 'train/Bandit/success',
    title: 'How often it picks Dragon, the arm that pays',
    yLabel: 'share of answers',
    text: `Dragon pays 1 every time, Phoenix pays little: a good agent learns to pick Dragon. Both arms learn it. Vanilla StarPO’s mean then falls to half of its best or lower; StarPO-S’s stays near its best and ends higher. ${SUCCESS_NOTE}`,
    claims: [
      { arm: 'vanilla', relation: 'falls' },
      { arm: 'stabilised', relation: 'holds' },
      { arm: 'stabilised', relation: 'above', other: 'vanilla' },
    ],
  },
  {
    key: 'rollout/in_group_std',
    title: 'How much the 8 answers to one question disagree',
    yLabel: 'disagreement',
    text: 'The agent answers each question 8 times. While the answers differ, some earn more than others and the agent learns which. Once all 8 pick Dragon they earn the same and this falls towards 0 in both arms: that question has nothing left to teach. The ⚠ marks where it fell far enough for the early warning.',
    claims: [
      { arm: 'vanilla', relation: 'falls' },
      { arm: 'stabilised', relation: 'falls' },
    ],
  },
  {
    key: 'actor/entropy_loss',
    title: 'How unsure it is of each next word',
    yLabel: 'uncertainty',
    text: 'Vanilla StarPO’s rises as it collapses, to twice its lowest or more, and ends above StarPO-S’s: its text stops following the format, it does not repeat one answer. StarPO-S’s line has gaps: on those steps it made no update, so there is nothing to measure.',
    claims: [
      { arm: 'vanilla', relation: 'rises' },
      { arm: 'vanilla', relation: 'above', other: 'stabilised' },
      { arm: 'stabilised', relation: 'gaps' },
    ],
  },
  {
    key: 'actor/grad_norm',
    title: 'How big each update is',
    yLabel: 'update size',
    text: 'Vanilla StarPO updates on every step, also when its 8 answers agree and what it learns from is noise. StarPO-S’s line has gaps: on those steps its filter kept no question, because every question’s 8 answers agreed, and it made no update.',
    claims: [
      { arm: 'vanilla', relation: 'noGaps' },
      { arm: 'stabilised', relation: 'gaps' },
    ],
  },
  {
    key: 'reasoning_length/mean',
    title: 'How much it thinks before answering',
    yLabel: 'reasoning length',
    text: 'The length of the text inside <think>. Vanilla StarPO’s reasoning shrinks to half its longest or less; StarPO-S ends with longer reasoning than vanilla StarPO.',
    claims: [
      { arm: 'vanilla', relation: 'falls' },
      { arm: 'stabilised', relation: 'above', other: 'vanilla' },
    ],
  },
];

const FROZENLAKE: readonly LessonCaption[] = [
  {
    key: 'train/FrozenLake/success',
    title: 'How often it reaches the goal',
    yLabel: 'share of walks',
    text: `Success is reaching the goal without falling into a hole (the ice here is not slippery: each move goes where it says). Vanilla StarPO learns faster and then falls to half of its best or lower; StarPO-S stays near its best and ends higher. ${SUCCESS_NOTE}`,
    claims: [
      { arm: 'vanilla', relation: 'falls' },
      { arm: 'stabilised', relation: 'holds' },
      { arm: 'stabilised', relation: 'above', other: 'vanilla' },
    ],
  },
  {
    key: 'collapse_first_turn_sample/mi_estimate',
    title: 'Does its reasoning depend on the lake it sees?',
    yLabel: 'input dependence',
    text: 'High while the reasoning talks about the lake in front of it; low when it writes the same text for every lake. Vanilla StarPO’s falls to half or lower, before its success does; StarPO-S keeps more than half of it and ends above vanilla StarPO.',
    claims: [
      { arm: 'vanilla', relation: 'falls' },
      { arm: 'stabilised', relation: 'halfKept' },
      { arm: 'stabilised', relation: 'above', other: 'vanilla' },
    ],
  },
  {
    key: 'rollout/in_group_std',
    title: 'How much the answers to one lake disagree',
    yLabel: 'disagreement',
    text: 'The agent walks each lake 4 times. Once all 4 walks end the same, this is 0: that lake has nothing left to teach. Vanilla StarPO’s falls to half or lower and it keeps updating on such lakes.',
    claims: [{ arm: 'vanilla', relation: 'falls' }],
  },
  {
    key: 'actor/entropy_loss',
    title: 'How unsure it is of each next word',
    yLabel: 'uncertainty',
    text: 'When vanilla StarPO collapses its text stops following the format and this rises: it ends higher than at its lowest, and above StarPO-S.',
    claims: [
      { arm: 'vanilla', relation: 'rises' },
      { arm: 'vanilla', relation: 'above', other: 'stabilised' },
    ],
  },
  {
    key: 'actor/grad_norm',
    title: 'How big each update is',
    yLabel: 'update size',
    text: 'Vanilla StarPO updates on every step. StarPO-S’s line has gaps: on those steps its filter kept no lake, because every lake’s walks agreed, and it made no update.',
    claims: [
      { arm: 'vanilla', relation: 'noGaps' },
      { arm: 'stabilised', relation: 'gaps' },
    ],
  },
  {
    key: 'reasoning_length/mean',
    title: 'How much it thinks before moving',
    yLabel: 'reasoning length',
    text: 'The length of the text inside <think>. Vanilla StarPO’s shrinks to half its longest or less; StarPO-S keeps more than half of its own.',
    claims: [
      { arm: 'vanilla', relation: 'falls' },
      { arm: 'stabilised', relation: 'halfKept' },
    ],
  },
];

/** Each lesson's captions, by chart key. */
export const LESSON_CAPTIONS: Record<LessonPreset, readonly LessonCaption[]> = {
  'echo-trap': BANDIT,
  'echo-trap-frozenlake': FROZENLAKE,
};

/** The caption of a lesson's chart, or null when the lesson has none for it. */
export function captionFor(preset: LessonPreset, key: string): LessonCaption | null {
  return LESSON_CAPTIONS[preset].find((c) => c.key === key) ?? null;
}

const isSuccess = (key: string) => /^train\/[^/]+\/success$/.test(key);

/**
 * An arm's mean curve over its runs: [step, mean] at every step some run logged `key`. On the success chart a run
 * that stopped before the last step counts at its last value from then on (its collapse is where it stays).
 */
export function armCurve(runs: readonly LessonRunRows[], key: string): [number, number][] {
  const last = Math.max(...runs.flatMap((r) => r.rows.map((row) => row.step)));
  const perRun = runs.map(
    (r) => new Map(r.rows.filter((row) => Number.isFinite(row[key])).map((row) => [row.step, row[key] as number])),
  );
  const steps = [...new Set(perRun.flatMap((m) => [...m.keys()]))].sort((a, b) => a - b);
  if (isSuccess(key) && steps.length > 0) for (let s = steps.at(-1)! + 1; s <= last; s++) steps.push(s);
  return steps.flatMap((step) => {
    const xs = perRun.flatMap((m) => {
      if (m.has(step)) return [m.get(step)!];
      if (!isSuccess(key) || m.size === 0) return [];
      const end = Math.max(...m.keys());
      return step > end ? [m.get(end)!] : [];
    });
    return xs.length === 0 ? [] : [[step, xs.reduce((a, b) => a + b, 0) / xs.length] as [number, number]];
  });
}

/** Where a curve starts (the 5-point mean of its first points), ends (the mean of its last tenth, at least 5 points), its peak and its low (of a 5-point moving mean). */
export function curveShape(
  curve: readonly [number, number][],
): { end: number; peak: number; low: number; start: number } | null {
  if (curve.length === 0) return null;
  const values = curve.map(([, v]) => v);
  const smooth = values.map((_, i) => {
    const part = values.slice(Math.max(0, i - 4), i + 1);
    return part.reduce((a, b) => a + b, 0) / part.length;
  });
  const tail = values.slice(-Math.max(5, Math.ceil(values.length / 10)));
  return {
    end: tail.reduce((a, b) => a + b, 0) / tail.length,
    peak: Math.max(...smooth),
    low: Math.min(...smooth),
    start: smooth[Math.min(4, smooth.length - 1)],
  };
}

/** Training steps (rows with `train/batch_size`) on which a run has no value of `key`. */
function missingSteps(rows: readonly MetricRow[], key: string): number {
  return rows.filter((r) => typeof r['train/batch_size'] === 'number' && !Number.isFinite(r[key])).length;
}

/** Whether a claim holds of the runs: `runs` by role. Returns the claim's numbers too, for a test's message. */
export function checkClaim(
  claim: CaptionClaim,
  key: string,
  runs: Record<ArmRole, readonly LessonRunRows[]>,
): { ok: boolean; detail: string } {
  if (claim.relation === 'gaps' || claim.relation === 'noGaps') {
    const missing = runs[claim.arm].reduce((n, r) => n + missingSteps(r.rows, key), 0);
    return {
      ok: claim.relation === 'gaps' ? missing > 0 : missing === 0,
      detail: `${missing} training steps without ${key}`,
    };
  }
  const shape = curveShape(armCurve(runs[claim.arm], key));
  if (!shape) return { ok: false, detail: `no ${key} in ${claim.arm}` };
  const { end, peak, low, start } = shape;
  const detail = `start ${start.toFixed(3)}, end ${end.toFixed(3)}, peak ${peak.toFixed(3)}, low ${low.toFixed(3)}`;
  switch (claim.relation) {
    case 'falls':
      return { ok: end <= 0.5 * peak, detail };
    case 'dips':
      return { ok: low <= 0.5 * start, detail };
    case 'holds':
      return { ok: end >= peak - 0.1, detail };
    case 'halfKept':
      return { ok: end > 0.5 * peak, detail };
    case 'rises':
      return { ok: end >= 2 * low && end >= low + 0.1, detail };
    case 'above': {
      const other = curveShape(armCurve(runs[claim.other!], key));
      return {
        ok: other !== null && end > other.end,
        detail: `${detail}; ${claim.other} ends at ${other?.end.toFixed(3)}`,
      };
    }
  }
}
