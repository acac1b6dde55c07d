// What `ragen lesson` reports: lesson.json (each seed's two runs with their verdicts, each arm's counts and rates
// with 95 % Wilson intervals, the sentence a class reads) and the one line per arm it prints. Pure: the command
// (src/cli/lesson.ts) reads the runs' metrics and hands their verdicts here; the verdict itself is
// src/metrics/lessonVerdict.ts, which the lesson page uses too.
import {
  LESSON_CRITERIA,
  armCounts,
  armRates,
  lessonSentence,
  type ArmCounts,
  type Rate,
  type RunVerdict,
} from '../metrics/lessonVerdict';

/** The two arms the lesson compares, by their preset names, and what a class calls them. */
export const LESSON_ARMS = [
  { name: 'starpo', label: 'vanilla StarPO' },
  { name: 'starpo-s', label: 'StarPO-S' },
] as const;
export type LessonArmName = (typeof LESSON_ARMS)[number]['name'];

/** One run in lesson.json: where it is, how far it trained, why it stopped, and its verdict. */
export interface LessonRunRecord extends RunVerdict {
  dir: string;
  steps: number;
  stoppedBy: string | null;
}

/** OUT/lesson.json. */
export interface LessonFile {
  format: 'ragen-lesson/1';
  preset: string;
  seeds: number[];
  backend: { choice: string; used: string | null };
  commit: string | null;
  totalSteps: number;
  stopAfterCollapse: number;
  criteria: typeof LESSON_CRITERIA;
  runs: { seed: number; starpo: LessonRunRecord; 'starpo-s': LessonRunRecord; starpoSEndsAbove: boolean }[];
  arms: Record<'starpo' | 'starpo-s', { label: string; counts: ArmCounts; rates: ReturnType<typeof armRates> }>;
  sentence: string;
}

/** What lessonReport needs besides the runs: the preset, the seeds, the backends, the commit, the settings. */
export interface LessonMeta {
  preset: string;
  seeds: number[];
  backend: { choice: string; used: string | null };
  commit: string | null;
  totalSteps: number;
  stopAfterCollapse: number;
}

/** lesson.json from each seed's two run records (`runOf(seed, arm)`). */
export function lessonReport(
  meta: LessonMeta,
  runOf: (seed: number, arm: LessonArmName) => LessonRunRecord,
): LessonFile {
  const perSeed = meta.seeds.map((seed) => {
    const [vanilla, starpoS] = LESSON_ARMS.map((arm) => runOf(seed, arm.name));
    return {
      seed,
      starpo: vanilla,
      'starpo-s': starpoS,
      starpoSEndsAbove: starpoS.final >= vanilla.final + LESSON_CRITERIA.margin,
    };
  });
  const vanilla = armCounts(perSeed.map((s) => s.starpo));
  const starpoS = armCounts(
    perSeed.map((s) => s['starpo-s']),
    perSeed.map((s) => s.starpoSEndsAbove),
  );
  return {
    format: 'ragen-lesson/1',
    ...meta,
    criteria: LESSON_CRITERIA,
    runs: perSeed,
    arms: {
      starpo: { label: LESSON_ARMS[0].label, counts: vanilla, rates: armRates(vanilla) },
      'starpo-s': { label: LESSON_ARMS[1].label, counts: starpoS, rates: armRates(starpoS) },
    },
    sentence: lessonSentence(vanilla, starpoS),
  };
}

const pct = (v: number | null) => (v === null ? '-' : `${Math.round(100 * v)}%`);
const rateText = (r: Rate | undefined) =>
  r ? `${r.count} of ${r.runs} (${pct(r.rate)}, 95% interval ${pct(r.lo)}-${pct(r.hi)})` : '-';

/** One line per arm with its counts, then the sentence. */
export function countLines(file: LessonFile): string[] {
  const lines = LESSON_ARMS.map(({ name }) => {
    const { label, counts, rates } = file.arms[name];
    const parts = [
      `${counts.runs} run${counts.runs === 1 ? '' : 's'}`,
      `collapsed after the warning ${rateText(rates.collapsedAfterWarning)}`,
      `collapsed ${counts.collapsed}`,
      `held ${rateText(rates.held)}`,
      ...(rates.heldAboveVanilla
        ? [
            `held and ended ${Math.round(100 * LESSON_CRITERIA.margin)} points above vanilla ${rateText(rates.heldAboveVanilla)}`,
          ]
        : []),
    ];
    return `${`${label} (${name}):`.padEnd(26)} ${parts.join('; ')}`;
  });
  return [...lines, `In words: ${file.sentence}`];
}
