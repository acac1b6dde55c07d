// The lesson over several runs per arm: which training seeds each arm runs, in what order two workers take them, how
// each run's curve and each arm's mean are drawn, how long the whole lesson has left, and the count a class reads.
// Pure TypeScript: the live lesson (lesson-runs.svelte.ts), the recorded one and the tests share it.
import {
  armCounts,
  CollapseWatch,
  LESSON_CRITERIA,
  lessonSentence,
  runVerdict,
  trainTag,
  type ArmCounts,
  type RunVerdict,
} from '../metrics/lessonVerdict';
import type { MetricRow } from '../metrics/jsonl';
import { ECHO_TRAP_LESSON_SEEDS } from '../starpo/presets';
import { armColour } from './charts';

/** Runs per arm the lesson trains (and the recording holds): the preset's seed and the next ones. */
export const LESSON_RUNS_PER_ARM = 4;

/** Most runs per arm a URL may ask for. */
export const MAX_RUNS_PER_ARM = 8;

/** Runs per arm from the URL (`?lesson&runs=N`, 1 to MAX_RUNS_PER_ARM; a quick check or a small class), else the default. */
export function runsPerArmFromSearch(search: string): number {
  const n = Number(new URLSearchParams(search).get('runs'));
  return Number.isInteger(n) && n >= 1 && n <= MAX_RUNS_PER_ARM ? n : LESSON_RUNS_PER_ARM;
}

/** Each lesson's own training seeds where its preset names them (the first is the preset's trainer.seed). */
export const LESSON_SEEDS: Readonly<Record<string, readonly number[]>> = { 'echo-trap': ECHO_TRAP_LESSON_SEEDS };

/**
 * The training seeds of a lesson's `count` runs per arm: the preset's own list when it starts at `base` (the preset's
 * seed), continued past its end by the next seeds; from another seed (`?lesson&seed=S`), `base` and the next ones.
 */
export function lessonSeeds(base: number, count: number = LESSON_RUNS_PER_ARM, own: readonly number[] = []): number[] {
  const seeds = own.length > 0 && own[0] === base ? own.slice(0, count) : [base];
  while (seeds.length < count) seeds.push(Math.max(...seeds) + 1);
  return seeds;
}

/** Steps a run goes on after its collapse before it stops: enough for the fall to show on its curve. */
export const STEPS_AFTER_COLLAPSE = 5;

/** One run of the lesson: an arm on one training seed, and what it logged. */
export interface LessonRunRows {
  arm: string;
  seed: number;
  rows: readonly MetricRow[];
  /** The run is over (recorded, or ended in its worker): the success mean holds it at its last value after its end. */
  over?: boolean;
}

/** One run to train, and what it is expected to cost (seconds on one worker), for the schedule. */
export interface PlannedRun {
  arm: string;
  seed: number;
  expectedSeconds: number;
}

/**
 * The order in which free workers take the runs. The first round gives each arm a worker (its most expensive run), so
 * both arms' curves appear from the start; the rest go most expensive first (longest-processing-time first), so that
 * the cheap runs fill in at the end and no arm is left running alone. Ties keep the given order (arms interleaved).
 */
export function scheduleRuns(runs: readonly PlannedRun[], workers = 1): PlannedRun[] {
  const byCost = runs
    .map((run, i) => ({ run, i }))
    .sort((a, b) => b.run.expectedSeconds - a.run.expectedSeconds || a.i - b.i)
    .map(({ run }) => run);
  const first: PlannedRun[] = [];
  for (const run of byCost) {
    if (first.length >= workers) break;
    if (!first.some((r) => r.arm === run.arm)) first.push(run);
  }
  return [...first, ...byCost.filter((r) => !first.includes(r))];
}

/** Every (arm, seed) pair with interleaved arms: [a0, b0, a1, b1, ...]. */
export function interleave(arms: readonly string[], seeds: readonly number[]): { arm: string; seed: number }[] {
  return seeds.flatMap((seed) => arms.map((arm) => ({ arm, seed })));
}

/** The first step at which a run should stop: STEPS_AFTER_COLLAPSE after its collapse (null while it has not collapsed). */
export function stopStep(rows: readonly MetricRow[]): number | null {
  const tag = trainTag(rows);
  if (!tag) return null;
  const watch = new CollapseWatch(LESSON_CRITERIA);
  for (const r of [...rows].sort((a, b) => a.step - b.step)) {
    const v = r[`train/${tag}/success`];
    if (typeof v === 'number' && watch.observe(r.step, v)) break;
  }
  return watch.collapse ? watch.collapse.step + STEPS_AFTER_COLLAPSE : null;
}

/** A run's verdict, or null before it logged a training step. */
export function verdictOf(rows: readonly MetricRow[]): RunVerdict | null {
  try {
    return runVerdict(rows);
  } catch {
    return null;
  }
}

/** The lesson's count so far, over the runs that finished (or collapsed: a collapse is final) in each arm. */
export interface LessonCount {
  vanilla: ArmCounts;
  starpoS: ArmCounts;
  /** "vanilla StarPO collapsed in 3 of 4 runs, each after the warning; StarPO-S in 0 of 4" */
  sentence: string;
}

/**
 * Counts each arm's runs: `vanillaArm` is the arm without the filter (the preset's first), the other one StarPO-S.
 * `finished(run)` says whether a run is over; an unfinished run is counted once it collapsed (that cannot change),
 * otherwise not yet, so the sentence says "of N" only for runs whose outcome is known.
 */
export function lessonCount(
  runs: readonly LessonRunRows[],
  vanillaArm: string,
  finished: (run: LessonRunRows) => boolean = () => true,
): LessonCount {
  const judged = (arm: (name: string) => boolean) =>
    runs
      .filter((r) => arm(r.arm))
      .map((r) => ({ run: r, verdict: verdictOf(r.rows) }))
      .filter(
        (x): x is { run: LessonRunRows; verdict: RunVerdict } =>
          x.verdict !== null && (finished(x.run) || x.verdict.collapses),
      )
      .map((x) => x.verdict);
  const vanilla = armCounts(judged((a) => a === vanillaArm));
  const starpoS = armCounts(judged((a) => a !== vanillaArm));
  return { vanilla, starpoS, sentence: lessonSentence(vanilla, starpoS) };
}

/** Training steps with no update: the filter kept no group, so `train/batch_size` is 0 (StarPO-S once its groups agree). */
export function stepsWithoutUpdate(rows: readonly MetricRow[]): { count: number; steps: number; first: number | null } {
  const trained = rows.filter((r) => r.step >= 1 && typeof r['train/batch_size'] === 'number');
  const none = trained.filter((r) => r['train/batch_size'] === 0);
  return { count: none.length, steps: trained.length, first: none[0]?.step ?? null };
}

/** One line of a multi-run chart: a run's curve (thin) or an arm's mean over its runs (thick). */
export interface RunLine {
  arm: string;
  /** The run's seed; null for the arm's mean. */
  seed: number | null;
  colour: string;
  values: (number | null)[];
}

export interface RunLines {
  steps: number[];
  lines: RunLine[];
}

/**
 * A metric over every run, for one chart: a thin line per run and a thick mean per arm, in the arm's colour
 * (`arms` in the preset's order gives the colours, as on every chart of the page). The mean at a step is over the
 * runs of the arm that logged it there; on the success chart a run that is over counts at its last value after its
 * end (a run stopped after its collapse stays collapsed in the mean), as lesson-captions.ts armCurve reads it.
 */
export function runLines(runs: readonly LessonRunRows[], key: string, arms: readonly string[]): RunLines {
  const steps = [
    ...new Set(runs.flatMap((r) => r.rows.filter((row) => Number.isFinite(row[key])).map((row) => row.step))),
  ].sort((a, b) => a - b);
  const index = new Map(steps.map((s, i) => [s, i]));
  const colour = (arm: string) => armColour(Math.max(0, arms.indexOf(arm)));
  const perRun: RunLine[] = runs.map((r) => {
    const values: (number | null)[] = steps.map(() => null);
    for (const row of r.rows) {
      const v = row[key];
      if (typeof v === 'number' && Number.isFinite(v)) values[index.get(row.step)!] = v;
    }
    return { arm: r.arm, seed: r.seed, colour: colour(r.arm), values };
  });
  const means: RunLine[] = arms
    .filter((arm) => perRun.some((l) => l.arm === arm))
    .map((arm) => {
      const carry = /^train\/[^/]+\/success$/.test(key);
      const mine = perRun
        .map((l, j) => ({ l, run: runs[j] }))
        .filter(({ l }) => l.arm === arm)
        .map(({ l, run }) => {
          if (!carry || !run.over) return l.values;
          let end = l.values.length - 1;
          while (end >= 0 && l.values[end] === null) end--;
          return end < 0 ? l.values : l.values.map((v, i) => (i > end ? l.values[end] : v));
        });
      const values = steps.map((_, i) => {
        const xs = mine.map((l) => l[i]).filter((v): v is number => v !== null);
        return xs.length === 0 ? null : xs.reduce((a, b) => a + b, 0) / xs.length;
      });
      return { arm, seed: null, colour: colour(arm), values };
    });
  return { steps, lines: [...perRun, ...means] };
}

/** Where one run of a live lesson is, for the time estimate. */
export interface RunProgress {
  arm: string;
  /** Its training seed: a run of a seed the recording holds is priced as that run (on wasm it replays it exactly). */
  seed?: number;
  /** Steps done, and the steps it runs at most. */
  done: number;
  total: number;
  /** Over (done, stopped after its collapse, failed). */
  over: boolean;
  /** The step it stops at (STEPS_AFTER_COLLAPSE after its collapse), once it collapsed. */
  stopAt: number | null;
  /** Seconds each of its steps took so far. */
  stepSeconds: readonly number[];
  /** Tokens each of those steps trained on (`perf/total_num_tokens`, 0 for a step without an update), where known. */
  stepTokens?: readonly number[];
  /** Seconds from asking for the run to its first metrics row (building it, the step-0 validation); null before. */
  startup?: number | null;
}

/** What an arm's runs took in an earlier lesson (the recording): how many steps a run lasted, and each step's seconds. */
export interface ArmPrior {
  /** Mean steps per run. */
  steps: number;
  /** Mean seconds of the i-th step (index 0: step 1) over the runs that reached it. */
  profile: number[];
  /** Mean tokens the i-th step trained on, where the recording logged them (the work a step costs, not its load). */
  tokens?: number[];
}

/** The key of one run's own prior in armPriors' result (next to its arm's, keyed by the arm's name). */
export const runKey = (arm: string, seed: number) => `${arm}#${seed}`;

/** Each arm's prior from finished runs' step times (`timing_s/step` of steps 1, 2, ...) and tokens, and each run's own. */
export function armPriors(
  runs: readonly { arm: string; seed?: number; times: readonly number[]; tokens?: readonly number[] }[],
): Record<string, ArmPrior> {
  const out: Record<string, ArmPrior> = {};
  const withTokens = (prior: ArmPrior, tokens: number[] | undefined): ArmPrior =>
    tokens && tokens.length === prior.profile.length ? { ...prior, tokens } : prior;
  for (const r of runs)
    if (r.seed !== undefined && r.times.length > 0)
      out[runKey(r.arm, r.seed)] = withTokens(
        { steps: r.times.length, profile: [...r.times] },
        r.tokens && [...r.tokens],
      );
  for (const arm of new Set(runs.map((r) => r.arm))) {
    const mine = runs.filter((r) => r.arm === arm && r.times.length > 0);
    if (mine.length === 0) continue;
    const longest = Math.max(...mine.map((r) => r.times.length));
    const reached = (i: number) => mine.filter((r) => i < r.times.length);
    const profile = Array.from({ length: longest }, (_, i) => mean(reached(i).map((r) => r.times[i])));
    const tokens = mine.every((r) => r.tokens?.length === r.times.length)
      ? Array.from({ length: longest }, (_, i) => mean(reached(i).map((r) => r.tokens![i])))
      : undefined;
    out[arm] = withTokens({ steps: mean(mine.map((r) => r.times.length)), profile }, tokens);
  }
  return out;
}

/** Seconds of steps [from, to) of an arm's prior profile (past its end, at its last steps' mean). */
export function profileSeconds(prior: ArmPrior, from: number, to: number): number {
  const tail = prior.profile.slice(-5);
  const late = tail.length > 0 ? mean(tail) : 0;
  let sum = 0;
  for (let i = from; i < to; i++) sum += i < prior.profile.length ? prior.profile[i] : late;
  return sum;
}

/** The tokens a metrics row's step trained on (0 when it made no update). */
export function stepTokens(row: MetricRow): number {
  const n = row['perf/total_num_tokens'];
  return typeof n === 'number' && Number.isFinite(n) ? n : 0;
}

/** Tokens step i (0-based) of a prior trains on; past its end, its last steps' mean. */
function priorTokens(tokens: readonly number[], i: number): number {
  return i < tokens.length ? tokens[i] : mean(tokens.slice(-5));
}

/** How many of a run's own steps back a timed step counts half as much in the fits below (the load of a shared computer drifts). */
export const STEP_HALF_LIFE = 20;

/** A timed step of a live run, weighted by how recent it is within its run. */
interface TimedStep {
  run: RunProgress;
  i: number;
  seconds: number;
  weight: number;
}

function timedSteps(runs: readonly RunProgress[]): TimedStep[] {
  return runs.flatMap((run) =>
    run.stepSeconds.map((seconds, i) => ({
      run,
      i,
      seconds,
      weight: 0.5 ** ((run.stepSeconds.length - 1 - i) / STEP_HALF_LIFE),
    })),
  );
}

/**
 * What a step costs on this computer, fitted to the steps timed here: `base` seconds (generation, the page's own
 * work) plus `perToken` seconds per token it trains on. Weighted least squares over every timed step of every run,
 * recent steps counting more; it needs steps with and without an update (StarPO-S makes none once its groups agree)
 * to tell the two apart, else null.
 */
export function fitStepCost(runs: readonly RunProgress[]): { base: number; perToken: number } | null {
  const points = timedSteps(runs)
    .filter((s) => s.run.stepTokens?.[s.i] !== undefined)
    .map((s) => ({ t: s.seconds, x: s.run.stepTokens![s.i], w: s.weight }));
  const idle = points.filter((p) => p.x === 0).length;
  if (idle < 3 || points.length - idle < 3) return null;
  const sw = points.reduce((a, p) => a + p.w, 0);
  const mx = points.reduce((a, p) => a + p.w * p.x, 0) / sw;
  const mt = points.reduce((a, p) => a + p.w * p.t, 0) / sw;
  const sxx = points.reduce((a, p) => a + p.w * (p.x - mx) ** 2, 0);
  const sxt = points.reduce((a, p) => a + p.w * (p.x - mx) * (p.t - mt), 0);
  const perToken = Math.max(0, sxt / sxx);
  return { base: Math.max(0, mt - perToken * mx), perToken };
}

function mean(xs: readonly number[]): number {
  return xs.length === 0 ? 0 : xs.reduce((a, b) => a + b, 0) / xs.length;
}

/**
 * Seconds the whole lesson has left: the remaining steps of every run, laid out over the workers as the page hands
 * them out. One figure for all runs (not the slowest arm's), so it does not jump when an arm ends. A run that has not collapsed is expected to
 * last as long as its arm's ended runs did on average (the prior's runs before any ended, else its full length).
 * With a prior (the recording), a run's remaining steps cost what those steps cost there (a run's first steps are
 * slower than its later ones), times how this computer compares with the recording on every step timed so far, or,
 * where that explains the steps timed here less well, this computer's fitted cost (fitStepCost) of the tokens the
 * recording's same steps trained on; without a prior, each arm's mean step time so far. A run of a seed the recording holds is priced as that run, its
 * length included (on the recording's backend it replays it step for step); another, as its arm's mean run.
 */
export function lessonSecondsLeft(
  runs: readonly RunProgress[],
  workers: number,
  priors: Record<string, ArmPrior> = {},
): number | null {
  if (runs.every((r) => r.stepSeconds.length === 0)) return null;
  const priorOf = (r: RunProgress): ArmPrior | undefined =>
    (r.seed !== undefined ? priors[runKey(r.arm, r.seed)] : undefined) ?? priors[r.arm];
  // This computer against the recording, on the steps timed here (2 = twice as slow): per arm once the arm has steps
  // timed (the arms' steps differ in how much is generation, which a recording's helper core sped up, and how much
  // update), else over all arms.
  const ratio = (of: readonly RunProgress[]) => {
    let here = 0;
    let there = 0;
    for (const r of of) {
      const p = priorOf(r);
      if (!p) continue;
      here += r.stepSeconds.reduce((a, b) => a + b, 0);
      there += profileSeconds(p, 0, r.stepSeconds.length);
    }
    return there > 0 ? here / there : null;
  };
  const overall = ratio(runs);
  const armSpeed = new Map(
    [...new Set(runs.map((r) => r.arm))].map((arm) => [arm, ratio(runs.filter((r) => r.arm === arm)) ?? overall]),
  );
  // Two ways to price a remaining step, and the one that explains the steps timed so far better is used: the
  // recording's same step times this computer's speed (exact where this computer's steps follow the recording's), or
  // this computer's fitted cost of the tokens the recording's same step trained on (the recording's step times carry
  // the load of the machine that made it, its tokens do not).
  const fitted = fitStepCost(runs);
  const steps = timedSteps(runs);
  const squaredError = (predict: (s: TimedStep) => number | null) =>
    steps.reduce((sum, s) => {
      const y = predict(s);
      return y === null ? sum : sum + s.weight * (y - s.seconds) ** 2;
    }, 0);
  const byTokens = (s: TimedStep) =>
    fitted && s.run.stepTokens?.[s.i] !== undefined ? fitted.base + fitted.perToken * s.run.stepTokens[s.i] : null;
  const byProfile = (s: TimedStep) => {
    const p = priorOf(s.run);
    const speed = armSpeed.get(s.run.arm);
    return p && speed != null ? speed * profileSeconds(p, s.i, s.i + 1) : null;
  };
  const cost =
    fitted &&
    steps.every((s) => byTokens(s) !== null && byProfile(s) !== null) &&
    squaredError(byTokens) < squaredError(byProfile)
      ? fitted
      : null;
  const allSteps = runs.flatMap((r) => r.stepSeconds);
  const ownPace = (arm: string) => {
    const xs = runs.filter((r) => r.arm === arm).flatMap((r) => r.stepSeconds);
    return xs.length > 0 ? mean(xs) : mean(allSteps);
  };
  const length = (r: RunProgress) => {
    const own = r.seed !== undefined ? priors[runKey(r.arm, r.seed)] : undefined;
    if (own) return own.steps;
    const ended = runs.filter((x) => x.arm === r.arm && x.over).map((x) => x.done);
    return ended.length > 0 ? mean(ended) : Math.min(r.total, priors[r.arm]?.steps ?? r.total);
  };
  // A run not yet started first has to be built (and validated at step 0): as long as the started ones took.
  const startups = runs.map((r) => r.startup).filter((t): t is number => typeof t === 'number');
  const startup = mean(startups);
  const started = (r: RunProgress) => r.done > 0 || (r.startup !== undefined && r.startup !== null);
  const left = (r: RunProgress) => {
    const end = Math.min(r.total, r.stopAt ?? Math.max(r.done + 1, Math.round(length(r))));
    const p = priorOf(r);
    const speed = armSpeed.get(r.arm) ?? null;
    let steps: number;
    if (p?.tokens && cost) {
      steps = 0;
      for (let i = r.done; i < end; i++) steps += cost.base + cost.perToken * priorTokens(p.tokens, i);
    } else if (p && speed !== null) steps = speed * profileSeconds(p, r.done, end);
    else steps = Math.max(0, end - r.done) * ownPace(r.arm);
    return (started(r) ? 0 : startup) + steps;
  };
  // The workers as the page fills them: the runs under way first, then each waiting run, most expensive first, to
  // the worker free soonest. The lesson ends when the last worker does.
  const free: number[] = Array(Math.max(1, workers)).fill(0);
  const soonest = () => free.indexOf(Math.min(...free));
  for (const r of runs.filter((x) => !x.over && started(x))) free[soonest()] += left(r);
  const waiting = runs
    .filter((x) => !x.over && !started(x))
    .map(left)
    .sort((a, b) => b - a);
  for (const seconds of waiting) free[soonest()] += seconds;
  return Math.max(...free);
}
