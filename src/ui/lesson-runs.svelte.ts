// The lesson's runs: several training seeds per arm, trained live in a few workers (or loaded from the recording),
// each run's metrics as they stream in. A run stops STEPS_AFTER_COLLAPSE steps after its collapse
// (trainer.stopAfterCollapse), so collapsed runs cost little; free workers take the runs most expensive first after one of each arm (lessonRuns.ts scheduleRuns), so the
// arms end together.
import * as Comlink from 'comlink';
import { startTrainerWorker, type TrainerClient } from './trainer-client';
import {
  armPriors,
  stepTokens,
  interleave,
  LESSON_SEEDS,
  lessonSeeds,
  profileSeconds,
  runKey,
  scheduleRuns,
  STEPS_AFTER_COLLAPSE,
  stopStep,
  type ArmPrior,
  type PlannedRun,
} from './lessonRuns';
import { runConfigFor, presetArms } from './settings';
import type { MetricRow, RunStatus, StoredRollout, TrainingListener } from '../../workers/protocol';
import type { PresetName } from '../starpo/presets';
import type { RecordedLesson } from './lesson';
import { messageOf, playground } from './playground.svelte';
import { siteBase } from './playground-workers.svelte';

/** One run on screen: an arm on one training seed. */
export interface LessonRunView {
  arm: string;
  seed: number;
  rows: MetricRow[];
  /** Sample trajectories: kept for each arm's first run only (the reasoning panel shows those). */
  rollouts: StoredRollout[];
  /** The worker's last status; null for a recorded run, and for a live run no worker has taken yet. */
  status: RunStatus | null;
  /** The step it stops at, once it collapsed. */
  stopAt: number | null;
  /** Wall-clock seconds each training step took on this page (everything between two metrics rows), for the time estimate. */
  stepSeconds: number[];
  /** Tokens each of those steps trained on. */
  stepTokens: number[];
  /** Wall-clock seconds from asking for the run to its first metrics row (building the model, the step-0 validation). */
  startup: number | null;
}

const ENDED = new Set(['done', 'stopped', 'failed']);

class LessonRunsState {
  runs = $state<LessonRunView[]>([]);
  source = $state<'live' | 'recorded' | null>(null);
  /** Workers training the live lesson (0 when none). */
  workers = $state(0);
  /** When the live lesson started and ended (ms since the epoch). */
  startedAt = $state<number | null>(null);
  endedAt = $state<number | null>(null);
  /** Each arm's run length and pace in the recording: the time estimate's start. */
  priors = $state<Record<string, ArmPrior>>({});
  error = $state<string | null>(null);
  /** True while a live lesson has runs left. */
  active = $derived(this.source === 'live' && this.endedAt === null);
}

export const lessonRuns = new LessonRunsState();

/** A run is over: ended in its worker, or recorded. */
export function runOver(run: LessonRunView): boolean {
  return run.status === null ? lessonRuns.source === 'recorded' : ENDED.has(run.status.phase);
}

let clients: TrainerClient[] = [];
let queue: PlannedRun[] = [];

function endWorkers(): void {
  for (const c of clients) c.terminate();
  clients = [];
}

/** Shows a recording's runs (every seed of every arm). */
export function showRecordedRuns(lesson: RecordedLesson): void {
  stopLessonRuns();
  const firstRollouts = new Map(lesson.arms.map((a) => [a.name, a.rollouts]));
  lessonRuns.runs = lesson.runs.map((r) => ({
    arm: r.arm,
    seed: r.seed,
    rows: r.rows,
    rollouts: r.seed === lesson.manifest.seed ? (firstRollouts.get(r.arm) ?? []) : [],
    status: null,
    stopAt: null,
    stepSeconds: [],
    stepTokens: [],
    startup: null,
  }));
  lessonRuns.source = 'recorded';
  lessonRuns.error = null;
}

/** Sets each arm's expected run length and step times from the recording (what the live estimate starts from). */
export function setPriors(lesson: RecordedLesson): void {
  // Each step's own time as the runs logged it; the estimate rescales it to this computer.
  const time = (row: MetricRow) => (typeof row['timing_s/step'] === 'number' ? row['timing_s/step'] : 0);
  lessonRuns.priors = armPriors(
    lesson.runs.map((r) => {
      const rows = r.rows.filter((row) => row.step >= 1);
      return { arm: r.arm, seed: r.seed, times: rows.map(time), tokens: rows.map(stepTokens) };
    }),
  );
}

/** How many workers the live lesson trains in: one run per core on wasm (at most 4), two on a GPU. */
export function lessonWorkers(runs: number, backend: string, cores: number): number {
  const perBackend = backend === 'webgpu' || backend === 'webgl' ? 2 : Math.min(4, Math.max(1, cores));
  return Math.max(1, Math.min(runs, perBackend));
}

/**
 * The live lesson: every arm of `preset` on `runsPerArm` seeds (the preset's own, or from the URL's seed on), with the
 * URL's knobs, in `lessonWorkers` workers on the page's backend.
 */
export async function startLessonRuns(preset: PresetName, runsPerArm: number): Promise<void> {
  stopLessonRuns();
  const settings = { ...$state.snapshot(playground.settings), preset };
  const arms = presetArms(preset);
  const first = runConfigFor(settings, arms[0]);
  const seeds = lessonSeeds(first.trainer.seed, runsPerArm, LESSON_SEEDS[preset]);
  const total = first.trainer.totalSteps;
  const backend = playground.backend?.name ?? playground.requested;
  // Expected seconds per run, from the recording when there is one (vanilla's runs cost far more per step).
  const planned = interleave(arms, seeds).map(({ arm, seed }) => {
    const p = lessonRuns.priors[runKey(arm, seed)] ?? lessonRuns.priors[arm];
    return { arm, seed, expectedSeconds: p ? profileSeconds(p, 0, Math.min(total, Math.round(p.steps))) : total };
  });
  lessonRuns.runs = interleave(arms, seeds).map(({ arm, seed }) => ({
    arm,
    seed,
    rows: [],
    rollouts: [],
    status: null,
    stopAt: null,
    stepSeconds: [],
    stepTokens: [],
    startup: null,
  }));
  lessonRuns.source = 'live';
  lessonRuns.error = null;
  lessonRuns.startedAt = Date.now();
  lessonRuns.endedAt = null;
  const n = lessonWorkers(
    planned.length,
    backend,
    typeof navigator !== 'undefined' ? navigator.hardwareConcurrency || 2 : 2,
  );
  lessonRuns.workers = n;
  queue = scheduleRuns(planned, n);
  const mine = Array.from({ length: n }, () => startTrainerWorker());
  clients = mine;
  try {
    await Promise.all(mine.map((c) => workLoop(c, preset, settings, backend, n)));
  } catch (err) {
    if (clients === mine) lessonRuns.error = messageOf(err);
  } finally {
    if (clients === mine) {
      lessonRuns.endedAt = Date.now();
      endWorkers();
    }
  }
}

/** One worker: takes the next run from the queue until none is left. */
async function workLoop(
  c: TrainerClient,
  preset: PresetName,
  settings: typeof playground.settings,
  backend: string,
  workers: number,
): Promise<void> {
  const call = <T>(p: Promise<T>) => Promise.race([p, c.crashed]);
  await call(c.api.init(backend as never));
  for (let next = queue.shift(); next && clients.includes(c); next = queue.shift()) {
    const view = lessonRuns.runs.find((r) => r.arm === next!.arm && r.seed === next!.seed);
    if (!view) continue;
    const config = runConfigFor({ ...settings, preset }, next.arm);
    config.trainer.seed = next.seed;
    // The trainer ends the run a few steps after its collapse (the verdict's rule, online).
    config.trainer.stopAfterCollapse = STEPS_AFTER_COLLAPSE;
    const keepRollouts = view.seed === lessonRuns.runs.find((r) => r.arm === view.arm)?.seed;
    const asked = performance.now();
    let lastRow: number | null = null;
    let ended!: () => void;
    const over = new Promise<void>((resolve) => (ended = resolve));
    const listener: TrainingListener = {
      metrics(row) {
        const at = view.rows.findIndex((r) => r.step >= row.step);
        if (at === -1) view.rows.push(row);
        else view.rows.splice(at, view.rows.length - at, row);
        const now = performance.now();
        if (lastRow === null) view.startup = (now - asked) / 1000;
        else if (row.step >= 1) {
          view.stepSeconds.push((now - lastRow) / 1000);
          view.stepTokens.push(stepTokens(row));
        }
        lastRow = now;
        view.stopAt ??= stopStep(view.rows);
      },
      rollouts(step, records) {
        if (keepRollouts) view.rollouts = [...view.rollouts.filter((r) => r.step < step), ...records];
      },
      status(status) {
        view.status = status;
        if (ENDED.has(status.phase)) ended();
      },
      progress() {},
      checkpoint() {},
    };
    try {
      await call(
        c.api.createRun(
          { config, siteBase: siteBase(), workers: settings.workers, runs: workers, checkpoints: false },
          Comlink.proxy(listener),
        ),
      );
      await call(c.api.play());
      await Promise.race([over, c.crashed]);
    } catch (err) {
      view.status = {
        phase: 'failed',
        step: view.status?.step ?? 0,
        totalSteps: config.trainer.totalSteps,
        message: messageOf(err),
      };
      throw new Error(`${view.arm} seed ${view.seed}: ${messageOf(err)}`, { cause: err });
    }
    if (view.status?.phase === 'failed')
      throw new Error(`${view.arm} seed ${view.seed}: ${view.status.message ?? 'training failed'}`);
  }
}

/** Ends the live lesson: its workers are ended (the runs on screen stay as they are). */
export function stopLessonRuns(): void {
  queue = [];
  if (clients.length === 0) return;
  endWorkers();
  if (lessonRuns.source === 'live') {
    lessonRuns.endedAt = Date.now();
    for (const r of lessonRuns.runs)
      if (r.status && !ENDED.has(r.status.phase)) r.status = { ...r.status, phase: 'stopped' };
  }
}
