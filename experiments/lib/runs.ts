// Running `ragen train` and `ragen eval` as child processes, several at a time, for the experiment scripts.
//
// Runs are keyed by a name shared across experiments (e.g. 'frozenlake-ppo-vanilla'), so an experiment that needs
// a run another one already finished reuses its directory instead of training it again: the vanilla PPO runs of
// 01-vanilla-collapse are the StarPO arms of 04, the unfiltered arm of 02 and the baseline of 03.
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { listCheckpoints } from '../../src/node/runDir';

export const BIN = path.resolve(import.meta.dirname, '../../bin/ragen.js');

/** One `ragen train` run of an experiment. */
export interface RunSpec {
  /** Directory name under the runs root, shared across experiments: same name = same run. */
  name: string;
  /** Legend label in plots and tables. */
  label: string;
  preset: string;
  /** `--set key=value` overrides on top of the preset. */
  set: string[];
  steps: number;
  /** One arm of a multi-arm preset (echo-trap): trained with --arm into <root>/<name>, so `name` must end with the
   *  arm ('starpo', or 'seed-3/starpo' to keep several trainings of the arm apart). */
  arm?: string;
}

export interface RunOptions {
  root: string; // runs root, e.g. runs/experiments
  jobs: number; // runs at a time
  backend: string; // tfjs backend of every run
  minutes: number | null; // wall-clock cap per run (the run is stopped; its finished steps count), null = none
  extraSet: string[]; // appended to every run's overrides (--smoke uses it)
  log: (line: string) => void;
}

export interface RunOutcome {
  spec: RunSpec;
  dir: string;
  /** Steps in metrics.jsonl (0 = the validation before training only). */
  stepsDone: number;
  complete: boolean;
  reused: boolean;
  seconds: number;
  backend: string;
}

/** The last step number in a run directory's metrics.jsonl, or -1 when there is none. */
export function lastStep(dir: string): number {
  const file = path.join(dir, 'metrics.jsonl');
  if (!fs.existsSync(file)) return -1;
  let last = -1;
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    if (!line.trim()) continue;
    try {
      last = Math.max(last, (JSON.parse(line) as { step: number }).step);
    } catch {
      // a line cut off by a killed run: ignore it
    }
  }
  return last;
}

function runChild(args: string[], logFile: string, minutes: number | null): Promise<number> {
  return new Promise((resolve) => {
    const out = fs.openSync(logFile, 'a');
    const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', out, out] });
    const timer = minutes === null ? null : setTimeout(() => child.kill('SIGKILL'), minutes * 60_000);
    child.on('exit', (code) => {
      if (timer) clearTimeout(timer);
      fs.closeSync(out);
      resolve(code ?? -1);
    });
  });
}

/** Where `ragen train --arm` must be pointed so that the arm lands in <root>/<spec.name>. */
function armParent(root: string, spec: RunSpec): string {
  if (path.basename(spec.name) !== spec.arm)
    throw new Error(`run '${spec.name}': the name of an arm's run must end with '/${spec.arm}'`);
  return path.join(root, path.dirname(spec.name));
}

/** Trains every run that is not already complete, `jobs` at a time; resumes a run that has checkpoints. */
export async function trainAll(specs: readonly RunSpec[], o: RunOptions): Promise<RunOutcome[]> {
  fs.mkdirSync(o.root, { recursive: true });
  const outcomes: RunOutcome[] = [];
  const queue = [...specs];
  const worker = async () => {
    for (let spec = queue.shift(); spec; spec = queue.shift()) {
      const dir = path.join(o.root, spec.name);
      const before = lastStep(dir);
      const start = Date.now();
      if (before >= spec.steps) {
        outcomes.push({
          spec,
          dir,
          stepsDone: before,
          complete: true,
          reused: true,
          seconds: 0,
          backend: savedBackend(dir) ?? o.backend,
        });
        o.log(`${spec.name}: complete already (${before} steps), reused`);
        continue;
      }
      // Only a complete checkpoint can be resumed (`ragen train --resume` refuses a run without one, changing nothing).
      const hasCheckpoint = listCheckpoints(dir).length > 0;
      const args = hasCheckpoint
        ? ['train', '--resume', '--out', dir, '--steps', String(spec.steps), '--backend', o.backend]
        : [
            'train',
            '--preset',
            spec.preset,
            '--steps',
            String(spec.steps),
            '--backend',
            o.backend,
            ...(spec.arm ? ['--arm', spec.arm, '--out', armParent(o.root, spec)] : ['--out', dir]),
            ...[...spec.set, 'trainer.saveFreq=5', 'trainer.keepCheckpoints=1', ...o.extraSet].flatMap((s) => [
              '--set',
              s,
            ]),
          ];
      if (!hasCheckpoint && fs.existsSync(dir)) fs.rmSync(dir, { recursive: true, force: true }); // a start that never saved
      fs.mkdirSync(dir, { recursive: true });
      o.log(
        `${spec.name}: ${hasCheckpoint ? `resuming after step ${before}` : 'starting'} (${spec.steps} steps, ${o.backend})`,
      );
      const code = await runChild(args, path.join(dir, 'train.log'), o.minutes);
      const done = lastStep(dir);
      const seconds = (Date.now() - start) / 1000;
      o.log(
        `${spec.name}: ${code === 0 ? 'finished' : `stopped (exit ${code})`} at step ${done} after ${seconds.toFixed(0)} s`,
      );
      outcomes.push({
        spec,
        dir,
        stepsDone: Math.max(done, 0),
        complete: done >= spec.steps,
        reused: false,
        seconds,
        backend: savedBackend(dir) ?? o.backend,
      });
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, o.jobs) }, worker));
  return specs.map((s) => outcomes.find((x) => x.spec === s)!);
}

/** A run directory as it is, without training (experiments/all.ts trains first, then summarises each experiment). */
export function existingOutcome(spec: RunSpec, root: string, backend: string): RunOutcome {
  const dir = path.join(root, spec.name);
  const done = Math.max(lastStep(dir), 0);
  return {
    spec,
    dir,
    stepsDone: done,
    complete: done >= spec.steps,
    reused: true,
    seconds: 0,
    backend: savedBackend(dir) ?? backend,
  };
}

function savedBackend(dir: string): string | null {
  const file = path.join(dir, 'config.json');
  if (!fs.existsSync(file)) return null;
  return (JSON.parse(fs.readFileSync(file, 'utf8')) as { trainer?: { backend?: string } }).trainer?.backend ?? null;
}

/** One suite of a `ragen eval` scorecard, as its JSON writes it. */
export interface SuiteScore {
  suite: string;
  kind: string;
  episodes: number;
  success: { rate: number; lo: number; hi: number; successes: number };
}

/** `ragen eval` of a checkpoint (or run / warm-start directory); returns its suites. Cached in `outFile`. */
export async function evaluate(
  checkpoint: string,
  outFile: string,
  o: { backend: string; episodes: number; log: (l: string) => void },
): Promise<SuiteScore[]> {
  // A cached scorecard older than the run's newest metrics is stale (the run was trained further since).
  const metrics = path.join(checkpoint, 'metrics.jsonl');
  if (fs.existsSync(outFile) && fs.existsSync(metrics) && fs.statSync(metrics).mtimeMs > fs.statSync(outFile).mtimeMs)
    fs.rmSync(outFile);
  if (!fs.existsSync(outFile)) {
    fs.mkdirSync(path.dirname(outFile), { recursive: true });
    o.log(`eval ${checkpoint} (${o.episodes} episodes per suite)`);
    const code = await runChild(
      [
        'eval',
        '--checkpoint',
        checkpoint,
        '--episodes',
        String(o.episodes),
        '--backend',
        o.backend,
        '--quiet',
        '--out',
        outFile,
      ],
      `${outFile}.log`,
      null,
    );
    if (code !== 0) throw new Error(`ragen eval ${checkpoint} failed (exit ${code}); see ${outFile}.log`);
  }
  return (JSON.parse(fs.readFileSync(outFile, 'utf8')) as { suites: SuiteScore[] }).suites;
}

export const defaultJobs = (): number => Math.max(1, os.availableParallelism?.() ?? os.cpus().length);
