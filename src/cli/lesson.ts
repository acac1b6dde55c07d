// `ragen lesson`: the Echo Trap lesson headless. Trains both arms of the preset (vanilla StarPO `starpo`, StarPO-S
// `starpo-s`) on each training seed into OUT/seed-S/<arm> with `ragen train`'s machinery, stops a run a few steps
// after its collapse (trainer.stopAfterCollapse), then judges every run with the lesson's one verdict
// (src/metrics/lessonVerdict.ts, the same the lesson page uses), prints one line of counts per arm and the sentence
// a class reads, and writes OUT/lesson.json.
//
// Running it again with the same --out picks up where it stopped: a finished run (its newest checkpoint is at its
// last step or records an early stop) is not trained again, an unfinished one resumes from its newest checkpoint,
// and one killed before its first checkpoint starts over. The lesson saves a checkpoint every 10 steps for this
// (trainer.saveFreq, unless --set says otherwise).
import type { Command } from 'commander';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { METRICS_FILE, readMetricsJsonl } from '../metrics/jsonlSink';
import { runVerdict } from '../metrics/lessonVerdict';
import { LESSON_ARMS, countLines, lessonReport, type LessonFile, type LessonRunRecord } from '../eval/lessonReport';
import { CONFIG_LIMITS } from '../starpo/config';
import { resolvePreset } from '../starpo/presets';
import { holdsRun, latestCheckpoint } from '../node/runDir';
import { assertNotLocked } from '../node/runLock';
import { clip, intFlag, workersFlag } from './flags';
import { UsageError } from './usage';
import { resolveTrainArms, runTrainArms, type TrainArm } from './train';

/** Most training seeds one `ragen lesson` takes (each trains two runs). */
export const MAX_LESSON_SEEDS = 1_000;
/** Steps a run goes on after its collapse unless --stop-after-collapse says otherwise: enough to see it stay down. */
export const DEFAULT_STOP_AFTER_COLLAPSE = 10;
/** Checkpoint interval of the lesson's runs, so that an interrupted lesson resumes them. */
const LESSON_SAVE_FREQ = 10;
export const LESSON_FILE = 'lesson.json';

export interface LessonFlags {
  preset: string;
  seeds?: string;
  backend?: string;
  workers?: string;
  out?: string;
  steps?: string;
  stopAfterCollapse?: string;
  set: string[];
}

export function registerLesson(program: Command): void {
  program
    .command('lesson')
    .description(
      'the Echo Trap lesson headless: both arms on each training seed, each run judged and counted (OUT/lesson.json)',
    )
    .option('--preset <name>', "a preset with arms 'starpo' and 'starpo-s'", 'echo-trap')
    .requiredOption('--seeds <list>', 'training seeds (trainer.seed), e.g. 1,2,3 or 100-109')
    .option('--backend <name>', 'tfjs backend: webgpu, wasm, cpu or auto (trainer.backend)')
    .option('--workers <n>', 'cores per run: 1, 2 or auto (as ragen train)', 'auto')
    .requiredOption(
      '--out <dir>',
      'lesson directory: runs in OUT/seed-S/<arm>, counts in OUT/lesson.json; run again to resume',
    )
    .option('--steps <n>', 'training steps per run (trainer.totalSteps)')
    .option(
      '--stop-after-collapse <k>',
      'end a run k steps after its collapse, 0 = never (trainer.stopAfterCollapse)',
      String(DEFAULT_STOP_AFTER_COLLAPSE),
    )
    .option(
      '--set <key=value>',
      'override a config key of both arms (repeatable)',
      (v: string, acc: string[]) => [...acc, v],
      [],
    )
    .action(async (flags: LessonFlags) => {
      await runLesson(flags, { progressBar: !!process.stderr.isTTY });
    });
}

/**
 * `--seeds`: comma-separated seeds and ranges A-B, each from 0 to CONFIG_LIMITS.seed, none twice, at most
 * MAX_LESSON_SEEDS in all.
 */
export function parseSeeds(text: string): number[] {
  const items = text.split(',').map((s) => s.trim());
  if (items.length > MAX_LESSON_SEEDS)
    throw new UsageError(`--seeds takes at most ${MAX_LESSON_SEEDS} seeds, got ${items.length} items`);
  const seeds: number[] = [];
  for (const item of items) {
    if (item === '')
      throw new UsageError(
        `--seeds must be seeds or ranges separated by commas (e.g. 1,2,3 or 100-109), got '${clip(text)}'`,
      );
    const range = /^(\d+)\s*-\s*(\d+)$/.exec(item);
    if (range) {
      const [lo, hi] = [
        intFlag(range[1], '--seeds', 0, CONFIG_LIMITS.seed)!,
        intFlag(range[2], '--seeds', 0, CONFIG_LIMITS.seed)!,
      ];
      if (hi < lo) throw new UsageError(`--seeds: the range ${item} runs backwards`);
      if (seeds.length + hi - lo + 1 > MAX_LESSON_SEEDS)
        throw new UsageError(`--seeds takes at most ${MAX_LESSON_SEEDS} seeds, got more in '${clip(text)}'`);
      for (let s = lo; s <= hi; s++) seeds.push(s);
    } else {
      seeds.push(intFlag(item, '--seeds', 0, CONFIG_LIMITS.seed)!);
    }
  }
  const twice = seeds.find((s, i) => seeds.indexOf(s) !== i);
  if (twice !== undefined) throw new UsageError(`--seeds names seed ${twice} twice`);
  return seeds;
}

/** Where a lesson run stands in its directory. */
type RunStatus = 'new' | 'finished' | 'unfinished' | 'restart';

/** The step and early stop trainer_state.json records in a checkpoint, or a UsageError naming the file. */
function checkpointState(dir: string): { step: number; stoppedBy: string | null } {
  const file = path.join(dir, 'trainer_state.json');
  try {
    const state = JSON.parse(fs.readFileSync(file, 'utf8')) as { step: number; stoppedBy?: string | null };
    return { step: state.step, stoppedBy: state.stoppedBy ?? null };
  } catch (err) {
    throw new UsageError(`${file} cannot be read: ${(err as Error).message}`);
  }
}

function runStatus(out: string, totalSteps: number): RunStatus {
  if (!holdsRun(out)) return 'new';
  const checkpoint = latestCheckpoint(out);
  if (!checkpoint) return 'restart';
  const state = checkpointState(checkpoint.dir);
  return state.stoppedBy || state.step >= totalSteps ? 'finished' : 'unfinished';
}

interface LessonRun {
  seed: number;
  arm: (typeof LESSON_ARMS)[number];
  out: string;
  status: RunStatus;
}

export async function runLesson(
  flags: LessonFlags,
  opts: { progressBar?: boolean; log?: (line: string) => void } = {},
): Promise<LessonFile> {
  const log = opts.log ?? ((line: string) => console.log(line));
  const { seeds, out, workers, trainFlags } = checkFlags(flags);

  // Everything checkable before any work: the config of a fresh run (preset, --set, backend, warm start, context),
  // resolved into a folder that does not exist, and then each run's own directory.
  const probe = path.join(os.tmpdir(), `ragen-lesson-check-${process.pid}-${Date.now()}`);
  const config = resolveTrainArms({ ...trainFlags, seed: String(seeds[0]), out: probe })[0].config;
  const runs: LessonRun[] = seeds.flatMap((seed) =>
    LESSON_ARMS.map((arm) => {
      const dir = path.join(out, `seed-${seed}`, arm.name);
      return { seed, arm, out: dir, status: runStatus(dir, config.trainer.totalSteps) };
    }),
  );
  for (const run of runs) {
    if (run.status === 'restart') assertNotLocked(run.out);
    else resolveRun(run, trainFlags); // refuses a run whose config.json differs, or one another process holds
  }
  const done = runs.filter((r) => r.status === 'finished').length;
  log(
    `lesson: preset ${flags.preset}, ${seeds.length} seed${seeds.length === 1 ? '' : 's'} x 2 arms -> ${out}` +
      (done ? ` (${done} of ${runs.length} runs already finished)` : ''),
  );

  for (const [i, run] of runs.entries()) {
    const where = `seed ${run.seed} (${Math.floor(i / 2) + 1} of ${seeds.length}), ${run.arm.label}`;
    if (run.status === 'finished') {
      log(`\n=== ${where}: finished earlier, not trained again ===`);
      continue;
    }
    if (run.status === 'restart') {
      log(`\n=== ${where}: ${run.out} was stopped before its first checkpoint; starting it over ===`);
      fs.rmSync(run.out, { recursive: true, force: true });
      run.status = 'new';
    } else {
      log(`\n=== ${where}: ${run.status === 'unfinished' ? 'resuming' : 'training'} -> ${run.out} ===`);
    }
    const arm = resolveRun(run, trainFlags);
    const prefix = `[seed ${run.seed} ${run.arm.name}] `;
    await runTrainArms([arm], {
      resume: run.status === 'unfinished',
      workers,
      progressBar: opts.progressBar,
      log: (line) => log(line ? prefix + line : line),
    });
  }

  const trained = runs.some((r) => r.status !== 'finished');
  const file = lessonFile(
    flags.preset,
    seeds,
    runs,
    config.trainer.backend,
    trained,
    config.trainer.totalSteps,
    config.trainer.stopAfterCollapse,
  );
  fs.writeFileSync(path.join(out, LESSON_FILE), JSON.stringify(file, null, 2) + '\n');
  log('');
  for (const line of countLines(file)) log(line);
  log(`wrote ${path.join(out, LESSON_FILE)}`);
  return file;
}

function checkFlags(flags: LessonFlags) {
  if (flags.out === undefined || flags.out.trim() === '') throw new UsageError('--out must name the lesson directory');
  if (flags.seeds === undefined) throw new UsageError('--seeds is required (e.g. --seeds 1,2,3)');
  const seeds = parseSeeds(flags.seeds);
  let arms: string[];
  try {
    arms = resolvePreset(flags.preset).arms.map((a) => a.name);
  } catch (err) {
    throw new UsageError(`--preset: ${(err as Error).message}`);
  }
  if (!LESSON_ARMS.every((a) => arms.includes(a.name))) {
    throw new UsageError(
      `--preset ${flags.preset} has no arms 'starpo' and 'starpo-s' for the lesson to compare (arms: ${arms.join(', ')}); try --preset echo-trap`,
    );
  }
  const stopAfterCollapse = intFlag(
    flags.stopAfterCollapse ?? String(DEFAULT_STOP_AFTER_COLLAPSE),
    '--stop-after-collapse',
    0,
    CONFIG_LIMITS.count,
  )!;
  const workers = workersFlag(flags.workers ?? 'auto');
  // The lesson's settings come first, so that a --set of the same key wins.
  const set = [`trainer.saveFreq=${LESSON_SAVE_FREQ}`, `trainer.stopAfterCollapse=${stopAfterCollapse}`, ...flags.set];
  return {
    seeds,
    out: flags.out,
    stopAfterCollapse,
    workers,
    trainFlags: { preset: flags.preset, backend: flags.backend, steps: flags.steps, set },
  };
}

/** The arm of `ragen train --preset P --arm A --seed S --out OUT/seed-S` (with --resume where the run has begun). */
function resolveRun(run: LessonRun, trainFlags: ReturnType<typeof checkFlags>['trainFlags']): TrainArm {
  const resume = run.status === 'finished' || run.status === 'unfinished';
  return resolveTrainArms({
    ...trainFlags,
    seed: String(run.seed),
    arm: run.arm.name,
    out: path.dirname(run.out),
    resume,
  })[0];
}

function runRecord(run: LessonRun): LessonRunRecord {
  const rows = readMetricsJsonl(path.join(run.out, METRICS_FILE));
  const checkpoint = latestCheckpoint(run.out);
  const state = checkpoint ? checkpointState(checkpoint.dir) : null;
  return { dir: run.out, steps: state?.step ?? 0, stoppedBy: state?.stoppedBy ?? null, ...runVerdict(rows) };
}

function gitCommit(): string | null {
  try {
    return (
      execFileSync('git', ['rev-parse', 'HEAD'], { stdio: ['ignore', 'pipe', 'ignore'] })
        .toString()
        .trim() || null
    );
  } catch {
    return null;
  }
}

function lessonFile(
  preset: string,
  seeds: number[],
  runs: LessonRun[],
  backend: string,
  trained: boolean,
  totalSteps: number,
  stopAfterCollapse: number,
): LessonFile {
  // The backend tfjs ran this command's training on; null when every run had finished before.
  const used = trained ? (tf.getBackend() ?? null) : null;
  return lessonReport(
    { preset, seeds, backend: { choice: backend, used }, commit: gitCommit(), totalSteps, stopAfterCollapse },
    (seed, arm) => runRecord(runs.find((r) => r.seed === seed && r.arm.name === arm)!),
  );
}
