// The run directory of a Node training run (docs/architecture.md): where `ragen train` writes, and what `--resume`
// reads.
//
//   OUT/config.json              the resolved RunConfig
//   OUT/metrics.jsonl            one JSON object per training step (step 0 = validation before training)
//   OUT/rollouts.jsonl           sample trajectories with their think / answer text per turn
//   OUT/checkpoints/step-N/      the actor in Hugging Face Qwen2 format (config.json, model.safetensors,
//                                tokenizer.json, ...) plus what a resume needs: critic/, optimizer.safetensors,
//                                ref.safetensors (KL runs), trainer_state.json
//
// Checkpoints are written atomically: every file goes to a hidden sibling directory first, which is then renamed
// into place, so a run killed mid-write leaves the previous checkpoints intact and never a half checkpoint that
// `--resume` would pick. Node only (node:fs); the Trainer itself never touches the disk.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { configDifferences, parseRunConfig, type RunConfig } from '../starpo/config';
import { METRICS_FILE, readMetricsJsonl } from '../metrics/jsonlSink';

export const CONFIG_FILE = 'config.json';
export const CHECKPOINTS_DIR = 'checkpoints';
/** The file whose presence marks a complete trainer checkpoint (written by Trainer.checkpointFiles). */
const COMPLETE_MARKER = 'trainer_state.json';
const STEP_DIR = /^step-(\d+)$/;

/** The directory of the checkpoint of `step`. */
export function checkpointDir(runDir: string, step: number): string {
  return path.join(runDir, CHECKPOINTS_DIR, `step-${step}`);
}

/** Complete checkpoints of a run, oldest first. */
export function listCheckpoints(runDir: string): { step: number; dir: string }[] {
  const root = path.join(runDir, CHECKPOINTS_DIR);
  if (!fs.existsSync(root)) return [];
  const out: { step: number; dir: string }[] = [];
  for (const name of fs.readdirSync(root)) {
    const m = STEP_DIR.exec(name);
    const dir = path.join(root, name);
    if (m && fs.existsSync(path.join(dir, COMPLETE_MARKER))) out.push({ step: Number(m[1]), dir });
  }
  return out.sort((a, b) => a.step - b.step);
}

/** Every checkpoints/step-N folder, complete or not, oldest first. */
export function listStepDirs(runDir: string): { step: number; dir: string; complete: boolean }[] {
  const root = path.join(runDir, CHECKPOINTS_DIR);
  if (!fs.existsSync(root)) return [];
  return fs
    .readdirSync(root)
    .flatMap((name) => {
      const m = STEP_DIR.exec(name);
      const dir = path.join(root, name);
      return m ? [{ step: Number(m[1]), dir, complete: fs.existsSync(path.join(dir, COMPLETE_MARKER)) }] : [];
    })
    .sort((a, b) => a.step - b.step);
}

/** The newest complete checkpoint, or null. */
export function latestCheckpoint(runDir: string): { step: number; dir: string } | null {
  const all = listCheckpoints(runDir);
  return all.length ? all[all.length - 1] : null;
}

/** True when `runDir` already holds (part of) a run: metrics, a config or checkpoints. */
export function holdsRun(runDir: string): boolean {
  if (!fs.existsSync(runDir)) return false;
  return ['metrics.jsonl', CONFIG_FILE, CHECKPOINTS_DIR].some((name) => fs.existsSync(path.join(runDir, name)));
}

/** Writes the resolved config (pretty JSON) to OUT/config.json, creating OUT. */
export function writeRunConfig(runDir: string, config: RunConfig): void {
  fs.mkdirSync(runDir, { recursive: true });
  fs.writeFileSync(path.join(runDir, CONFIG_FILE), JSON.stringify(config, null, 2) + '\n');
}

/** Reads OUT/config.json as plain JSON (validate it with parseRunConfig). */
export function readRunConfig(runDir: string): unknown {
  const file = path.join(runDir, CONFIG_FILE);
  if (!fs.existsSync(file)) throw new Error(`${file} does not exist: ${runDir} holds no run to resume`);
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`${file} is not valid JSON: ${(err as Error).message}`, { cause: err });
  }
}

/**
 * Writes checkpoint files (names may contain one level of sub-directory, e.g. `critic/model.safetensors`) as
 * checkpoints/step-N, atomically, then deletes the oldest complete checkpoints beyond `keep` (0 = keep all).
 */
export function writeCheckpoint(runDir: string, step: number, files: Record<string, Uint8Array>, keep = 0): string {
  const target = checkpointDir(runDir, step);
  const root = path.dirname(target);
  fs.mkdirSync(root, { recursive: true });
  const tmp = path.join(root, `.step-${step}.tmp-${process.pid}-${Date.now()}`);
  fs.mkdirSync(tmp);
  try {
    for (const [name, bytes] of Object.entries(files)) {
      const parts = name.split('/');
      if (parts.some((p) => p === '' || p === '.' || p === '..') || name.includes('\\')) {
        throw new Error(`writeCheckpoint: bad file name '${name}'`);
      }
      const file = path.join(tmp, ...parts);
      fs.mkdirSync(path.dirname(file), { recursive: true });
      const fd = fs.openSync(file, 'w');
      try {
        fs.writeSync(fd, bytes);
        fs.fsyncSync(fd); // on disk before the rename makes the checkpoint visible
      } finally {
        fs.closeSync(fd);
      }
    }
  } catch (err) {
    fs.rmSync(tmp, { recursive: true, force: true });
    throw err;
  }
  if (fs.existsSync(target)) {
    const old = `${tmp}.old`;
    fs.renameSync(target, old);
    fs.renameSync(tmp, target);
    fs.rmSync(old, { recursive: true, force: true });
  } else {
    fs.renameSync(tmp, target);
  }
  if (keep > 0) {
    const all = listCheckpoints(runDir);
    for (const c of all.slice(0, Math.max(0, all.length - keep))) fs.rmSync(c.dir, { recursive: true, force: true });
  }
  return target;
}

/** Checkpoints are read by readCheckpointFiles (src/model/checkpointDir.ts), the one reader of every command. */

/**
 * The step recorded in a checkpoint's trainer_state.json; throws an Error naming the file when it cannot be read
 * or holds no step. Reads only that small file (not the weights).
 */
export function readCheckpointStep(dir: string): number {
  const file = path.join(dir, COMPLETE_MARKER);
  let state: unknown;
  try {
    state = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`${file} cannot be read: ${(err as Error).message}`, { cause: err });
  }
  const step = (state as { step?: unknown } | null)?.step;
  if (typeof step !== 'number' || !Number.isInteger(step) || step < 0)
    throw new Error(`${file} holds no step count (got ${JSON.stringify(step)})`);
  return step;
}

const TEMP_CHECKPOINT = /^\.step-(\d+)\.tmp-.+$/;
const TEMP_JSONL = /^(metrics|rollouts)\.jsonl\.tmp-\d+$/;

/**
 * Tidies what a killed writer left in a run directory, and returns one line per thing done. A checkpoint write
 * interrupted before its rename leaves `.step-N.tmp-*` (incomplete: removed); one interrupted while replacing
 * step-N leaves the previous copy as `.step-N.tmp-*.old`, which is moved back when step-N is missing (nothing a
 * run saved is lost) and removed otherwise; a metrics rewrite leaves `metrics.jsonl.tmp-PID` (removed: the file
 * it was replacing is still there). Call it only while holding the run's lock (runLock.ts): another live writer's
 * temporary files look the same.
 */
export function cleanInterruptedWrites(runDir: string): string[] {
  const done: string[] = [];
  const root = path.join(runDir, CHECKPOINTS_DIR);
  if (fs.existsSync(root)) {
    const names = fs.readdirSync(root).filter((n) => TEMP_CHECKPOINT.test(n));
    for (const name of names.filter((n) => n.endsWith('.old'))) {
      const target = checkpointDir(runDir, Number(TEMP_CHECKPOINT.exec(name)![1]));
      if (!fs.existsSync(target)) {
        fs.renameSync(path.join(root, name), target);
        done.push(`restored ${target} from ${name} (a checkpoint write was interrupted)`);
      } else {
        fs.rmSync(path.join(root, name), { recursive: true, force: true });
        done.push(`removed ${path.join(root, name)} (left by an interrupted checkpoint write)`);
      }
    }
    for (const name of names.filter((n) => !n.endsWith('.old'))) {
      fs.rmSync(path.join(root, name), { recursive: true, force: true });
      done.push(`removed ${path.join(root, name)} (left by an interrupted checkpoint write)`);
    }
  }
  if (fs.existsSync(runDir)) {
    for (const name of fs.readdirSync(runDir).filter((n) => TEMP_JSONL.test(n))) {
      fs.rmSync(path.join(runDir, name), { force: true });
      done.push(`removed ${path.join(runDir, name)} (left by an interrupted rewrite)`);
    }
  }
  return done;
}

/**
 * A resume continues the run exactly as it was started: the config must equal its config.json except for a larger
 * trainer.totalSteps (--steps to extend a run), and the run directory must be intact: a complete newest checkpoint
 * whose trainer_state.json agrees with its folder, and a metrics.jsonl holding every step up to it. Anything else is
 * refused with nothing changed (a resume that started over or went on without metrics would lose what was saved).
 */
export function assertResumable(out: string, config: RunConfig): void {
  const saved = parseRunConfig(readRunConfig(out), path.join(out, 'config.json'));
  const diffs = configDifferences(config, saved).filter(([key]) => key !== 'trainer.totalSteps');
  if (diffs.length > 0) {
    throw new Error(
      `--resume: the config differs from the one ${out} was started with, at ${diffs.map(([k]) => k).join(', ')}`,
    );
  }
  const checkpoint = latestCheckpoint(out);
  if (!checkpoint) {
    throw new Error(
      `--resume: ${out} holds no complete checkpoint (checkpoints/step-N with trainer_state.json) to continue from; ` +
        'nothing was changed: to start over, move it away or choose another --out',
    );
  }
  const unfinished = listStepDirs(out).filter((d) => !d.complete && d.step > checkpoint.step);
  if (unfinished.length > 0) {
    // Resuming would write over that folder when the run reaches its step again.
    throw new Error(
      `--resume: ${unfinished[0].dir} is not a complete checkpoint (no trainer_state.json) but is newer than ${checkpoint.dir}; ` +
        'nothing was changed: move it out of the run directory to resume from the older one',
    );
  }
  const recorded = readCheckpointStep(checkpoint.dir);
  if (recorded !== checkpoint.step) {
    throw new Error(
      `--resume: ${path.join(checkpoint.dir, 'trainer_state.json')} records step ${recorded}, not the step ${checkpoint.step} its folder names`,
    );
  }
  if (config.trainer.totalSteps < checkpoint.step) {
    throw new Error(
      `--resume: --steps ${config.trainer.totalSteps} is fewer than the ${checkpoint.step} steps ${out} already holds (trainer.totalSteps can only grow)`,
    );
  }
  const metricsFile = path.join(out, METRICS_FILE);
  if (!fs.existsSync(metricsFile)) {
    throw new Error(
      `--resume: ${metricsFile} is missing, so steps 1-${checkpoint.step} would have no metrics; nothing was changed`,
    );
  }
  const logged = new Set(readMetricsJsonl(metricsFile).map((r) => r.step));
  const missing = Array.from({ length: checkpoint.step }, (_, i) => i + 1).filter((step) => !logged.has(step));
  if (missing.length > 0) {
    const shown = missing.length > 5 ? `${missing.slice(0, 5).join(', ')}, …` : missing.join(', ');
    throw new Error(
      `--resume: ${metricsFile} has no row for step ${shown} although the checkpoint is at step ${checkpoint.step} (torn or edited?); nothing was changed`,
    );
  }
}
