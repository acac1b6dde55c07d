import { describe, expect, it } from 'vitest';
import {
  armPriors,
  fitStepCost,
  profileSeconds,
  interleave,
  lessonCount,
  lessonSecondsLeft,
  lessonSeeds,
  runLines,
  scheduleRuns,
  stepsWithoutUpdate,
  stopStep,
  STEPS_AFTER_COLLAPSE,
  type RunProgress,
} from '../../../src/ui/lessonRuns';
import { armColour } from '../../../src/ui/charts';

const KEY = 'train/Bandit/success';
/** Rows of a run whose success follows `values` from step 1 (warning at `warnAt`, if given). */
const rows = (values: number[], warnAt?: number) =>
  values.map((v, i) => ({
    step: i + 1,
    [KEY]: v,
    'train/batch_size': v > 0.99 ? 0 : 64,
    ...(warnAt !== undefined ? { 'echo_trap/warning': i + 1 >= warnAt ? 1 : 0 } : {}),
  }));
const collapsing = [0.3, 0.5, 0.7, 0.9, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0];
const holding = [0.3, 0.5, 0.7, 0.9, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1];

describe('the lesson over several runs per arm', () => {
  it('trains the preset seed and the next ones, arms interleaved', () => {
    expect(lessonSeeds(7, 3)).toEqual([7, 8, 9]);
    // A preset's own seeds when the lesson starts at its seed, continued past the list's end; another seed, plain.
    expect(lessonSeeds(2, 3, [2, 3, 8])).toEqual([2, 3, 8]);
    expect(lessonSeeds(2, 5, [2, 3, 8])).toEqual([2, 3, 8, 9, 10]);
    expect(lessonSeeds(5, 2, [2, 3, 8])).toEqual([5, 6]);
    expect(interleave(['a', 'b'], [0, 1])).toEqual([
      { arm: 'a', seed: 0 },
      { arm: 'b', seed: 0 },
      { arm: 'a', seed: 1 },
      { arm: 'b', seed: 1 },
    ]);
  });

  it('gives each arm a worker first, then hands out the most expensive runs first, ties in arm order', () => {
    const runs = [
      { arm: 's', seed: 0, expectedSeconds: 10 },
      { arm: 'v', seed: 0, expectedSeconds: 60 },
      { arm: 's', seed: 1, expectedSeconds: 10 },
      { arm: 'v', seed: 1, expectedSeconds: 60 },
      { arm: 'v', seed: 2, expectedSeconds: 60 },
    ];
    const order = (workers: number) => scheduleRuns(runs, workers).map((r) => `${r.arm}${r.seed}`);
    expect(order(1)).toEqual(['v0', 'v1', 'v2', 's0', 's1']);
    expect(order(2)).toEqual(['v0', 's0', 'v1', 'v2', 's1']);
  });

  it("stops a run STEPS_AFTER_COLLAPSE steps after its collapse, by the verdict's rule", () => {
    expect(stopStep(rows(holding))).toBeNull();
    // The 5-step mean falls to half its best (1) at step 11: 1,1,0,0,0 -> 0.4.
    expect(stopStep(rows(collapsing))).toBe(11 + STEPS_AFTER_COLLAPSE);
  });

  it('counts each arm in the shared sentence, an unfinished run only once it collapsed', () => {
    const runs = [
      { arm: 'v', seed: 0, rows: rows(collapsing, 6) },
      { arm: 'v', seed: 1, rows: rows(holding.slice(0, 6)) },
      { arm: 's', seed: 0, rows: rows(holding) },
    ];
    const count = lessonCount(runs, 'v', (r) => r.seed === 0);
    expect(count.vanilla).toMatchObject({ runs: 1, collapsed: 1, collapsedAfterWarning: 1 });
    expect(count.sentence).toBe('vanilla StarPO collapsed in 1 of 1 run, after the warning; StarPO-S in 0 of 1');
    expect(lessonCount(runs, 'v').vanilla.runs).toBe(2);
  });

  it('counts the steps with no update', () => {
    expect(stepsWithoutUpdate(rows(holding))).toEqual({ count: 11, steps: 15, first: 5 });
  });

  it("draws a thin line per run and a thick mean per arm, in the arm's colour", () => {
    const lines = runLines(
      [
        {
          arm: 'v',
          seed: 0,
          rows: [
            { step: 1, m: 1 },
            { step: 2, m: 3 },
          ],
        },
        { arm: 'v', seed: 1, rows: [{ step: 1, m: 3 }] },
        { arm: 's', seed: 0, rows: [{ step: 2, m: 5 }] },
      ],
      'm',
      ['v', 's'],
    );
    expect(lines.steps).toEqual([1, 2]);
    expect(lines.lines.map((l) => [l.arm, l.seed, l.colour, l.values])).toEqual([
      ['v', 0, armColour(0), [1, 3]],
      ['v', 1, armColour(0), [3, null]],
      ['s', 0, armColour(1), [null, 5]],
      ['v', null, armColour(0), [2, 3]],
      ['s', null, armColour(1), [null, 5]],
    ]);
  });
});

describe('lessonSecondsLeft (one figure for all runs)', () => {
  const run = (arm: string, done: number, over = false, stopAt: number | null = null, pace = 1): RunProgress => ({
    arm,
    done,
    total: 100,
    over,
    stopAt,
    stepSeconds: Array(done).fill(pace),
  });
  it('is null before any step was timed', () => {
    expect(lessonSecondsLeft([run('v', 0), run('s', 0)], 2)).toBeNull();
  });
  it("lays the remaining steps of every run, at its arm's pace, out over the workers as the page hands them out", () => {
    // v: 90 steps left at 2 s, s: 50 left at 1 s, on two workers: the lesson ends with v, at 180 s.
    expect(lessonSecondsLeft([run('v', 10, false, null, 2), run('s', 50)], 2)).toBe(180);
    // Two waiting s runs of 100 s: the first goes where s ends (50 + 100), the second after it (150 + 100 = 250).
    expect(lessonSecondsLeft([run('v', 10, false, null, 2), run('s', 50), run('s', 0), run('s', 0)], 2)).toBe(250);
  });
  it("expects a run to end where its collapse stops it, else as long as its arm's ended runs, else the prior", () => {
    expect(lessonSecondsLeft([run('v', 10, false, 20)], 1)).toBe(10);
    expect(lessonSecondsLeft([run('v', 30, true), run('v', 10)], 1)).toBe(20);
    expect(lessonSecondsLeft([run('v', 10)], 1, { v: { steps: 40, profile: Array(40).fill(1) } })).toBe(30);
  });
  it("adds the started runs' mean start-up time to each run not yet started", () => {
    expect(
      lessonSecondsLeft(
        [
          { ...run('v', 10, false, 20), startup: 6 },
          { ...run('v', 0, false, 20), startup: null },
        ],
        1,
      ),
    ).toBe(10 + 6 + 20);
  });
  it("prices the remaining steps as the recording's same steps, scaled by this computer against the recording", () => {
    // The recording: v's steps take 1 s; s's first 2 steps take 5 s, then 0.5 s.
    const priors = armPriors([
      { arm: 'v', times: Array(40).fill(1) },
      { arm: 's', times: [5, 5, ...Array(98).fill(0.5)] },
    ]);
    expect(priors.s).toEqual({ steps: 100, profile: [5, 5, ...Array(98).fill(0.5)] });
    expect(profileSeconds(priors.s, 0, 3)).toBe(10.5);
    expect(profileSeconds(priors.v, 39, 42)).toBe(3); // past its end at its last steps' mean
    // v ran 10 steps at 2 s here (twice the recording): s's 100 steps cost 2 x 59 = 118 s, v's 30 left 60 s.
    expect(lessonSecondsLeft([run('v', 10, false, null, 2), run('s', 0)], 1, priors)).toBe(178);
    // s's own slow first steps do not make its cheap later ones look slow: 98 steps left at 2 x 0.5 s.
    expect(lessonSecondsLeft([{ ...run('s', 2), stepSeconds: [10, 10] }], 1, priors)).toBe(98);
  });
});

describe('fitStepCost (what a step costs here per token it trains on)', () => {
  const timed = (tokens: number[], seconds: (n: number) => number): RunProgress => ({
    arm: 's',
    done: tokens.length,
    total: 100,
    over: false,
    stopAt: null,
    stepSeconds: tokens.map(seconds),
    stepTokens: tokens,
  });
  it('recovers the base and per-token cost of steps with and without an update', () => {
    const fit = fitStepCost([timed([5000, 0, 6000, 0, 4000, 0], (n) => 0.2 + 4e-4 * n)]);
    expect(fit!.base).toBeCloseTo(0.2, 6);
    expect(fit!.perToken).toBeCloseTo(4e-4, 9);
  });
  it('needs steps of both kinds, and counts recent steps more as the load drifts', () => {
    expect(fitStepCost([timed([5000, 5200, 5100, 4900], (n) => 1e-3 * n)])).toBeNull();
    // The first 40 steps ran at half the speed of the last 40: the fit sits near the recent cost (4e-4; 6e-4 unweighted).
    const tokens = Array.from({ length: 80 }, (_, i) => (i % 2 === 0 ? 5000 : 0));
    const run = timed(tokens, (n) => 0.2 + 4e-4 * n);
    const drifted = { ...run, stepSeconds: run.stepSeconds.map((t, i) => (i < 40 ? 2 * t : t)) };
    expect(fitStepCost([drifted])!.perToken).toBeLessThan(5e-4);
  });
});

describe('runLines on the success chart', () => {
  it('holds a run that is over at its last success in the mean, not one still running', () => {
    const key = 'train/Bandit/success';
    const lines = runLines(
      [
        {
          arm: 'v',
          seed: 0,
          rows: [
            { step: 1, [key]: 1 },
            { step: 2, [key]: 0 },
          ],
          over: true,
        },
        {
          arm: 'v',
          seed: 1,
          rows: [
            { step: 1, [key]: 1 },
            { step: 2, [key]: 1 },
            { step: 3, [key]: 1 },
          ],
        },
        { arm: 's', seed: 0, rows: [{ step: 1, [key]: 1 }] },
      ],
      key,
      ['v', 's'],
    );
    expect(lines.lines.find((l) => l.arm === 'v' && l.seed === null)!.values).toEqual([1, 0.5, 0.5]);
    expect(lines.lines.find((l) => l.arm === 'v' && l.seed === 0)!.values).toEqual([1, 0, null]);
    expect(lines.lines.find((l) => l.arm === 's' && l.seed === null)!.values).toEqual([1, null, null]);
  });
});

describe('runsPerArmFromSearch', () => {
  it('reads ?runs=N within 1..MAX_RUNS_PER_ARM, else the default', async () => {
    const { runsPerArmFromSearch, LESSON_RUNS_PER_ARM, MAX_RUNS_PER_ARM } = await import('../../../src/ui/lessonRuns');
    expect(runsPerArmFromSearch('?lesson&runs=1')).toBe(1);
    expect(runsPerArmFromSearch(`?runs=${MAX_RUNS_PER_ARM}`)).toBe(MAX_RUNS_PER_ARM);
    for (const bad of ['?lesson', '?runs=0', '?runs=2.5', `?runs=${MAX_RUNS_PER_ARM + 1}`, '?runs=x'])
      expect(runsPerArmFromSearch(bad)).toBe(LESSON_RUNS_PER_ARM);
  });
});
