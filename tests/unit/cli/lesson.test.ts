// `ragen lesson`: bad --seeds refused in one line; a tiny lesson (echo-trap cut to 2 env groups of 4 and 2 steps)
// trains both arms into OUT/seed-S/<arm> and writes lesson.json; running it again skips a finished seed, resumes an
// unfinished run and starts over one stopped before its first checkpoint; and on hand-made runs (metrics rows with a
// collapse after the warning, judged without training) it prints the counts and the lesson's sentence.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseSeeds } from '../../../src/cli/lesson';
import type { LessonFile } from '../../../src/eval/lessonReport';
import { resolveTrainArms } from '../../../src/cli/train';
import { writeRunConfig } from '../../../src/node/runDir';
import { expectRefused, ragen, snapshot } from './cli-fixture';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ragen-lesson-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** The echo-trap preset cut down so that a run's step takes about a second. */
const TINY_SETS = [
  'trainer.valBeforeTrain=false',
  'trainer.testFreq=0',
  'rollout.maxNewTokens=16',
  'agent.envGroups=2',
  'agent.trainEnvs.0.nGroups=2',
  'agent.groupSize=4',
  'actor.ppoMiniBatchSize=8',
  'actor.ppoMicroBatchSize=8',
];
const TINY = ['--backend', 'wasm', '--workers', '1', ...TINY_SETS.flatMap((s) => ['--set', s])];
const lessonJson = (out: string): LessonFile => JSON.parse(fs.readFileSync(path.join(out, 'lesson.json'), 'utf8'));
const metricSteps = (run: string) =>
  fs
    .readFileSync(path.join(run, 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l).step);

describe('ragen lesson: --seeds', () => {
  it('takes seeds and ranges', () => {
    expect(parseSeeds('3')).toEqual([3]);
    expect(parseSeeds('1, 2,7-9')).toEqual([1, 2, 7, 8, 9]);
  });

  it.each([
    ['', /--seeds must be seeds or ranges separated by commas/],
    ['1,,2', /--seeds must be seeds or ranges separated by commas/],
    ['x', /--seeds must be an integer >= 0, got 'x'/],
    ['-1', /--seeds must be an integer >= 0, got '-1'/],
    ['1.5', /--seeds must be an integer >= 0/],
    ['99999999999', /--seeds must be an integer from 0 to 2147483647/],
    ['5-3', /the range 5-3 runs backwards/],
    ['1,2,1', /names seed 1 twice/],
    ['0-5000', /at most 1000 seeds/],
    [Array.from({ length: 1001 }, (_, i) => i).join(','), /at most 1000 seeds, got 1001 items/],
  ])("refuses --seeds '%s' in one line, exit 2", async (seeds, pattern) => {
    expectRefused(await ragen('lesson', '--seeds', seeds, '--out', path.join(tmp, 'never')), pattern);
    expect(fs.existsSync(path.join(tmp, 'never'))).toBe(false);
  });

  it('refuses a preset without the two arms, a bad --stop-after-collapse, and no --seeds', async () => {
    expectRefused(
      await ragen('lesson', '--preset', 'bandit-tiny', '--seeds', '1', '--out', path.join(tmp, 'never')),
      /no arms 'starpo' and 'starpo-s'/,
    );
    expectRefused(
      await ragen('lesson', '--preset', 'nope', '--seeds', '1', '--out', path.join(tmp, 'never')),
      /--preset: .*nope/,
    );
    expectRefused(
      await ragen('lesson', '--seeds', '1', '--stop-after-collapse', '-1', '--out', path.join(tmp, 'never')),
      /--stop-after-collapse must be an integer >= 0/,
    );
    expect((await ragen('lesson', '--out', path.join(tmp, 'never'))).code).toBe(2);
  });
});

describe('ragen lesson: a tiny lesson, run again', () => {
  const out = path.join(tmp, 'tiny');

  it('trains both arms on each seed, prints a line per arm and the sentence, writes lesson.json', async () => {
    const r = await ragen('lesson', '--seeds', '1', '--steps', '2', '--out', out, ...TINY);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/=== seed 1 \(1 of 1\), vanilla StarPO: training -> .*seed-1\/starpo ===/);
    expect(r.out).toMatch(/\[seed 1 starpo-s\] step 2\/2/);
    expect(r.out).toMatch(
      /^vanilla StarPO \(starpo\): +1 run; collapsed after the warning 0 of 1 \(0%, 95% interval 0%-79%\); collapsed 0; held /m,
    );
    expect(r.out).toMatch(/^StarPO-S \(starpo-s\): +1 run; .*held and ended 20 points above vanilla /m);
    expect(r.out).toContain('In words: vanilla StarPO collapsed in 0 of 1 run; StarPO-S in 0 of 1');
    const file = lessonJson(out);
    expect(file).toMatchObject({
      format: 'ragen-lesson/1',
      preset: 'echo-trap',
      seeds: [1],
      totalSteps: 2,
      stopAfterCollapse: 10,
      backend: { choice: 'wasm', used: 'wasm' },
    });
    expect(file.runs[0].starpo).toMatchObject({ steps: 2, lastStep: 2, stoppedBy: null, collapses: false });
    expect(file.arms.starpo.counts).toEqual({
      runs: 1,
      collapsed: 0,
      collapsedAfterWarning: 0,
      held: expect.any(Number),
    });
    expect(file.arms['starpo-s'].rates.heldAboveVanilla).toMatchObject({ runs: 1 });
    expect(file.sentence).toBe('vanilla StarPO collapsed in 0 of 1 run; StarPO-S in 0 of 1');
    expect(metricSteps(path.join(out, 'seed-1', 'starpo'))).toEqual([1, 2]);
  }, 180_000);

  it('skips a finished seed and trains the new one', async () => {
    const before = snapshot(path.join(out, 'seed-1'));
    const r = await ragen('lesson', '--seeds', '1,2', '--steps', '2', '--out', out, ...TINY);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain('(2 of 4 runs already finished)');
    expect(r.out).toContain('=== seed 1 (1 of 2), vanilla StarPO: finished earlier, not trained again ===');
    expect(r.out).not.toMatch(/\[seed 1 /);
    expect(r.out).toMatch(/=== seed 2 \(2 of 2\), StarPO-S: training -> /);
    expect(snapshot(path.join(out, 'seed-1'))).toEqual(before);
    expect(lessonJson(out).arms.starpo.counts.runs).toBe(2);
  }, 180_000);

  it('resumes unfinished runs from their checkpoint, and starts over one stopped before its first', async () => {
    fs.rmSync(path.join(out, 'seed-2', 'starpo-s', 'checkpoints'), { recursive: true }); // as if killed before a checkpoint
    const r = await ragen('lesson', '--seeds', '2', '--steps', '3', '--out', out, ...TINY);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/=== seed 2 \(1 of 1\), vanilla StarPO: resuming -> /);
    expect(r.out).toMatch(/\[seed 2 starpo\] resuming .* from checkpoint step 2/);
    expect(r.out).toMatch(
      /=== seed 2 \(1 of 1\), StarPO-S: .* was stopped before its first checkpoint; starting it over ===/,
    );
    expect(metricSteps(path.join(out, 'seed-2', 'starpo'))).toEqual([1, 2, 3]);
    expect(metricSteps(path.join(out, 'seed-2', 'starpo-s'))).toEqual([1, 2, 3]);
    expect(lessonJson(out)).toMatchObject({ seeds: [2], totalSteps: 3 });
  }, 180_000);

  it('refuses, in one line and changing nothing, a run again with another config', async () => {
    const before = snapshot(out);
    expectRefused(
      await ragen('lesson', '--seeds', '1', '--steps', '2', '--out', out, ...TINY, '--set', 'actor.lr=0.5'),
      /config differs from the one .*seed-1.starpo was started with, at actor\.lr/,
    );
    expect(snapshot(out)).toEqual(before);
  });
});

describe('ragen lesson: the counts, on hand-made runs', () => {
  const out = path.join(tmp, 'made');
  const STEPS = 35;
  const rise = Array.from({ length: 10 }, (_, i) => 0.2 + (0.6 * i) / 9);
  const collapsing = [...rise, ...Array(5).fill(0.8), ...Array(20).fill(0.05)];
  const holding = [...rise, ...Array(25).fill(0.75)];

  /** A finished run as `ragen lesson` would leave it: config, metrics rows, a checkpoint's trainer_state.json. */
  function madeRun(seed: number, arm: string, curve: number[], warningFrom: number | null): void {
    const [resolved] = resolveTrainArms({
      preset: 'echo-trap',
      seed: String(seed),
      arm,
      out: path.join(out, `seed-${seed}`),
      backend: 'wasm',
      steps: String(STEPS),
      set: ['trainer.saveFreq=10', 'trainer.stopAfterCollapse=10', ...TINY_SETS],
    });
    writeRunConfig(resolved.out, resolved.config);
    const rows = curve.map((v, i) =>
      JSON.stringify({
        step: i + 1,
        'train/Bandit/success': v,
        'echo_trap/warning': warningFrom !== null && i + 1 >= warningFrom ? 1 : 0,
      }),
    );
    fs.writeFileSync(path.join(resolved.out, 'metrics.jsonl'), rows.join('\n') + '\n');
    const checkpoint = path.join(resolved.out, 'checkpoints', `step-${STEPS}`);
    fs.mkdirSync(checkpoint, { recursive: true });
    fs.writeFileSync(path.join(checkpoint, 'trainer_state.json'), JSON.stringify({ step: STEPS, stoppedBy: null }));
  }

  it('counts vanilla collapses after the warning and StarPO-S holds, in one line each and in words', async () => {
    madeRun(10, 'starpo', collapsing, 14);
    madeRun(11, 'starpo', collapsing, 12);
    madeRun(12, 'starpo', collapsing, 30); // the warning came after the collapse
    madeRun(13, 'starpo', holding, null);
    for (const seed of [10, 11, 12, 13]) madeRun(seed, 'starpo-s', holding, null);
    const r = await ragen('lesson', '--seeds', '10-13', '--steps', String(STEPS), '--out', out, ...TINY);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain('(8 of 8 runs already finished)');
    expect(r.out).toMatch(
      /^vanilla StarPO \(starpo\): +4 runs; collapsed after the warning 2 of 4 \(50%, 95% interval 15%-85%\); collapsed 3; held 1 of 4 \(25%/m,
    );
    expect(r.out).toMatch(
      /^StarPO-S \(starpo-s\): +4 runs; collapsed after the warning 0 of 4 .*; collapsed 0; held 4 of 4 \(100%, 95% interval 51%-100%\); held and ended 20 points above vanilla 3 of 4/m,
    );
    expect(r.out).toContain(
      'In words: vanilla StarPO collapsed in 3 of 4 runs, 2 after the warning; StarPO-S in 0 of 4',
    );
    const file = lessonJson(out);
    expect(file.runs.map((s) => [s.seed, s.starpo.collapsedAfterWarning, s.starpoSEndsAbove])).toEqual([
      [10, true, true],
      [11, true, true],
      [12, false, true],
      [13, false, false],
    ]);
    expect(file.arms.starpo.counts).toEqual({ runs: 4, collapsed: 3, collapsedAfterWarning: 2, held: 1 });
    expect(file.arms['starpo-s'].counts).toEqual({
      runs: 4,
      collapsed: 0,
      collapsedAfterWarning: 0,
      held: 4,
      heldAboveVanilla: 3,
    });
    expect(file.arms.starpo.rates.collapsedAfterWarning).toMatchObject({ count: 2, runs: 4, rate: 0.5 });
    expect(file.backend).toEqual({ choice: 'wasm', used: null }); // nothing trained
  }, 60_000);
});
