// Records the classroom lesson that ships with the site (the lesson page's `lesson-recorded` button): trains every arm
// of the lesson preset on --seeds-per-arm training seeds (the preset's own, as the live lesson trains them) with
// `ragen train --preset echo-trap --arm ARM --seed S`, one run after the other (each on --workers cores), each
// stopping STEPS_AFTER_COLLAPSE steps after its collapse as the live lesson's runs do, then copies each run's
// metrics.jsonl and a few sample rollouts per step into public/lessons/<preset>/ (the first seed's under <arm>/, the
// others' under <arm>/seed-<S>/) and writes manifest.json (preset, commit, date, every run, and the command that made
// it). This script is the one way to remake the recording, e.g. after the preset changes:
//
//   npx tsx experiments/record-lesson.ts [--steps 80] [--seed S] [--seeds-per-arm 4] [--backend wasm] [--workers 2] [--rollouts-per-step 3]
//
// When only the early-warning detector changed (src/metrics/echoTrap.ts), `--replay-marks` recomputes the recording's
// `echo_trap/*` keys with today's detector and the preset's `echoTrap` settings, without training: the detector only
// reads the other metrics, so the result is what the Trainer logs for the same run today. The manifest says so
// (`marksReplayed`).
//
// The runs train under runs/lessons/<preset>-<time>/ (git-ignored, with their checkpoints and logs). The shipped
// recording is replaced only once every arm trained: a failed or interrupted recording leaves the old one as it was,
// and files beside it that a recording does not write (fresh-seeds.json) are kept.
import { spawnSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Command } from 'commander';
import { presetConfig, resolvePreset } from '../src/starpo/presets';
import { replayEchoTrap } from '../src/metrics/echoTrap';
import { encodeJsonLine, parseMetricsJsonl, parseRolloutsJsonl } from '../src/metrics/jsonl';
import {
  LESSON_PRESET,
  keepFewRollouts,
  lessonFolder,
  parseLessonManifest,
  type LessonManifest,
  type LessonRunFiles,
} from '../src/ui/lesson';
import { LESSON_RUNS_PER_ARM, LESSON_SEEDS, lessonSeeds, STEPS_AFTER_COLLAPSE } from '../src/ui/lessonRuns';
import { vanillaVerdict } from '../src/metrics/lessonVerdict';
import { isMain, REPO } from './lib/experiment';
import { BIN } from './lib/runs';

interface RecordOptions {
  preset: string;
  steps: number;
  seed: number;
  /** Training seeds per arm: `seed` and the next ones. */
  seedsPerArm: number;
  backend: string;
  workers: number;
  rolloutsPerStep: number;
  /** Folder the recording is written to (default public/lessons/<preset>). */
  out: string;
  /** Where the runs train (default runs/lessons, git-ignored): each recording gets its own <preset>-<time> folder. */
  runs?: string;
}

const positiveInt = (name: string) => (text: string) => {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) usage(`${name} needs a whole number of at least 1, got '${text}'`);
  return n;
};
const nonNegativeInt = (name: string) => (text: string) => {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0) usage(`${name} needs a whole number of at least 0, got '${text}'`);
  return n;
};

function usage(message: string): never {
  console.error(`record-lesson: ${message}`);
  process.exit(2);
}

/** The commit of the working tree, and whether the training code (everything but the page and docs) differs from it. */
function gitState(): { commit: string; dirty: boolean } {
  const git = (...args: string[]) => spawnSync('git', args, { cwd: REPO, encoding: 'utf8' });
  const head = git('rev-parse', 'HEAD');
  if (head.status !== 0) return { commit: 'unknown', dirty: true };
  const diff = git(
    'status',
    '--porcelain',
    '--',
    'src',
    'envs',
    'workers',
    'bin',
    'public/warmstart',
    ':(exclude)src/ui',
  );
  return { commit: head.stdout.trim(), dirty: diff.stdout.trim() !== '' };
}

/** A path as the user reads it: relative to the repository when inside it. */
function shown(p: string): string {
  const rel = path.relative(REPO, p);
  return rel.startsWith('..') || path.isAbsolute(rel) ? p : rel;
}

function trainArm(args: string[], logFile: string): Promise<number> {
  return new Promise((resolve) => {
    const out = fs.openSync(logFile, 'a');
    const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', out, out] });
    child.on('exit', (code) => {
      fs.closeSync(out);
      resolve(code ?? -1);
    });
  });
}

export async function recordLesson(
  o: RecordOptions,
  command: string,
  log: (line: string) => void = console.log,
): Promise<LessonManifest> {
  const arms = resolvePreset(o.preset).arms.map((a) => a.name);
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const runsRoot = path.join(o.runs ?? path.join(REPO, 'runs', 'lessons'), `${o.preset}-${stamp}`);
  fs.mkdirSync(runsRoot, { recursive: true });
  const recorded: LessonRunFiles[] = [];
  const staged = `${o.out}.new-${stamp}`;
  const seeds = lessonSeeds(o.seed, o.seedsPerArm, LESSON_SEEDS[o.preset]);
  try {
    // Arms interleaved seed by seed, so an interrupted recording has trained both arms on its first seeds.
    for (const seed of seeds)
      for (const arm of arms) {
        const name = seed === o.seed ? arm : `${arm}/seed-${seed}`;
        const out = path.join(runsRoot, `seed-${seed}`);
        const args = [
          'train',
          '--preset',
          o.preset,
          '--arm',
          arm,
          '--steps',
          String(o.steps),
          '--seed',
          String(seed),
          '--backend',
          o.backend,
          '--workers',
          String(o.workers),
          '--set',
          `trainer.stopAfterCollapse=${STEPS_AFTER_COLLAPSE}`,
          '--out',
          out,
        ];
        const trainCommand = `ragen ${args.join(' ').replace(out, shown(out))}`;
        const logFile = path.join(runsRoot, `${arm}-seed-${seed}.log`);
        log(`${name}: ${trainCommand}`);
        const start = Date.now();
        const code = await trainArm(args, logFile);
        const seconds = Math.round((Date.now() - start) / 1000);
        const runDir = path.join(out, arm);
        if (code !== 0)
          throw new Error(`${name}: ragen train exited with ${code} after ${seconds} s (log: ${shown(logFile)})`);
        const metricsText = fs.readFileSync(path.join(runDir, 'metrics.jsonl'), 'utf8');
        const rows = parseMetricsJsonl(metricsText, `${name}/metrics.jsonl`);
        const steps = Math.max(...rows.map((r) => r.step));
        // A run ends early only when it stopped after its collapse.
        const collapseStep = vanillaVerdict(rows).collapseStep;
        if (steps < o.steps && collapseStep === null)
          throw new Error(
            `${name}: the run ended at step ${steps} of ${o.steps} without a collapse (log: ${shown(logFile)})`,
          );
        const rollouts = keepFewRollouts(
          parseRolloutsJsonl(fs.readFileSync(path.join(runDir, 'rollouts.jsonl'), 'utf8'), `${name}/rollouts.jsonl`),
          o.rolloutsPerStep,
        );
        fs.mkdirSync(path.join(staged, name), { recursive: true });
        // metrics.jsonl as the run wrote it (every key of every step); rollouts thinned to a few per step and split.
        fs.writeFileSync(path.join(staged, name, 'metrics.jsonl'), metricsText);
        fs.writeFileSync(
          path.join(staged, name, 'rollouts.jsonl'),
          rollouts.map((r) => encodeJsonLine(r) + '\n').join(''),
        );
        recorded.push({
          name: arm,
          seed,
          metrics: `${name}/metrics.jsonl`,
          rollouts: `${name}/rollouts.jsonl`,
          steps,
          trainCommand,
          seconds,
          ...(steps < o.steps && collapseStep !== null ? { collapseStep } : {}),
        });
        log(
          `${name}: ${steps} steps in ${seconds} s${collapseStep !== null ? `, collapsed at step ${collapseStep}` : ''}, ${rollouts.length} sample trajectories kept`,
        );
      }
    const first = recorded.filter((r) => r.seed === o.seed).map(({ seed: _seed, collapseStep: _c, ...files }) => files);
    const manifest = parseLessonManifest(
      {
        format: 1,
        preset: o.preset,
        arms: first,
        steps: o.steps,
        seed: o.seed,
        backend: o.backend,
        workers: o.workers,
        ...(o.seedsPerArm > 1 ? { runs: recorded } : {}),
        rolloutsPerStep: o.rolloutsPerStep,
        ...gitState(),
        date: new Date().toISOString(),
        command,
      },
      'the manifest being written',
    );
    fs.writeFileSync(path.join(staged, 'manifest.json'), JSON.stringify(manifest, null, 2) + '\n');
    // Only now does the new recording replace the shipped one. Files beside it that a recording does not write (the
    // fresh-seed table, made by the lab scripts from other runs) stay.
    for (const name of fs.existsSync(o.out) ? fs.readdirSync(o.out) : []) {
      const old = path.join(o.out, name);
      if (!fs.statSync(old).isFile() || fs.existsSync(path.join(staged, name))) continue;
      fs.copyFileSync(old, path.join(staged, name));
      log(`kept ${shown(old)}`);
    }
    fs.rmSync(o.out, { recursive: true, force: true });
    fs.renameSync(staged, o.out);
    log(`recorded ${arms.join(' and ')} on seeds ${seeds.join(', ')} into ${shown(o.out)}`);
    return manifest;
  } finally {
    fs.rmSync(staged, { recursive: true, force: true });
  }
}

/** Recomputes the `echo_trap/*` keys of the recording in `out` with today's detector (see the top of this file). */
export function replayLessonMarks(
  out: string,
  command: string,
  log: (line: string) => void = console.log,
): LessonManifest {
  const manifestPath = path.join(out, 'manifest.json');
  const manifest = parseLessonManifest(JSON.parse(fs.readFileSync(manifestPath, 'utf8')), shown(manifestPath));
  const runs = manifest.runs ?? manifest.arms.map((a) => ({ ...a, seed: manifest.seed }));
  const written: [string, string][] = runs.map((arm) => {
    const file = path.join(out, arm.metrics);
    const rows = replayEchoTrap(
      parseMetricsJsonl(fs.readFileSync(file, 'utf8'), shown(file)),
      presetConfig(manifest.preset, arm.name).echoTrap,
    );
    const fired = (key: string) => rows.find((r) => r[key] === 1)?.step ?? '-';
    log(
      `${arm.name} seed ${arm.seed}: warning at step ${fired('echo_trap/warning')}, converged at step ${fired('echo_trap/converged')}`,
    );
    return [file, rows.map((r) => encodeJsonLine(r) + '\n').join('')];
  });
  const { commit } = gitState();
  const updated = parseLessonManifest(
    { ...manifest, marksReplayed: { commit, date: new Date().toISOString(), command } },
    'the manifest being written',
  );
  for (const [file, text] of written) fs.writeFileSync(file, text);
  fs.writeFileSync(manifestPath, JSON.stringify(updated, null, 2) + '\n');
  return updated;
}

if (isMain(import.meta.url)) {
  const program = new Command()
    .name('record-lesson')
    .description("train the lesson preset's arms and ship a recording of them in public/lessons/<preset>/")
    .option('--preset <name>', 'the lesson preset', LESSON_PRESET)
    .option('--steps <n>', "training steps per run (default the preset's)", positiveInt('--steps'))
    .option(
      '--seed <s>',
      "the first training seed of every arm (default the preset's; from it the preset's own seeds, else the next ones)",
      nonNegativeInt('--seed'),
    )
    .option(
      '--seeds-per-arm <n>',
      'training seeds per arm (--seed and the next ones)',
      positiveInt('--seeds-per-arm'),
      LESSON_RUNS_PER_ARM,
    )
    .option('--backend <name>', 'tfjs backend of the runs', 'wasm')
    .option('--workers <n>', 'cores per run (ragen train --workers)', positiveInt('--workers'), 2)
    .option(
      '--rollouts-per-step <n>',
      'sample trajectories kept per step and split',
      positiveInt('--rollouts-per-step'),
      3,
    )
    .option('--out <dir>', 'where the recording goes (default public/lessons/<preset>)')
    .option(
      '--replay-marks',
      "recompute the echo_trap/* keys of the recording in --out with today's detector, without training",
    );
  program.parse();
  const flags = program.opts<{
    preset: string;
    steps?: number;
    seed?: number;
    seedsPerArm: number;
    backend: string;
    workers: number;
    rolloutsPerStep: number;
    out?: string;
    replayMarks?: boolean;
  }>();
  try {
    resolvePreset(flags.preset);
  } catch (err) {
    usage((err as Error).message);
  }
  const out = path.resolve(flags.out ?? path.join(REPO, 'public', lessonFolder(flags.preset)));
  const first = presetConfig(flags.preset, resolvePreset(flags.preset).arms[0].name);
  const seed = flags.seed ?? first.trainer.seed;
  const steps = flags.steps ?? first.trainer.totalSteps;
  if (flags.replayMarks) {
    try {
      replayLessonMarks(
        out,
        `npx tsx experiments/record-lesson.ts --replay-marks${flags.out ? ` --out ${flags.out}` : ''}`,
      );
    } catch (err) {
      console.error(`record-lesson: ${(err as Error).message}`);
      process.exit(1);
    }
    process.exit(0);
  }
  // Every setting spelled out, so the manifest's command remakes this recording even after a default changes.
  const command =
    `npx tsx experiments/record-lesson.ts --preset ${flags.preset} --steps ${steps} --seed ${seed} --seeds-per-arm ${flags.seedsPerArm} ` +
    `--backend ${flags.backend} --workers ${flags.workers} --rollouts-per-step ${flags.rolloutsPerStep}${flags.out ? ` --out ${flags.out}` : ''}`;
  try {
    await recordLesson({ ...flags, seed, steps, out }, command);
  } catch (err) {
    console.error(`record-lesson: ${(err as Error).message}`);
    process.exit(1);
  }
}
