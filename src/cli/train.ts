// `ragen train`: resolve a run config (preset, config file, --set overrides, flags), check everything that can be
// checked BEFORE any work (unknown preset / key / wrongly typed value, missing warm start, an output directory that
// already holds a run), then train each arm of the preset into its run directory (src/node/runDir.ts) with a
// progress line showing success, reward std and entropy, checkpoints every trainer.saveFreq steps and at the end,
// and a final summary. `--resume` continues from the newest checkpoint in --out, dropping the metrics lines written
// after it, so metrics.jsonl holds every step exactly once; it refuses (changing nothing) a config that differs from
// the run's own, a run directory without a complete checkpoint, and metrics that do not reach that checkpoint.
// While a run writes its directory it holds OUT/.ragen.lock, so two runs never write the same directory.
//
// The echo-trap preset has two arms (vanilla StarPO and StarPO-S, same seeds): they run one after the other into
// OUT/starpo and OUT/starpo-s.
import type { Command } from 'commander';
import * as fs from 'node:fs';
import * as path from 'node:path';
import cliProgress from 'cli-progress';
import { StepProgress } from '../node/stepProgress';
import * as tf from '@tensorflow/tfjs';
import { BACKEND_CHOICES, isBackendChoice, type BackendChoice, type BackendInfo } from '../model/backend';
import { JsonlSink, METRICS_FILE, ROLLOUTS_FILE, readMetricsJsonl } from '../metrics/jsonlSink';
import { successByTag } from '../metrics/keys';
import type { MetricRow } from '../metrics/jsonl';
import { formatDuration, timeEstimate } from '../metrics/pace';
import { formatSummary, summarizeMetrics } from '../metrics/summary';
import {
  CONFIG_LIMITS,
  ConfigError,
  applyOverrides,
  checkConfigShape,
  readConfigText,
  assertRunnable,
  configWarnings,
  defaultRunConfig,
  mergeConfigInput,
  parseRunConfig,
  type RunConfig,
} from '../starpo/config';
import { PRESET_NAMES, resolvePreset } from '../starpo/presets';
import { assertRunFitsContext } from '../starpo/contextFit';
import {
  assertResumable,
  cleanInterruptedWrites,
  holdsRun,
  latestCheckpoint,
  listCheckpoints,
  readRunConfig,
  writeCheckpoint,
  writeRunConfig,
} from '../node/runDir';
import { RunLockedError, acquireRunLock, assertNotLocked, type RunLock } from '../node/runLock';
import { Trainer, type StepResult } from '../starpo/trainer';
import { readCheckpointFiles } from '../model/checkpointDir';
import { modelDirFor } from './modelDir';
import { helperThreads, spawnHelperThread } from '../node/helperThread';
import { readModelContext, type ModelContext } from '../model/modelContext';
import { checkOutputDir } from '../node/safeWrite';
import { intFlag, workersFlag } from './flags';
import { UsageError } from './usage';
import type { HelperApi } from '../starpo/helper';
import { chooseCliBackend } from '../model/webgpuProbe';
import { nextCommands, stepLineLegend } from './trainReport';

export interface TrainFlags {
  preset?: string;
  config?: string;
  steps?: string;
  backend?: string;
  seed?: string;
  out?: string;
  set: string[];
  resume?: boolean;
  /** Train only this arm of a multi-arm preset (echo-trap: 'starpo' or 'starpo-s'), e.g. to run arms in parallel. */
  arm?: string;
  /** Cores per run: 1, 2 (a helper thread), or auto (see helperThreads). */
  workers?: string;
}

/** One arm to train: its name, resolved config and run directory. */
export interface TrainArm {
  name: string;
  config: RunConfig;
  out: string;
  /** Where the initial policy comes from (a Hugging Face Qwen2 directory). */
  modelDir: string;
}

export function registerTrain(program: Command): void {
  program
    .command('train')
    .description('train a policy with StarPO / StarPO-S (metrics.jsonl, rollouts.jsonl, checkpoints in --out)')
    .option('--preset <name>', `a named run config: ${PRESET_NAMES.join(', ')}`)
    .option(
      '--config <file>',
      'a YAML or JSON run config (any subset of the keys; laid over the preset or the defaults)',
    )
    .option('--steps <n>', 'training steps (trainer.totalSteps)')
    .option('--backend <name>', 'tfjs backend: webgpu, wasm, cpu or auto (trainer.backend)')
    .option('--seed <s>', 'seed of sampling and initialisation (trainer.seed)')
    .option('--out <dir>', 'run directory (default runs/<preset>)')
    .option(
      '--set <key=value>',
      'override a config key, e.g. --set actor.lr=3e-5 (repeatable)',
      (v: string, acc: string[]) => [...acc, v],
      [],
    )
    .option('--resume', 'continue the run in --out from its newest checkpoint')
    .option(
      '--arm <name>',
      "train only this arm of a multi-arm preset (echo-trap: 'starpo' or 'starpo-s'); it still goes to <out>/<arm>",
    )
    .option(
      '--workers <n>',
      'cores per run: 1, 2 (a helper thread generates half the rollouts and trains the critic; same results), or auto',
      'auto',
    )
    .action(async (flags: TrainFlags) => {
      const workers = workersFlag(flags.workers);
      const arms = resolveTrainArms(flags);
      await runTrainArms(arms, { resume: !!flags.resume, progressBar: !!process.stderr.isTTY, workers });
    });
}

// ---------------------------------------------------------------------------------------------------------------
// Resolution: everything checked before any work

function readConfigFile(file: string): unknown {
  if (!fs.existsSync(file)) throw new UsageError(`--config ${file}: the file does not exist`);
  if (!fs.statSync(file).isFile())
    throw new UsageError(`--config ${file}: not a file (give a YAML or JSON run config)`);
  const input = readConfigText(fs.readFileSync(file, 'utf8'), file.endsWith('.json') ? 'json' : 'yaml', file);
  checkConfigShape(input, file); // before it is merged: absurd nesting would overflow the merge
  return input;
}

/**
 * Turns the command line into the arms to train, or throws a UsageError naming the problem (unknown preset, config
 * key, wrongly typed value, missing warm start, an unusable --out, an --out that already holds a run, a resume whose
 * config differs or whose run directory is damaged, a prompt longer than the model's positions).
 */
export function resolveTrainArms(flags: TrainFlags): TrainArm[] {
  try {
    // The bounds of the keys they set (trainer.totalSteps, trainer.seed): src/starpo/config/limits.ts.
    const steps = intFlag(flags.steps, '--steps', 1, CONFIG_LIMITS.count);
    const seed = intFlag(flags.seed, '--seed', 0, CONFIG_LIMITS.seed);
    if (flags.backend !== undefined && !isBackendChoice(flags.backend)) {
      throw new UsageError(`--backend must be one of ${BACKEND_CHOICES.join(', ')}, got '${flags.backend}'`);
    }
    const flagOverrides = [
      ...(steps !== undefined ? [`trainer.totalSteps=${steps}`] : []),
      ...(seed !== undefined ? [`trainer.seed=${seed}`] : []),
      ...(flags.backend !== undefined ? [`trainer.backend=${flags.backend}`] : []),
    ];
    const arms =
      flags.resume && !flags.preset && !flags.config ? savedArms(flags, flagOverrides) : newArms(flags, flagOverrides);
    const contexts = new Map<string, ModelContext>();
    for (const arm of arms) {
      checkOutputDir('--out', arm.out);
      assertNotLocked(arm.out); // a live run's directory: say so, not what it lacks so far (say, its first checkpoint)
      if (flags.resume) assertResumable(arm.out, arm.config);
      else if (holdsRun(arm.out))
        throw new UsageError(`${arm.out} already holds a run: pass --resume to continue it, or choose another --out`);
      arm.modelDir = modelDirFor(arm.config);
      if (!contexts.has(arm.modelDir)) contexts.set(arm.modelDir, readModelContext(arm.modelDir));
      const context = contexts.get(arm.modelDir)!;
      assertRunFitsContext(arm.config, context.countTokens, context.maxPositions);
    }
    return arms;
  } catch (err) {
    if (err instanceof ConfigError) throw new UsageError(err.message);
    if (err instanceof UsageError) throw err;
    throw new UsageError((err as Error).message);
  }
}

/** Resuming with neither preset nor config: each run directory's own config.json, with --set / flags laid over it. */
function savedArms(flags: TrainFlags, flagOverrides: string[]): TrainArm[] {
  if (!flags.out)
    throw new UsageError('--resume needs --out DIR (the run to continue), or the --preset it was started with');
  assertNotLocked(flags.out); // a run that is still starting has no config.json yet: name its owner instead
  const dirs = fs.existsSync(path.join(flags.out, 'config.json'))
    ? [{ name: path.basename(flags.out), out: flags.out }]
    : fs.existsSync(flags.out) && fs.statSync(flags.out).isDirectory()
      ? fs
          .readdirSync(flags.out)
          .filter((d) => fs.existsSync(path.join(flags.out!, d, 'config.json')))
          .map((d) => ({ name: d, out: path.join(flags.out!, d) }))
      : [];
  if (dirs.length === 0) throw new UsageError(`--resume: ${flags.out} holds no run (no config.json)`);
  const chosen = flags.arm === undefined ? dirs : dirs.filter((d) => d.name === flags.arm);
  if (chosen.length === 0)
    throw new UsageError(
      `--arm: ${flags.out} holds no arm '${flags.arm}' (arms: ${dirs.map((d) => d.name).join(', ')})`,
    );
  return chosen.map(({ name, out }) => {
    const saved = parseRunConfig(readRunConfig(out), path.join(out, 'config.json'));
    return { name, config: applyOverrides(saved, [...flags.set, ...flagOverrides]), out, modelDir: '' };
  });
}

/** The arms of a preset or config file, with --set / flags laid over them. */
function newArms(flags: TrainFlags, flagOverrides: string[]): TrainArm[] {
  if (!flags.preset && !flags.config) throw new UsageError('give --preset NAME or --config FILE');
  const base = flags.preset
    ? resolvePreset(flags.preset).arms
    : [{ name: path.basename(flags.config!).replace(/\.(ya?ml|json)$/, ''), config: defaultRunConfig() }];
  const fileInput = flags.config ? readConfigFile(flags.config) : undefined;
  const root = flags.out ?? path.join('runs', flags.preset ?? base[0].name);
  if (flags.arm !== undefined && !base.some((arm) => arm.name === flags.arm)) {
    throw new UsageError(
      `--arm: ${flags.preset ? `preset '${flags.preset}'` : 'the config'} has no arm '${flags.arm}' (arms: ${base.map((a) => a.name).join(', ')})`,
    );
  }
  return base
    .filter((arm) => flags.arm === undefined || arm.name === flags.arm)
    .map((arm) => {
      let config = arm.config;
      if (fileInput !== undefined) config = parseRunConfig(mergeConfigInput(config, fileInput), flags.config);
      config = applyOverrides(config, [...flags.set, ...flagOverrides]);
      assertRunnable(config);
      const out = base.length > 1 ? path.join(root, arm.name) : root; // with --arm too, so arms run apart still pair up
      return { name: arm.name, config, out, modelDir: '' };
    });
}

// ---------------------------------------------------------------------------------------------------------------
// Training

export interface RunOptions {
  resume: boolean;
  /** Progress and summary lines (default console.log). */
  log?: (line: string) => void;
  /** Show a live progress bar (on a terminal) instead of one line per step. */
  progressBar?: boolean;
  /** Cores per run (default auto): see helperThreads. */
  workers?: number | 'auto';
}

/** The backend this process started for its last `ragen train`, and the choice (--backend or the config's) it was
 *  started for. A process trains once from the command line, but tests and tools call main() repeatedly in one
 *  process, where another command may have moved tfjs to another backend since: the choice is then made again. */
let started: { choice: BackendChoice; info: BackendInfo } | null = null;

/**
 * Trains the arms one after the other. Every arm's run directory is locked first (src/node/runLock.ts), before
 * the backend starts: a run directory another live `ragen train` is writing is refused, and so is a fresh run into
 * a directory that gained a run since it was checked.
 */
export async function runTrainArms(arms: readonly TrainArm[], opts: RunOptions): Promise<void> {
  const log = opts.log ?? ((line: string) => console.log(line));
  const locks: RunLock[] = [];
  const newDirs = arms.map((a) => a.out).filter((out) => !fs.existsSync(out));
  let failed = true;
  try {
    for (const arm of arms) {
      locks.push(lockRunDir(arm.out));
      if (!opts.resume && holdsRun(arm.out))
        throw new UsageError(`${arm.out} already holds a run: pass --resume to continue it, or choose another --out`);
      for (const line of cleanInterruptedWrites(arm.out)) log(line);
    }
    const backend = arms[0].config.trainer.backend;
    if (started?.choice !== backend || tf.getBackend() !== started.info.name) {
      started = { choice: backend, info: await chooseCliBackend(backend, log) };
    }
    for (const line of stepLineLegend(arms[0].config)) log(line);
    for (const arm of arms) {
      for (const w of configWarnings(arm.config)) log(`warning: ${w}`);
      if (arms.length > 1) log(`\n=== arm ${arm.name} -> ${arm.out} ===`);
      await trainArm(arm, { ...opts, log });
    }
    log('');
    for (const line of nextCommands(
      arms.map((a) => ({ out: a.out, checkpoint: latestCheckpoint(a.out)?.dir ?? null })),
    ))
      log(line);
    failed = false;
  } finally {
    for (const lock of locks) lock.release();
    // A run directory this command made and that a failed start left empty goes too.
    if (failed)
      for (const out of newDirs) if (fs.existsSync(out) && fs.readdirSync(out).length === 0) fs.rmdirSync(out);
  }
}

/** The lock of a run directory, or a UsageError naming why it cannot be had (in use, or --out cannot be created). */
function lockRunDir(out: string): RunLock {
  try {
    return acquireRunLock(out);
  } catch (err) {
    if (err instanceof RunLockedError) throw new UsageError(err.message);
    throw new UsageError(`--out ${out} cannot be used: ${(err as Error).message}`);
  }
}

function meanOf(numbers: readonly number[]): number {
  const values = numbers.filter(Number.isFinite);
  return values.length ? values.reduce((a, b) => a + b, 0) / values.length : NaN;
}

const fmt = (v: number, digits = 3) => (Number.isFinite(v) ? v.toFixed(digits) : '-');

/**
 * Builds the trainer; a checkpoint that cannot be loaded (missing or truncated file, bad header, missing critic or
 * optimizer state) becomes one UsageError line, `describe(why)`, instead of a stack trace.
 */
async function startTrainer(
  create: () => Promise<Trainer>,
  sink: JsonlSink,
  describe: (why: string) => string,
): Promise<Trainer> {
  try {
    return await create();
  } catch (err) {
    await sink.close();
    // Our loaders throw plain Errors that name the file; anything else (a RangeError, a tfjs failure) is a bug.
    if (Object.getPrototypeOf(err) === Error.prototype) throw new UsageError(describe((err as Error).message));
    throw err;
  }
}

/** The message for a newest checkpoint that cannot be loaded, naming the older complete one if there is one. */
function damagedCheckpoint(out: string, dir: string, why: string): string {
  const older = listCheckpoints(out).filter((c) => c.dir !== dir);
  const next = older.length
    ? `the newest checkpoint before it is ${older[older.length - 1].dir}: move ${path.basename(dir)} out of ${path.dirname(dir)} to resume from there`
    : 'there is no older checkpoint to resume from';
  return `--resume: the checkpoint ${dir} cannot be loaded: ${why}. Nothing was changed; ${next}`;
}

/**
 * Validation success of each val env by name ("Bandit 0.94 BanditTest 0.00"): an average over envs would hide that a
 * policy solves its training env and fails the held-out one. '-' before the first validation.
 */
export function formatValidation(latest: Readonly<Record<string, number>>): string {
  const parts = Object.entries(successByTag(latest, 'val')).map(([tag, value]) => `${tag} ${fmt(value, 2)}`);
  return parts.length ? parts.join(' ') : '-';
}

/** Trains one arm into its run directory; returns the metrics rows of the finished run. */
export async function trainArm(arm: TrainArm, opts: RunOptions): Promise<void> {
  const log = opts.log ?? ((line: string) => console.log(line));
  const { config, out } = arm;
  let trainer: Trainer;
  let sink: JsonlSink;
  const checkpoint = opts.resume ? latestCheckpoint(out) : null;
  // resolveTrainArms refused a resume without a checkpoint; one that lost it since then is refused the same way.
  if (opts.resume && !checkpoint)
    throw new UsageError(`--resume: ${out} holds no complete checkpoint to continue from; nothing was changed`);
  const helper =
    helperThreads(opts.workers ?? 'auto', started?.info.name ?? config.trainer.backend, config) > 0
      ? spawnHelperThread()
      : null;
  if (helper)
    log(
      'using 2 cores: a helper thread generates half of each rollout batch and trains the critic (same results as 1)',
    );
  const progress = new StepProgress({ log });
  try {
    ({ trainer, sink } = await createTrainer(arm, checkpoint, helper?.api, log, progress.report));
  } catch (err) {
    await helper?.terminate();
    throw err;
  }
  writeRunConfig(out, config);
  try {
    await trainLoop(arm, trainer, sink, checkpoint, opts, log, progress);
  } finally {
    await helper?.terminate();
  }
}

/**
 * The trainer of a fresh run (from the arm's model directory) or of a resume (from `checkpoint`). The checkpoint is
 * loaded before anything in the run directory changes, so a damaged one changes nothing.
 */
async function createTrainer(
  arm: TrainArm,
  checkpoint: ReturnType<typeof latestCheckpoint> | null,
  helper: HelperApi | undefined,
  log: (line: string) => void,
  onProgress: StepProgress['report'],
): Promise<{ trainer: Trainer; sink: JsonlSink }> {
  const { config, out } = arm;
  let trainer: Trainer;
  const undoFreshStart = freshStartUndo(out);
  const sink = new JsonlSink(out);
  if (checkpoint) {
    trainer = await startTrainer(
      () => Trainer.create(config, { resumeFiles: readCheckpointFiles(checkpoint.dir), sink, log, helper, onProgress }),
      sink,
      (why) => damagedCheckpoint(out, checkpoint.dir, why),
    );
    sink.truncateAfter(checkpoint.step);
    log(`resuming ${out} from checkpoint step ${checkpoint.step} (metrics after it dropped)`);
  } else {
    try {
      trainer = await startTrainer(
        () => Trainer.create(config, { policyFiles: readCheckpointFiles(arm.modelDir), sink, log, helper, onProgress }),
        sink,
        (why) => `cannot start from ${arm.modelDir}: ${why}`,
      );
    } catch (err) {
      undoFreshStart(); // a start that never trained leaves nothing that looks like a run
      throw err;
    }
  }
  return { trainer, sink };
}

/**
 * What a fresh start adds to OUT before the model has loaded: the directory and the empty metrics and rollouts
 * files the sink opens. Returns the function that takes them back (only while they are still empty), so that a start
 * that fails (a bad model, a rank too wide) leaves OUT as it found it, and the next start is not told to --resume a
 * run that never began.
 */
function freshStartUndo(out: string): () => void {
  const dirExisted = fs.existsSync(out);
  const newFiles = [METRICS_FILE, ROLLOUTS_FILE].map((f) => path.join(out, f)).filter((f) => !fs.existsSync(f));
  return () => {
    for (const file of newFiles) {
      if (fs.existsSync(file) && fs.statSync(file).size === 0) fs.rmSync(file);
    }
    if (!dirExisted && fs.existsSync(out) && fs.readdirSync(out).length === 0) fs.rmdirSync(out);
  };
}

async function trainLoop(
  arm: TrainArm,
  trainer: Trainer,
  sink: JsonlSink,
  checkpoint: ReturnType<typeof latestCheckpoint> | null,
  opts: RunOptions,
  log: (line: string) => void,
  progress: StepProgress,
): Promise<void> {
  const { config, out } = arm;
  const total = config.trainer.totalSteps;

  const useBar = !!opts.progressBar;
  const bar = useBar
    ? new cliProgress.SingleBar(
        {
          format:
            '{bar} {value}/{total} | success {success} | val {val} | reward std {std} | entropy {entropy} | {sps} s/step{left} {phase}',
          hideCursor: true,
        },
        cliProgress.Presets.shades_classic,
      )
    : null;
  bar?.start(total, trainer.stepsDone, {
    success: '-',
    val: '-',
    std: '-',
    entropy: '-',
    sps: '-',
    left: '',
    phase: '',
  });
  // Inside a step: the bar shows where it is; without a bar a slow step logs a line now and then.
  if (bar) progress.useBar((phase) => bar.update({ phase: phase ? `| ${phase}` : '' }));
  let lastSaved = checkpoint?.step ?? -1;
  const timed: MetricRow[] = []; // this session's steps with their timing_s/step
  try {
    while (!trainer.finished) {
      progress.startStep(trainer.stepsDone + 1);
      const r: StepResult = await trainer.step();
      const m = r.metrics;
      timed.push({ step: r.step, 'timing_s/step': m['timing_s/step'] });
      // The time left at the pace of the last few steps (a paper-size run takes hours); nothing after the last step.
      const estimate = timeEstimate(timed, r.step, total);
      const left = estimate && estimate.secondsLeft > 0 ? `about ${formatDuration(estimate.secondsLeft)} left` : '';
      const shown = {
        success: fmt(meanOf(Object.values(successByTag(m, 'train'))), 2),
        val: formatValidation(trainer.latestValidation),
        std: fmt(m['rollout/in_group_std']),
        entropy: fmt(m['actor/entropy_loss']),
        sps: fmt(m['timing_s/step'], 1),
      };
      if (bar) bar.update(r.step, { ...shown, left: left && ` | ${left}` });
      else {
        log(
          `step ${r.step}/${total}  success ${shown.success}  val ${shown.val}  reward std ${shown.std}  entropy ${shown.entropy}  ${shown.sps} s/step${left && `  ${left}`}`,
        );
      }
      if (trainer.shouldCheckpoint(r.step) || trainer.finished) {
        writeCheckpoint(out, r.step, await trainer.checkpointFiles(), config.trainer.keepCheckpoints);
        lastSaved = r.step;
      }
    }
    if (lastSaved !== trainer.stepsDone && trainer.stepsDone > 0) {
      writeCheckpoint(out, trainer.stepsDone, await trainer.checkpointFiles(), config.trainer.keepCheckpoints);
    }
  } finally {
    bar?.stop();
    await sink.close();
    trainer.dispose();
  }
  if (trainer.stoppedBy) log(`run stopped early (${trainer.stoppedBy}) after step ${trainer.stepsDone}`);
  if (timed.length === 0) log(`${out}: the run was already complete (${trainer.stepsDone} steps)`);
  const rows = readMetricsJsonl(path.join(out, METRICS_FILE));
  log(
    `\n${out}: ${trainer.stepsDone} steps${timed.length ? `, ${fmt(meanOf(timed.map((r) => r['timing_s/step'] as number)), 2)} s/step` : ''}`,
  );
  log(formatSummary(summarizeMetrics(rows, { echoTrap: config.echoTrap })));
}
