// `ragen train`: resolve a run config (preset, config file, --set overrides, flags), check everything that can be
// checked BEFORE any work (unknown preset / key / wrongly typed value, missing warm start, an output directory that
// already holds a run), then train each arm of the preset into its run directory (src/starpo/runDir.ts) with a
// progress line showing success, reward std and entropy, checkpoints every trainer.saveFreq steps and at the end,
// and a final summary. `--resume` continues from the newest checkpoint in --out, dropping the metrics lines written
// after it, so metrics.jsonl holds every step exactly once.
//
// The echo-trap preset has two arms (vanilla StarPO and StarPO-S, same seeds): they run one after the other into
// OUT/starpo and OUT/starpo-s.
import type { Command } from 'commander';
import * as fs from 'node:fs';
import * as path from 'node:path';
import YAML from 'yaml';
import cliProgress from 'cli-progress';
import { BACKEND_CHOICES, isBackendChoice, type BackendInfo } from '../model/backend';
import { JsonlSink, METRICS_FILE, ROLLOUTS_FILE, readMetricsJsonl } from '../metrics/jsonlSink';
import { formatSummary, summarizeMetrics } from '../metrics/summary';
import {
  ConfigError,
  applyOverrides,
  assertRunnable,
  configDifferences,
  configWarnings,
  defaultRunConfig,
  mergeConfigInput,
  parseRunConfig,
  type RunConfig,
} from '../starpo/config';
import { resolvePreset } from '../starpo/presets';
import {
  holdsRun,
  latestCheckpoint,
  readCheckpoint,
  readModelDir,
  readRunConfig,
  writeCheckpoint,
  writeRunConfig,
} from '../starpo/runDir';
import { Trainer, type StepResult } from '../starpo/trainer';
import { modelDirFor } from './modelDir';
import { UsageError } from './usage';
import { chooseCliBackend } from './webgpuProbe';

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
    .option('--preset <name>', 'bandit-tiny, frozenlake-tiny, sokoban-tiny, echo-trap or sokoban-qwen')
    .option('--config <file>', 'a YAML or JSON run config (any subset of the keys; laid over the preset or the defaults)')
    .option('--steps <n>', 'training steps (trainer.totalSteps)')
    .option('--backend <name>', 'tfjs backend: webgpu, wasm, cpu or auto (trainer.backend)')
    .option('--seed <s>', 'seed of sampling and initialisation (trainer.seed)')
    .option('--out <dir>', 'run directory (default runs/<preset>)')
    .option('--set <key=value>', 'override a config key, e.g. --set actor.lr=3e-5 (repeatable)', (v: string, acc: string[]) => [...acc, v], [])
    .option('--resume', 'continue the run in --out from its newest checkpoint')
    .option('--arm <name>', "train only this arm of a multi-arm preset (echo-trap: 'starpo' or 'starpo-s'); it still goes to <out>/<arm>")
    .action(async (flags: TrainFlags) => {
      const arms = resolveTrainArms(flags);
      await runTrainArms(arms, { resume: !!flags.resume, progressBar: !!process.stderr.isTTY });
    });
}

// ---------------------------------------------------------------------------------------------------------------
// Resolution: everything checked before any work

function intFlag(text: string | undefined, flag: string, min: number): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!/^\s*-?\d+\s*$/.test(text) || !Number.isInteger(n) || n < min) throw new UsageError(`${flag} must be an integer >= ${min}, got '${text}'`);
  return n;
}

function readConfigFile(file: string): unknown {
  if (!fs.existsSync(file)) throw new UsageError(`--config ${file}: the file does not exist`);
  const text = fs.readFileSync(file, 'utf8');
  try {
    return file.endsWith('.json') ? JSON.parse(text) : YAML.parse(text);
  } catch (err) {
    throw new UsageError(`--config ${file}: cannot be read as ${file.endsWith('.json') ? 'JSON' : 'YAML'}: ${(err as Error).message}`);
  }
}

/**
 * Turns the command line into the arms to train, or throws a UsageError naming the problem (unknown preset, config
 * key, wrongly typed value, missing warm start, an --out that already holds a run, a resume whose config differs).
 */
export function resolveTrainArms(flags: TrainFlags): TrainArm[] {
  try {
    const steps = intFlag(flags.steps, '--steps', 1);
    const seed = intFlag(flags.seed, '--seed', 0);
    if (flags.backend !== undefined && !isBackendChoice(flags.backend)) {
      throw new UsageError(`--backend must be one of ${BACKEND_CHOICES.join(', ')}, got '${flags.backend}'`);
    }
    const flagOverrides = [
      ...(steps !== undefined ? [`trainer.totalSteps=${steps}`] : []),
      ...(seed !== undefined ? [`trainer.seed=${seed}`] : []),
      ...(flags.backend !== undefined ? [`trainer.backend=${flags.backend}`] : []),
    ];

    // Resuming with neither preset nor config: the run directory's own config.json (and --steps to extend it).
    if (flags.resume && !flags.preset && !flags.config) {
      if (!flags.out) throw new UsageError('--resume needs --out DIR (the run to continue), or the --preset it was started with');
      const dirs = fs.existsSync(path.join(flags.out, 'config.json'))
        ? [{ name: path.basename(flags.out), out: flags.out }]
        : fs.existsSync(flags.out)
          ? fs.readdirSync(flags.out)
              .filter((d) => fs.existsSync(path.join(flags.out!, d, 'config.json')))
              .map((d) => ({ name: d, out: path.join(flags.out!, d) }))
          : [];
      if (dirs.length === 0) throw new UsageError(`--resume: ${flags.out} holds no run (no config.json)`);
      const chosen = flags.arm === undefined ? dirs : dirs.filter((d) => d.name === flags.arm);
      if (chosen.length === 0) throw new UsageError(`--arm: ${flags.out} holds no arm '${flags.arm}' (arms: ${dirs.map((d) => d.name).join(', ')})`);
      return chosen.map(({ name, out }) => {
        const saved = parseRunConfig(readRunConfig(out), path.join(out, 'config.json'));
        const config = applyOverrides(saved, [...flags.set, ...flagOverrides]);
        return { name, config, out, modelDir: modelDirFor(config) };
      });
    }

    if (!flags.preset && !flags.config) throw new UsageError('give --preset NAME or --config FILE');
    const base = flags.preset
      ? resolvePreset(flags.preset).arms
      : [{ name: path.basename(flags.config!).replace(/\.(ya?ml|json)$/, ''), config: defaultRunConfig() }];
    const fileInput = flags.config ? readConfigFile(flags.config) : undefined;
    const root = flags.out ?? path.join('runs', flags.preset ?? base[0].name);
    if (flags.arm !== undefined && !base.some((arm) => arm.name === flags.arm)) {
      throw new UsageError(`--arm: ${flags.preset ? `preset '${flags.preset}'` : 'the config'} has no arm '${flags.arm}' (arms: ${base.map((a) => a.name).join(', ')})`);
    }
    const arms = base.filter((arm) => flags.arm === undefined || arm.name === flags.arm).map((arm) => {
      let config = arm.config;
      if (fileInput !== undefined) config = parseRunConfig(mergeConfigInput(config, fileInput), flags.config);
      config = applyOverrides(config, [...flags.set, ...flagOverrides]);
      assertRunnable(config);
      const out = base.length > 1 ? path.join(root, arm.name) : root;  // with --arm too, so arms run apart still pair up
      return { name: arm.name, config, out, modelDir: '' };
    });
    for (const arm of arms) {
      if (flags.resume) {
        const saved = parseRunConfig(readRunConfig(arm.out), path.join(arm.out, 'config.json'));
        const diffs = configDifferences(arm.config, saved).filter(([key]) => key !== 'trainer.totalSteps');
        if (diffs.length > 0) {
          throw new UsageError(
            `--resume: the config differs from the one ${arm.out} was started with, at ${diffs.map(([k]) => k).join(', ')}`,
          );
        }
      } else if (holdsRun(arm.out)) {
        throw new UsageError(`${arm.out} already holds a run: pass --resume to continue it, or choose another --out`);
      }
      arm.modelDir = modelDirFor(arm.config);
    }
    return arms;
  } catch (err) {
    if (err instanceof ConfigError) throw new UsageError(err.message);
    if (err instanceof UsageError) throw err;
    throw new UsageError((err as Error).message);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Training

export interface RunOptions {
  resume: boolean;
  /** Progress and summary lines (default console.log). */
  log?: (line: string) => void;
  /** Show a live progress bar (on a terminal) instead of one line per step. */
  progressBar?: boolean;
}

let backendInfo: BackendInfo | null = null;

export async function runTrainArms(arms: readonly TrainArm[], opts: RunOptions): Promise<void> {
  const log = opts.log ?? ((line: string) => console.log(line));
  const backend = arms[0].config.trainer.backend;
  if (!backendInfo) backendInfo = await chooseCliBackend(backend, log);
  for (const arm of arms) {
    for (const w of configWarnings(arm.config)) log(`warning: ${w}`);
    if (arms.length > 1) log(`\n=== arm ${arm.name} -> ${arm.out} ===`);
    await trainArm(arm, { ...opts, log });
  }
}

function meanOf(metrics: Record<string, number>, re: RegExp): number {
  const values = Object.entries(metrics).filter(([k, v]) => re.test(k) && Number.isFinite(v)).map(([, v]) => v);
  return values.length ? values.reduce((a, b) => a + b, 0) / values.length : NaN;
}

const fmt = (v: number, digits = 3) => (Number.isFinite(v) ? v.toFixed(digits) : '-');

/**
 * Validation success of each val env by name ("Bandit 0.94 BanditTest 0.00"): an average over envs would hide that a
 * policy solves its training env and fails the held-out one. '-' before the first validation.
 */
export function formatValidation(latest: Readonly<Record<string, number>>): string {
  const parts = Object.entries(latest)
    .map(([key, value]) => [/^val-env\/([^/]+)\/success$/.exec(key)?.[1], value] as const)
    .filter((entry): entry is readonly [string, number] => entry[0] !== undefined)
    .map(([tag, value]) => `${tag} ${fmt(value, 2)}`);
  return parts.length ? parts.join(' ') : '-';
}

/** Trains one arm into its run directory; returns the metrics rows of the finished run. */
export async function trainArm(arm: TrainArm, opts: RunOptions): Promise<void> {
  const log = opts.log ?? ((line: string) => console.log(line));
  const { config, out } = arm;
  const total = config.trainer.totalSteps;
  let trainer: Trainer;
  let sink: JsonlSink;
  const checkpoint = opts.resume ? latestCheckpoint(out) : null;
  if (opts.resume && checkpoint) {
    sink = new JsonlSink(out);
    sink.truncateAfter(checkpoint.step);
    log(`resuming ${out} from checkpoint step ${checkpoint.step} (metrics after it dropped)`);
    trainer = await Trainer.create(config, { resumeFiles: readCheckpoint(checkpoint.dir), sink, log });
  } else {
    if (opts.resume) {
      log(`no checkpoint in ${out}: starting the run over`);
      for (const f of [METRICS_FILE, ROLLOUTS_FILE]) fs.rmSync(path.join(out, f), { force: true });
    }
    sink = new JsonlSink(out);
    trainer = await Trainer.create(config, { policyFiles: readModelDir(arm.modelDir), sink, log });
  }
  writeRunConfig(out, config);

  const useBar = !!opts.progressBar;
  const bar = useBar
    ? new cliProgress.SingleBar(
        {
          format: '{bar} {value}/{total} | success {success} | val {val} | reward std {std} | entropy {entropy} | {sps} s/step',
          hideCursor: true,
        },
        cliProgress.Presets.shades_classic,
      )
    : null;
  bar?.start(total, trainer.stepsDone, { success: '-', val: '-', std: '-', entropy: '-', sps: '-' });
  let lastSaved = checkpoint?.step ?? -1;
  const stepSeconds: number[] = [];
  try {
    while (!trainer.finished) {
      const r: StepResult = await trainer.step();
      const m = r.metrics;
      stepSeconds.push(m['timing_s/step']);
      const shown = {
        success: fmt(meanOf(m, /^train\/[^/]+\/success$/), 2),
        val: formatValidation(trainer.latestValidation),
        std: fmt(m['rollout/in_group_std']),
        entropy: fmt(m['actor/entropy_loss']),
        sps: fmt(m['timing_s/step'], 1),
      };
      if (bar) bar.update(r.step, shown);
      else {
        log(`step ${r.step}/${total}  success ${shown.success}  val ${shown.val}  reward std ${shown.std}  entropy ${shown.entropy}  ${shown.sps} s/step`);
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
  if (stepSeconds.length === 0) log(`${out}: the run was already complete (${trainer.stepsDone} steps)`);
  const rows = readMetricsJsonl(path.join(out, METRICS_FILE));
  log(`\n${out}: ${trainer.stepsDone} steps${stepSeconds.length ? `, ${fmt(stepSeconds.reduce((a, b) => a + b, 0) / stepSeconds.length, 2)} s/step` : ''}`);
  log(formatSummary(summarizeMetrics(rows, { echoTrap: config.echoTrap })));
}
