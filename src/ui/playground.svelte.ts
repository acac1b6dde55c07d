// The playground's state, as Svelte 5 runes in a plain module: components read it, and only the functions here
// change it. It holds the backend the worker got (and its matmul self-check), the settings (mirrored in the URL),
// and the runs on screen: one per preset arm (two side by side in classroom mode), each with its metrics rows and
// sample trajectories as they stream in from its worker. Training itself never runs here: every tfjs call is in
// the trainer worker(s), reached through the typed Comlink protocol.
import * as Comlink from 'comlink';
import { startTrainerWorker, type TrainerClient } from './trainer-client';
import {
  checkKnob,
  KNOB_SPECS,
  knobNotANumber,
  presetArms,
  readSettingsSearch,
  runConfigFor,
  settingsProblem,
  settingsToSearch,
  withKnob,
  type FieldName,
  type Knobs,
  type PlaygroundSettings,
  type SettingsProblem,
} from './settings';
import { runStatusText, type Halting } from './run-status';
import * as store from './run-store';
import type { RunContents } from './run-files';
import { fetchRecordedLesson, LESSON_PRESET, type LessonManifest } from './lesson';
import type { PresetName } from '../starpo/presets';
import {
  BROWSER_SCORECARD_DEFAULTS,
  MATMUL_CHECK_SIZE,
  MATMUL_TOLERANCE,
  type BackendChoice,
  type BackendInfo,
  type CheckpointBytes,
  type MatmulCheckResult,
  type MetricRow,
  type RolloutRecord,
  type StoredRollout,
  type RunStatus,
  type Scorecard,
  type ScorecardProgress,
  type ScorecardRequest,
  type ScorecardSource,
  type StepProgress,
  type TrainingListener,
  type WorkersChoice,
} from '../../workers/protocol';

/** Where the page is in bringing the worker up: starting the backend, self-checking it, usable, or failed. */
export type Phase = 'starting' | 'checking' | 'ready' | 'failed';

/** One run on screen: a live arm being trained, or a stored / imported run being viewed. */
export interface ArmView {
  /** Arm name ('bandit-tiny', or 'starpo' / 'starpo-s' in classroom mode; the file name for imports). */
  arm: string;
  /** IndexedDB id, or null for an import that was not stored. */
  runId: string | null;
  /** Training status from the worker; null for a run only being viewed. */
  status: RunStatus | null;
  rows: MetricRow[];
  rollouts: StoredRollout[];
  /** Step of the latest stored checkpoint, if any. */
  checkpointStep: number | null;
  /** Where the step in flight is (from the worker), or null. */
  progress: StepProgress | null;
  /** A pause or stop asked for and not yet confirmed (the `run-status` says 'pausing' / 'stopping'). */
  halting: Halting;
}

class PlaygroundState {
  /** The backend asked for (from the URL). */
  requested = $state<BackendChoice>('auto');
  phase = $state<Phase>('starting');
  /** What the worker's tfjs is running, once it has started. */
  backend = $state<BackendInfo | null>(null);
  matmul = $state<MatmulCheckResult | null>(null);
  /** The message of the error that stopped start-up, if any. */
  error = $state<string | null>(null);
  /**
   * Whether the page is cross-origin isolated (the server sent COOP + COEP: README "Hosting the static build").
   * Training uses its helper worker either way; isolation is what SharedArrayBuffer and tfjs's threaded wasm need.
   */
  crossOriginIsolated = typeof self !== 'undefined' && self.crossOriginIsolated === true;
  /** True once the self-check ran and stayed within tolerance. */
  matmulPassed = $derived(this.matmul !== null && this.matmul.maxAbsError <= MATMUL_TOLERANCE);

  /** Preset, backend and knobs; mirrored in the URL by `setSettings`. */
  settings = $state<PlaygroundSettings>({ preset: 'bandit-tiny', backend: 'auto', workers: 'auto', knobs: {} });
  /** The raw text of fields holding a value that is not usable (from the URL or typed), shown for fixing in place. */
  drafts = $state<Partial<Record<FieldName, string>>>({});
  /** Why each such field's value is not usable, in plain words. */
  fieldErrors = $state<Partial<Record<FieldName, string>>>({});
  /** Why the settings together cannot make a run (e.g. a filter that keeps no group), with the fields to fix. */
  combination = $state<SettingsProblem | null>(null);
  /** The combination problem's message (the `settings-error` text), or null. */
  settingsError = $derived(this.combination?.message ?? null);
  /** True when every field is usable and together they make a run. */
  settingsOk = $derived(Object.keys(this.fieldErrors).length === 0 && this.combination === null);
  /** The runs on screen. */
  arms = $state<ArmView[]>([]);
  /** A training action in progress on the page side (creating workers, loading the warm start). */
  busy = $state(false);
  /** The last training error (a failed run, a worker that could not build the Trainer). */
  trainingError = $state<string | null>(null);
  /** Stored runs, newest first (the run list). */
  storedRuns = $state<store.StoredRun[]>([]);
  /** The manifest of the recorded lesson whose arms are on screen, or null (live runs, stored runs, imports). */
  lesson = $state<LessonManifest | null>(null);
  /** Why the recorded lesson could not be loaded. */
  lessonError = $state<string | null>(null);

  /** Size of the scorecards asked for (seeds per suite, rollouts per seed). */
  scorecardRequest = $state<ScorecardRequest>({ ...BROWSER_SCORECARD_DEFAULTS });
  /** The latest scorecard, computed in the worker. */
  scorecard = $state<Scorecard | null>(null);
  /** Progress of the scorecard being computed, or null when none is. */
  scorecardProgress = $state<ScorecardProgress | null>(null);
  /** True from the click until the scorecard (or its error) is back. */
  scoring = $state(false);
  /** Why the last scorecard failed. */
  scorecardError = $state<string | null>(null);

  /** Completed steps of the first arm (the `step-count` test id). */
  stepCount = $derived(this.arms[0]?.status?.step ?? this.arms[0]?.rows.at(-1)?.step ?? 0);
  /** The `run-status` word for all arms on screen. */
  runStatus = $derived(runStatusText(this.arms));
  /** Where the first arm's step in flight is. */
  progress = $derived(this.arms[0]?.progress ?? null);
  /** True while any arm's worker is training. */
  running = $derived(this.arms.some((a) => a.status?.phase === 'running' || a.status?.phase === 'loading'));
  /** Live arms that can be resumed or single-stepped. */
  resumable = $derived(this.arms.length > 0 && this.arms.every((a) => a.status?.phase === 'paused' || a.status?.phase === 'ready'));
  /**
   * The run on screen that can go on from its stored checkpoint (stopped, or left by a reload), or null: then the
   * big button says Resume and continues it; a new run is the separate "New run" button.
   */
  resumeRunId = $derived.by(() => {
    if (this.arms.length !== 1) return null;
    const view = this.arms[0];
    if (view.runId === null || view.checkpointStep === null) return null;
    if (view.status !== null && view.status.phase !== 'stopped') return null; // live arms resume in their worker
    const run = this.storedRuns.find((r) => r.id === view.runId);
    if (!run?.config || run.status?.phase === 'done' || run.status?.phase === 'failed') return null;
    return view.checkpointStep < run.config.trainer.totalSteps ? view.runId : null;
  });
}

export const playground = new PlaygroundState();

/** The first worker: it runs the backend self-check and the first (or only) arm. */
let client: TrainerClient | null = null;
/** Workers of the live arms, by arm name (the first arm uses `client`). */
const armClients = new Map<string, TrainerClient>();

/** Starts the worker with the requested backend and runs the matmul self-check. Errors end up in `playground.error`. */
export async function connect(requested: BackendChoice): Promise<void> {
  client?.terminate();
  for (const [, c] of armClients) if (c !== client) c.terminate();
  armClients.clear();
  await startFirstWorker(requested);
}

/** (Re)starts only the first worker; live arms in other workers are left alone. */
async function startFirstWorker(requested: BackendChoice): Promise<void> {
  client = startTrainerWorker();
  watchForCrash(client);
  playground.requested = requested;
  playground.phase = 'starting';
  playground.backend = null;
  playground.matmul = null;
  playground.error = null;
  try {
    playground.backend = await answer(client, client.api.init(requested));
    playground.phase = 'checking';
    playground.matmul = await answer(client, client.api.matmulCheck(MATMUL_CHECK_SIZE));
    playground.phase = playground.matmulPassed ? 'ready' : 'failed';
    if (!playground.matmulPassed) {
      playground.error = `the ${playground.matmul.backend} backend computed a wrong matmul ` +
        `(max abs error ${playground.matmul.maxAbsError} > ${MATMUL_TOLERANCE})`;
    }
  } catch (err) {
    playground.phase = 'failed';
    playground.error = messageOf(err);
  }
}

/** A call to a worker, or its crash: a dead worker never answers, so nothing waits on it forever. */
function answer<T>(c: TrainerClient, call: Promise<T>): Promise<T> {
  return Promise.race([call, c.crashed]);
}

/** Records an error found before the worker could start (e.g. a bad URL parameter). */
export function fail(message: string): void {
  playground.phase = 'failed';
  playground.error = message;
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

// --- settings -------------------------------------------------------------------------------------------------

/**
 * Replaces the settings, writes them to the URL (history.replaceState: a link reproduces the setup), and checks
 * that they make a valid RunConfig for every arm. Invalid settings stay on screen with the error; nothing runs.
 */
export function setSettings(next: PlaygroundSettings): void {
  playground.settings = next;
  if (typeof window !== 'undefined') {
    const search = settingsToSearch(next, window.location.search);
    window.history.replaceState(null, '', `${window.location.pathname}${search}${window.location.hash}`);
  }
  playground.combination = settingsProblem(next);
}

/** Settings read from a URL: the usable part applied, each bad field kept (raw text + plain-words error) to fix. */
export function loadSettingsFromSearch(search: string): PlaygroundSettings {
  const reading = readSettingsSearch(search);
  playground.drafts = { ...reading.drafts };
  playground.fieldErrors = Object.fromEntries(reading.problems.map((p) => [p.fields[0], p.message]));
  setSettings(reading.settings);
  return reading.settings;
}

/** Clears a field's bad value (its draft and error). */
function clearField(name: FieldName): void {
  if (name in playground.drafts) {
    const { [name]: _d, ...drafts } = playground.drafts;
    playground.drafts = drafts;
  }
  if (name in playground.fieldErrors) {
    const { [name]: _e, ...errors } = playground.fieldErrors;
    playground.fieldErrors = errors;
  }
}

/**
 * The form's entry for a knob: text checked by the same limits as the URL (`badInput`: the browser could not read
 * the field as a number at all). A usable value becomes the setting (the
 * preset's own value clears the knob); anything else stays in the field, highlighted with the reason.
 */
export function setKnobText(name: keyof Knobs, raw: string, presetValue: Knobs[keyof Knobs], badInput = false): void {
  const check = badInput ? { ok: false as const, error: '' } : checkKnob(name, raw);
  if (!check.ok) {
    playground.drafts = { ...playground.drafts, [name]: raw };
    playground.fieldErrors = { ...playground.fieldErrors, [name]: badInput ? knobNotANumber(name) : `${KNOB_SPECS[name].label} ${check.error}` };
    return;
  }
  clearField(name);
  setSettings(withKnob(playground.settings, name, check.value === presetValue ? undefined : (check.value as never)));
}

/** A new preset starts from its own values: knobs belong to the preset they were set on. */
export function setPreset(preset: PlaygroundSettings['preset']): void {
  clearField('preset');
  for (const name of Object.keys(playground.fieldErrors) as FieldName[]) if (name !== 'backend') clearField(name);
  setSettings({ ...playground.settings, preset, knobs: {} });
}

/** Cores for the next run (a live run keeps the cores it was built with). */
export function setWorkersChoice(workers: WorkersChoice): void {
  clearField('workers');
  setSettings({ ...playground.settings, workers });
}

/** Switches the tfjs backend: the worker is restarted on it (only while no run is live). */
export function setBackendChoice(backend: BackendChoice): Promise<void> {
  clearField('backend');
  setSettings({ ...playground.settings, backend });
  playground.arms = playground.arms.filter((a) => a.status === null); // runs of the old worker cannot go on
  return connect(backend);
}

// --- metrics and rollouts from the workers ------------------------------------------------------------------------

/** Adds a metrics row to an arm (a repeated or older step replaces what is there: a resumed run re-does steps). */
export function recordMetrics(view: ArmView, row: MetricRow): void {
  const i = view.rows.findIndex((r) => r.step >= row.step);
  if (i === -1) view.rows.push(row);
  else view.rows.splice(i, view.rows.length - i, row);
}

/** Adds a step's sample trajectories to an arm (replacing any earlier records of that step). */
export function recordRollouts(view: ArmView, step: number, records: StoredRollout[]): void {
  const kept = view.rollouts.filter((r) => r.step < step);
  view.rollouts = [...kept, ...records];
}

/** Shows runs without training them (a stored run, an import, or recorded data). */
export function showRuns(views: ArmView[]): void {
  playground.lesson = null;
  playground.arms = views;
}

// --- training ---------------------------------------------------------------------------------------------------

/** The page's base URL: the warm-start checkpoint under public/ is fetched relative to it (any sub-path works). */
function siteBase(): string {
  return typeof document !== 'undefined' ? document.baseURI : '/';
}

async function clientFor(arm: string, index: number): Promise<TrainerClient> {
  if (index === 0) {
    if (!client) throw new Error('the trainer worker has not started');
    return client;
  }
  // Classroom mode: each further arm trains in its own worker on the same backend.
  let c = armClients.get(arm);
  if (!c) {
    c = startTrainerWorker();
    watchForCrash(c);
    await answer(c, c.api.init(playground.backend?.name ?? playground.requested));
  }
  return c;
}

/** Checkpoints still being written to IndexedDB: a resume waits for them, so it finds the latest. */
let saving: Promise<unknown> = Promise.resolve();
function track(write: Promise<unknown>): void {
  saving = Promise.all([saving, write.catch(() => undefined)]);
}

function listenerFor(view: ArmView): TrainingListener {
  return {
    metrics(row) {
      recordMetrics(view, row);
      if (view.runId) void store.appendMetrics(view.runId, row);
    },
    rollouts(step, records) {
      recordRollouts(view, step, records);
      if (view.runId) void store.appendRollouts(view.runId, step, records);
    },
    status(status) {
      view.status = status;
      if (status.phase !== 'running' && status.phase !== 'loading') view.progress = null;
      if (status.phase === 'failed') playground.trainingError = `${view.arm}: ${status.message ?? 'training failed'}`;
      if (view.runId) {
        const saved = store.updateRunStatus(view.runId, status);
        // The run list shows each run's phase and step: refresh it when a run settles.
        if (status.phase !== 'running') void saved.then(refreshStoredRuns);
      }
    },
    checkpoint(step, files: CheckpointBytes) {
      view.checkpointStep = step;
      if (view.runId) track(store.saveCheckpoint({ runId: view.runId, step, files }));
    },
    progress(progress) {
      view.progress = progress;
    },
  };
}

/**
 * Builds one run per arm of the current settings in the worker(s), optionally resuming each from a stored
 * checkpoint. The views are put on screen first, so the UI shows 'loading' while the warm start is fetched.
 */
async function createRuns(resume?: { run: store.StoredRun; checkpoint: store.StoredCheckpoint | null; rows: MetricRow[]; rollouts: StoredRollout[] }): Promise<void> {
  const settings = playground.settings;
  const arms = resume ? [resume.run.arm] : presetArms(settings.preset);
  const configs = resume ? [resume.run.config!] : arms.map((arm) => runConfigFor(settings, arm));
  const group = arms.length > 1 ? store.newRunId('classroom') : null;
  const views: ArmView[] = arms.map((arm, i) => ({
    arm,
    runId: resume ? resume.run.id : store.newRunId(arm),
    status: { phase: 'loading', step: resume?.checkpoint?.step ?? 0, totalSteps: configs[i].trainer.totalSteps, message: null },
    rows: resume ? resume.rows.filter((r) => r.step <= (resume.checkpoint?.step ?? 0)) : [],
    rollouts: resume ? resume.rollouts.filter((r) => r.step <= (resume.checkpoint?.step ?? 0)) : [],
    checkpointStep: resume?.checkpoint?.step ?? null,
    progress: null,
    halting: null,
  }));
  playground.lesson = null;
  playground.arms = views;
  const live = playground.arms; // the $state proxies: updates through them reach the UI
  const search = typeof window !== 'undefined' ? window.location.search : '';
  await Promise.all(
    live.map(async (view, i) => {
      if (resume) {
        if (resume.checkpoint) await store.truncateAfter(view.runId!, resume.checkpoint.step);
      } else {
        const date = new Date().toLocaleString();
        await store.saveRun({
          id: view.runId!, name: `${settings.preset}${arms.length > 1 ? ` · ${view.arm}` : ''} · ${date}`,
          createdAt: Date.now(), preset: settings.preset, arm: view.arm, group, search, config: configs[i], status: view.status,
        });
      }
      try {
        const c = await clientFor(view.arm, i);
        armClients.set(view.arm, c);
        watchForCrash(c);
        const status = await answer(
          c,
          c.api.createRun(
            {
              config: configs[i],
              siteBase: siteBase(),
              resume: resume?.checkpoint ? { step: resume.checkpoint.step, files: resume.checkpoint.files } : undefined,
              workers: settings.workers,
              runs: arms.length,
            },
            Comlink.proxy(listenerFor(view)),
          ),
        );
        view.status = status;
      } catch (err) {
        // The run could not be built (no context room, a warm start that would not load, a crashed worker): the arm
        // ends as failed with the reason, so Start, the setup and the run list work again.
        await markFailed(view, messageOf(err));
        throw new Error(arms.length > 1 ? `${view.arm}: ${messageOf(err)}` : messageOf(err));
      }
    }),
  );
  void refreshStoredRuns();
}

/** Ends an arm as failed with `message` (the `run-status` says failed; the stored run too). */
async function markFailed(view: ArmView, message: string): Promise<void> {
  view.status = { phase: 'failed', step: view.status?.step ?? 0, totalSteps: view.status?.totalSteps ?? 0, message };
  view.progress = null;
  view.halting = null;
  if (view.runId) await store.updateRunStatus(view.runId, $state.snapshot(view.status)).catch(() => undefined);
  void refreshStoredRuns();
}

/** Clients already watched for a crash. */
const watched = new WeakSet<TrainerClient>();

/**
 * When a worker dies, every arm it trained ends as failed with the reason, and the first worker comes back up, so
 * the page stays usable (a dead worker would otherwise leave the status at 'running' and its calls unanswered).
 */
function watchForCrash(c: TrainerClient): void {
  if (watched.has(c)) return;
  watched.add(c);
  c.crashed.catch(async (err) => {
    const message = messageOf(err);
    for (const [arm, owner] of [...armClients]) {
      if (owner !== c) continue;
      armClients.delete(arm);
      const view = playground.arms.find((a) => a.arm === arm);
      if (view && view.status && !['done', 'stopped', 'failed'].includes(view.status.phase)) await markFailed(view, message);
    }
    playground.trainingError = message;
    // A worker that dies while starting up is reported by startFirstWorker itself (restarting it would loop).
    if (c === client && playground.phase === 'ready') await startFirstWorker(playground.requested);
  });
}

async function guarded(action: () => Promise<void>): Promise<void> {
  playground.trainingError = null;
  playground.busy = true;
  try {
    await action();
  } catch (err) {
    playground.trainingError = messageOf(err);
  } finally {
    playground.busy = false;
  }
}

function liveClients(): TrainerClient[] {
  return playground.arms.map((a) => armClients.get(a.arm)).filter((c): c is TrainerClient => c !== undefined);
}

/**
 * The big button: resumes a paused run in its worker, or a stopped / reloaded run from its stored checkpoint, and
 * otherwise builds the run(s) from the settings and plays every arm.
 */
export function startTraining(): Promise<void> {
  if (!playground.resumable && playground.resumeRunId !== null) return resumeStoredRun(playground.resumeRunId);
  return guarded(async () => {
    if (!playground.resumable) await createRuns();
    await Promise.all(liveClients().map((c) => answer(c, c.api.play())));
  });
}

/** "New run": a fresh run from the settings (from the warm start), whatever is on screen. */
export function startNewRun(): Promise<void> {
  return guarded(async () => {
    const ended = await Promise.all(playground.arms.map((view) => stopArm(view)));
    if (ended.some((c) => c === client)) await startFirstWorker(playground.requested);
    await createRuns();
    await Promise.all(liveClients().map((c) => answer(c, c.api.play())));
  });
}

/** Pauses every arm: within a fraction of a second while a step is still rolling out, else after its update. */
export function pauseTraining(): Promise<void> {
  return guarded(async () => {
    await Promise.all(
      playground.arms.map(async (view) => {
        const c = armClients.get(view.arm);
        if (!c) return;
        view.halting = 'pause';
        try {
          await answer(c, c.api.pause());
        } finally {
          view.halting = null;
        }
      }),
    );
  });
}

/** One training step on every arm (building the runs first if needed). */
export function stepOnce(): Promise<void> {
  return guarded(async () => {
    if (!playground.resumable) await createRuns();
    await Promise.all(liveClients().map((c) => answer(c, c.api.stepOnce())));
  });
}

/**
 * How long Stop waits for a worker to stop by itself. A step still rolling out or scoring stops within a fraction
 * of a second; one in its update (seconds of kernels that do not look at messages) is ended after this.
 */
const STOP_GRACE_MS = 2000;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Stops every arm within about STOP_GRACE_MS. A worker that does not answer in time is ended (terminated): its step
 * in flight is lost, never a checkpoint (the page keeps the one of the last completed step). The run stays stored
 * and can be resumed from that checkpoint in a new session.
 */
export function stopTraining(): Promise<void> {
  return guarded(async () => {
    const ended = await Promise.all(playground.arms.map((view) => stopArm(view)));
    if (ended.some((c) => c === client)) await startFirstWorker(playground.requested);
  });
}

/** Stops one arm; returns the client if its worker had to be ended. */
async function stopArm(view: ArmView): Promise<TrainerClient | null> {
  const c = armClients.get(view.arm);
  const phase = view.status?.phase;
  if (!c || !phase || phase === 'stopped' || phase === 'done' || phase === 'failed') return null;
  view.halting = 'stop';
  try {
    const answered = await Promise.race([c.api.stop().then(() => true, () => true), sleep(STOP_GRACE_MS).then(() => false)]);
    if (answered) return null;
    c.terminate();
    armClients.delete(view.arm);
    const done = view.status?.step ?? 0;
    const checkpoint = view.checkpointStep;
    view.status = {
      phase: 'stopped',
      step: done,
      totalSteps: view.status?.totalSteps ?? done,
      message:
        `stopped during step ${done + 1}, whose update was still running (it was dropped); ` +
        (checkpoint !== null ? `resume continues from the checkpoint of step ${checkpoint}` : 'no checkpoint was kept yet'),
    };
    view.progress = null;
    if (view.runId) await store.updateRunStatus(view.runId, $state.snapshot(view.status));
    void refreshStoredRuns();
    return c;
  } finally {
    view.halting = null;
  }
}

// --- the classroom lesson ---------------------------------------------------------------------------------------

/**
 * The lesson page's one click: the lesson preset's arms (vanilla StarPO and StarPO-S) trained side by side, each in
 * its own worker, with the knobs the URL carries (e.g. `steps=1` for a quick check).
 */
export function startLesson(preset: PresetName = LESSON_PRESET): Promise<void> {
  playground.lessonError = null;
  if (playground.settings.preset !== preset) {
    clearField('preset');
    setSettings({ ...playground.settings, preset });
  }
  return startTraining();
}

/** Shows the recorded lesson that ships with the site (public/lessons/<preset>/): no training, loads at once. */
export async function loadRecordedLesson(preset: string = LESSON_PRESET): Promise<void> {
  playground.lessonError = null;
  playground.busy = true;
  try {
    const lesson = await fetchRecordedLesson(siteBase(), preset);
    showRuns(
      lesson.arms.map((a) => ({ arm: a.name, runId: null, status: null, rows: a.rows, rollouts: a.rollouts, checkpointStep: null, progress: null, halting: null })),
    );
    playground.lesson = lesson.manifest;
  } catch (err) {
    playground.lessonError = messageOf(err);
  } finally {
    playground.busy = false;
  }
}

// --- stored runs ----------------------------------------------------------------------------------------------

export async function refreshStoredRuns(): Promise<void> {
  try {
    playground.storedRuns = await store.listRuns();
  } catch (err) {
    playground.trainingError = `could not read stored runs: ${messageOf(err)}`;
  }
}

/**
 * After a reload: the newest stored run, if it was set up by this very URL, comes back on screen (its charts, and
 * Resume on the big button when it can go on), instead of an idle page with empty charts.
 */
export async function restoreLatestRun(search: string): Promise<void> {
  await refreshStoredRuns();
  const newest = playground.storedRuns[0];
  if (!newest || playground.arms.length > 0 || newest.group !== null || newest.preset === 'imported' || newest.search !== search) return;
  const loaded = await store.loadRun(newest.id);
  if (playground.arms.length === 0) showRuns([viewOf(loaded)]);
}

/**
 * Shows a stored run's charts and trajectories (no training), and puts its settings in the form and the URL (the
 * backend stays: switching it would restart the worker).
 */
export function openStoredRun(runId: string): Promise<void> {
  return guarded(async () => {
    const loaded = await store.loadRun(runId);
    if (loaded.run.search || loaded.run.preset !== 'imported') {
      const reading = readSettingsSearch(loaded.run.search);
      if (reading.problems.length === 0) {
        playground.drafts = {};
        playground.fieldErrors = {};
        setSettings({ ...reading.settings, backend: playground.settings.backend });
      }
    }
    showRuns([viewOf(loaded)]);
  });
}

/**
 * Overlays stored runs on the same charts (no training): one colour each, the legend by run name. Settings stay as
 * they are (the runs may come from different setups).
 */
export function overlayStoredRuns(runIds: readonly string[]): Promise<void> {
  return guarded(async () => {
    if (runIds.length < 2) throw new Error('tick two or more runs to compare them');
    const loaded = await Promise.all(runIds.map((id) => store.loadRun(id)));
    showRuns(loaded.map((l) => ({ ...viewOf(l), arm: l.run.name })));
  });
}

function viewOf(loaded: store.LoadedRun): ArmView {
  return {
    arm: loaded.run.arm,
    runId: loaded.run.id,
    status: null,
    rows: loaded.rows,
    rollouts: loaded.rollouts,
    checkpointStep: loaded.checkpoint?.step ?? null,
    progress: null,
    halting: null,
  };
}

/** Continues a stored run from its latest checkpoint, in the worker. */
export function resumeStoredRun(runId: string): Promise<void> {
  return guarded(async () => {
    await saving;
    const loaded = await store.loadRun(runId);
    if (!loaded.run.config) throw new Error(`run '${loaded.run.name}' has no config to resume from`);
    if (!loaded.checkpoint) throw new Error(`run '${loaded.run.name}' has no checkpoint yet: start a new run instead`);
    const total = loaded.run.config.trainer.totalSteps;
    if (loaded.checkpoint.step >= total) throw new Error(`run '${loaded.run.name}' is finished (${total} of ${total} steps): nothing to resume`);
    await createRuns({ run: loaded.run, checkpoint: loaded.checkpoint, rows: loaded.rows, rollouts: loaded.rollouts });
    await Promise.all(liveClients().map((c) => answer(c, c.api.play())));
  });
}

export function deleteStoredRun(runId: string): Promise<void> {
  return guarded(async () => {
    await store.deleteRun(runId);
    await refreshStoredRuns();
  });
}

/** Shows an imported run (archive or CLI metrics.jsonl); archives with a config are stored so they can resume. */
export function showImportedRun(name: string, contents: RunContents): Promise<void> {
  return guarded(async () => {
    let runId: string | null = null;
    if (contents.config) {
      runId = store.newRunId('imported');
      await store.saveRun({
        id: runId, name: `${name} (imported)`, createdAt: Date.now(), preset: 'imported', arm: name, group: null, search: '',
        config: contents.config, status: null,
      });
      for (const row of contents.rows) await store.appendMetrics(runId, row);
      const steps = [...new Set(contents.rollouts.map((r) => r.step))];
      for (const step of steps) await store.appendRollouts(runId, step, contents.rollouts.filter((r) => r.step === step));
      if (contents.checkpoint) await store.saveCheckpoint({ runId, ...contents.checkpoint });
      await refreshStoredRuns();
    }
    showRuns([{ arm: name, runId, status: null, rows: contents.rows, rollouts: contents.rollouts, checkpointStep: contents.checkpoint?.step ?? null, progress: null, halting: null }]);
  });
}

/** The worker of the first live arm (custom boards are played by its current policy). */
export function firstLiveClient(): TrainerClient | null {
  return liveClients()[0] ?? null;
}

// --- scorecards -----------------------------------------------------------------------------------------------

/** Asks the worker for a scorecard of `source`, keeping progress and the result (or the error) in the state. */
async function computeScorecard(pick: () => Promise<{ client: TrainerClient; source: ScorecardSource }>): Promise<void> {
  if (playground.scoring) return;
  playground.scoring = true;
  playground.scorecardError = null;
  playground.scorecardProgress = null;
  try {
    const { client: c, source } = await pick();
    const onProgress = (p: ScorecardProgress) => {
      playground.scorecardProgress = p;
    };
    playground.scorecard = await c.api.scorecard(source, { ...playground.scorecardRequest }, Comlink.proxy(onProgress));
  } catch (err) {
    playground.scorecardError = messageOf(err);
  } finally {
    playground.scoring = false;
    playground.scorecardProgress = null;
  }
}

/**
 * Scores the current policy: the first live arm's weights (pause it first), or, before any run, the policy a run of
 * the current settings starts from (the run is built as Step would build it: from the warm start).
 */
export function scoreCurrentPolicy(): Promise<void> {
  return computeScorecard(async () => ({ client: await currentPolicyClient(), source: 'current' }));
}

/**
 * The worker holding the current policy: the first live arm's, or, before any run, a run of the current settings
 * built as Step would build it (from the preset's warm start, no step taken).
 */
async function currentPolicyClient(): Promise<TrainerClient> {
  if (playground.phase !== 'ready') throw new Error('the trainer worker is not ready yet');
  if (playground.running) throw new Error('pause the run first: the policy is being trained');
  const liveArm = playground.arms.find((a) => a.status !== null && a.status.phase !== 'failed' && armClients.has(a.arm));
  if (!liveArm) {
    await guarded(() => createRuns());
    if (playground.trainingError) throw new Error(playground.trainingError);
  }
  const c = firstLiveClient();
  if (!c) throw new Error('no live run holds a policy');
  return c;
}

/**
 * Plays a custom board (`{ level }` / `{ map }` for `tag`) with the current policy, in the run's own agent format
 * (workers/trainer.worker.ts playEpisode); before any run, with the preset's warm start.
 */
export async function playCustomBoard(tag: string, board: Record<string, unknown>): Promise<RolloutRecord> {
  const c = await currentPolicyClient();
  return answer(c, c.api.playEpisode(tag, board));
}

/** Scores a stored run's latest checkpoint, in the first worker, with the config of the run it came from. */
export function scoreStoredRun(runId: string): Promise<void> {
  return computeScorecard(async () => {
    if (!client || playground.phase !== 'ready') throw new Error('the trainer worker is not ready yet');
    const loaded = await store.loadRun(runId);
    if (!loaded.run.config) throw new Error(`run '${loaded.run.name}' has no config: cannot tell which suites to score it on`);
    if (!loaded.checkpoint) throw new Error(`run '${loaded.run.name}' has no stored checkpoint yet (one is kept at every pause, stop and end)`);
    const name = `${loaded.run.name} (checkpoint of step ${loaded.checkpoint.step})`;
    return { client, source: { files: loaded.checkpoint.files, config: loaded.run.config, name } };
  });
}
