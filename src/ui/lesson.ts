// The classroom lesson's recorded data: what `experiments/record-lesson.ts` writes under public/lessons/<preset>/ and
// what the lesson page loads when the class has no time to train (`lesson-recorded`). Pure TypeScript: the script
// (Node) and the page (browser) share these types and checks, so a recording the script writes is one the page reads.
//
// Layout of a recording (one folder per arm, each like a `ragen train` run directory, minus config and checkpoints):
//   public/lessons/<preset>/manifest.json
//   public/lessons/<preset>/<arm>/metrics.jsonl     every training step's metrics row, as the run logged it
//   public/lessons/<preset>/<arm>/rollouts.jsonl    a few sample trajectories per step and split (think / answer text)
//   public/lessons/<preset>/<arm>/seed-<S>/...       the same for each further training seed (`runs` in the manifest)
import { parseMetricsJsonl, parseRolloutsJsonl, type MetricRow, type StoredRollout } from '../metrics/jsonl';

/** The preset the classroom lesson trains and replays by default (`?lesson`): vanilla StarPO against StarPO-S on Bandit. */
export const LESSON_PRESET = 'echo-trap';

/**
 * Every classroom lesson, by the preset it trains: `?lesson` is the first (the outcome: vanilla collapses, StarPO-S
 * holds), `?lesson=echo-trap-frozenlake` the second (the mechanism: the reasoning's input dependence falls first).
 */
export const LESSON_PRESETS = [LESSON_PRESET, 'echo-trap-frozenlake'] as const;
export type LessonPreset = (typeof LESSON_PRESETS)[number];

/**
 * The lesson a URL asks for: `?lesson` (or `?lesson=`) is the default, `?lesson=NAME` one of LESSON_PRESETS. An
 * unknown name is an Error naming it and the lessons there are, so a mistyped link says what went wrong.
 */
export function lessonPresetFromSearch(search: string): LessonPreset {
  const name = new URLSearchParams(search).get('lesson') ?? '';
  if (name === '') return LESSON_PRESET;
  const known = LESSON_PRESETS.find((p) => p === name);
  if (!known) throw new Error(`there is no lesson '${name}' (lessons: ${LESSON_PRESETS.join(', ')})`);
  return known;
}

/** Where a preset's recording lives, relative to the site's base URL (and to public/ in the repository). */
export function lessonFolder(preset: string): string {
  return `lessons/${preset}`;
}

/** One arm of a recording. */
export interface LessonArmFiles {
  /** The arm's name in the preset ('starpo', 'starpo-s'). */
  name: string;
  /** Paths relative to the recording's folder. */
  metrics: string;
  rollouts: string;
  /** Training steps the arm completed (the last step of its metrics.jsonl). */
  steps: number;
  /** The `ragen train` command line that trained it. */
  trainCommand: string;
  /** Wall-clock seconds the training took. */
  seconds: number;
}

/** One run of a recording: an arm on one training seed (the manifest's `seed` is every arm's first run). */
export interface LessonRunFiles extends LessonArmFiles {
  seed: number;
  /** Set when the run stopped a few steps after its collapse (the step it collapsed at), instead of at `steps`. */
  collapseStep?: number;
}

/** manifest.json of a recording: what was recorded, from which code, how, and when. */
export interface LessonManifest {
  /** Format version of this file (1). */
  format: 1;
  /** The preset the arms were trained with (`ragen train --preset`). */
  preset: string;
  /** The arms in the preset's order (the page colours them in this order, as it colours live arms). */
  arms: LessonArmFiles[];
  /** Training steps asked for per arm. */
  steps: number;
  /** trainer.seed of every arm (model initialisation and sampling). */
  seed: number;
  backend: string;
  /** Cores per run (`ragen train --workers`). */
  workers: number;
  /**
   * Every run of the recording, the arms' first runs (`arms`) included, when it holds several training seeds per
   * arm (the lesson's multi-run view); absent in a recording of one seed.
   */
  runs?: LessonRunFiles[];
  /** Sample trajectories kept per step and split (the rest of what the run logged was dropped to keep the files small). */
  rolloutsPerStep: number;
  /** The git commit the recording was made from, and whether the training code differed from it. */
  commit: string;
  dirty: boolean;
  /** When it was recorded (ISO 8601). */
  date: string;
  /** The command that made the recording (the one way to remake it). */
  command: string;
  /**
   * Set when the `echo_trap/*` keys of the metrics were recomputed after recording by a later early-warning detector
   * (`record-lesson.ts --replay-marks`; the detector only reads the other metrics, which stay as the runs logged them).
   */
  marksReplayed?: { commit: string; date: string; command: string };
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Reads manifest.json; a missing or mistyped field is an Error naming it and the file. */
export function parseLessonManifest(raw: unknown, source = 'manifest.json'): LessonManifest {
  if (!isObject(raw)) throw new Error(`${source}: not a JSON object`);
  const need = <T>(
    obj: Record<string, unknown>,
    key: string,
    ok: (v: unknown) => boolean,
    what: string,
    where: string,
  ): T => {
    if (!ok(obj[key])) throw new Error(`${where}: field '${key}' should be ${what}, got ${JSON.stringify(obj[key])}`);
    return obj[key] as T;
  };
  const str = (v: unknown) => typeof v === 'string' && v.length > 0;
  const count = (v: unknown) => typeof v === 'number' && Number.isInteger(v) && v >= 0;
  if (raw.format !== 1)
    throw new Error(`${source}: format ${JSON.stringify(raw.format)} is not one this page reads (1)`);
  const arms = need<unknown[]>(raw, 'arms', (v) => Array.isArray(v) && v.length > 0, 'a non-empty list', source).map(
    (arm, i) => {
      const where = `${source}: arms[${i}]`;
      if (!isObject(arm)) throw new Error(`${where}: not an object`);
      return {
        name: need<string>(arm, 'name', str, 'an arm name', where),
        metrics: need<string>(arm, 'metrics', str, 'a path', where),
        rollouts: need<string>(arm, 'rollouts', str, 'a path', where),
        steps: need<number>(arm, 'steps', count, 'a step count', where),
        trainCommand: need<string>(arm, 'trainCommand', str, 'a command line', where),
        seconds: need<number>(arm, 'seconds', (v) => typeof v === 'number' && v >= 0, 'a number of seconds', where),
      };
    },
  );
  const runs =
    raw.runs === undefined
      ? undefined
      : need<unknown[]>(raw, 'runs', Array.isArray, 'a list', source).map((run, i) => {
          const where = `${source}: runs[${i}]`;
          if (!isObject(run)) throw new Error(`${where}: not an object`);
          return {
            name: need<string>(run, 'name', str, 'an arm name', where),
            seed: need<number>(run, 'seed', count, 'a seed', where),
            metrics: need<string>(run, 'metrics', str, 'a path', where),
            rollouts: need<string>(run, 'rollouts', str, 'a path', where),
            steps: need<number>(run, 'steps', count, 'a step count', where),
            trainCommand: need<string>(run, 'trainCommand', str, 'a command line', where),
            seconds: need<number>(run, 'seconds', (v) => typeof v === 'number' && v >= 0, 'a number of seconds', where),
            ...(run.collapseStep === undefined
              ? {}
              : { collapseStep: need<number>(run, 'collapseStep', count, 'a step', where) }),
          };
        });
  return {
    format: 1,
    preset: need<string>(raw, 'preset', str, 'a preset name', source),
    arms,
    steps: need<number>(raw, 'steps', count, 'a step count', source),
    seed: need<number>(raw, 'seed', count, 'a seed', source),
    backend: need<string>(raw, 'backend', str, 'a backend name', source),
    workers: need<number>(raw, 'workers', count, 'a core count', source),
    ...(runs ? { runs } : {}),
    rolloutsPerStep: need<number>(raw, 'rolloutsPerStep', count, 'a count', source),
    commit: need<string>(raw, 'commit', str, 'a git commit', source),
    dirty: need<boolean>(raw, 'dirty', (v) => typeof v === 'boolean', 'true or false', source),
    date: need<string>(raw, 'date', str, 'an ISO date', source),
    command: need<string>(raw, 'command', str, 'a command line', source),
    ...(raw.marksReplayed === undefined
      ? {}
      : { marksReplayed: parseMarksReplayed(raw.marksReplayed, `${source}: marksReplayed`) }),
  };
}

function parseMarksReplayed(raw: unknown, where: string): NonNullable<LessonManifest['marksReplayed']> {
  if (!isObject(raw)) throw new Error(`${where}: not an object`);
  const text = (key: string) => {
    if (typeof raw[key] !== 'string' || raw[key] === '')
      throw new Error(`${where}: field '${key}' should be a text, got ${JSON.stringify(raw[key])}`);
    return raw[key] as string;
  };
  return { commit: text('commit'), date: text('date'), command: text('command') };
}

/**
 * The first `perStep` records of each (step, split) in file order: a run logs `trainer.logRollouts` trajectories per
 * step and split, and a recording that ships with the site keeps only a few of them.
 */
export function keepFewRollouts<T extends { step: number; split?: unknown }>(
  records: readonly T[],
  perStep: number,
): T[] {
  const seen = new Map<string, number>();
  return records.filter((r) => {
    const key = `${r.step}|${String(r.split ?? '')}`;
    const n = seen.get(key) ?? 0;
    seen.set(key, n + 1);
    return n < perStep;
  });
}

/** A recording as the page shows it: each arm's metrics rows and sample trajectories (its first run's), and every run's rows. */
export interface RecordedLesson {
  manifest: LessonManifest;
  arms: { name: string; rows: MetricRow[]; rollouts: StoredRollout[] }[];
  /** Every run, the arms' first runs included (one per arm in a recording of one seed). */
  runs: { arm: string; seed: number; rows: MetricRow[] }[];
}

/**
 * Fetches a preset's recording from the site (relative to `base`, the page's base URL, so any sub-path works) and
 * reads it with the same parsers as an imported run. Errors name the file and the problem.
 */
export async function fetchRecordedLesson(base: string, preset: string = LESSON_PRESET): Promise<RecordedLesson> {
  const folder = new URL(`${lessonFolder(preset)}/`, base);
  const text = async (file: string): Promise<string> => {
    const url = new URL(file, folder);
    let response: Response;
    try {
      response = await fetch(url);
    } catch (err) {
      throw new Error(`could not fetch ${lessonFolder(preset)}/${file}: ${(err as Error).message}`, { cause: err });
    }
    if (!response.ok)
      throw new Error(
        `${lessonFolder(preset)}/${file} is not on this site (HTTP ${response.status}): record it with experiments/record-lesson.ts`,
      );
    return response.text();
  };
  const manifestName = `${lessonFolder(preset)}/manifest.json`;
  let raw: unknown;
  try {
    raw = JSON.parse(await text('manifest.json'));
  } catch (err) {
    throw err instanceof SyntaxError ? new Error(`${manifestName} is not valid JSON (${err.message})`) : err;
  }
  const manifest = parseLessonManifest(raw, manifestName);
  if (manifest.preset !== preset)
    throw new Error(`${manifestName} records preset '${manifest.preset}', not '${preset}'`);
  const arms = await Promise.all(
    manifest.arms.map(async (arm) => ({
      name: arm.name,
      rows: parseMetricsJsonl(await text(arm.metrics), `${lessonFolder(preset)}/${arm.metrics}`),
      rollouts: parseRolloutsJsonl(await text(arm.rollouts), `${lessonFolder(preset)}/${arm.rollouts}`),
    })),
  );
  const more = (manifest.runs ?? []).filter((r) => !manifest.arms.some((a) => a.metrics === r.metrics));
  const runs = [
    ...arms.map((a) => ({ arm: a.name, seed: manifest.seed, rows: a.rows })),
    ...(await Promise.all(
      more.map(async (r) => ({
        arm: r.name,
        seed: r.seed,
        rows: parseMetricsJsonl(await text(r.metrics), `${lessonFolder(preset)}/${r.metrics}`),
      })),
    )),
  ];
  return { manifest, arms, runs };
}
