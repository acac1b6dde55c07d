// The playground's state, as Svelte 5 runes: what the components read. It holds the backend the worker got (and its
// matmul self-check), the settings (mirrored in the URL), and the runs on screen: one per preset arm (two side by
// side in classroom mode), each with its metrics rows and sample trajectories as they stream in from its worker.
// Components read it here; the playground-*.svelte.ts modules change it, one concern each: the settings form
// (playground-settings), the trainer workers (playground-workers), training (playground-training), stored and
// imported runs (playground-runs), the classroom lesson (playground-lesson) and scorecards (playground-scorecards).
// Training itself never runs on the page: every tfjs call is in the trainer worker(s), reached through the typed
// Comlink protocol.
import { runStatusText, type Halting } from './run-status';
import type * as store from './run-store';
import type { LessonManifest } from './lesson';
import type { FieldName, PlaygroundSettings, SettingsProblem } from './settings';
import {
  BROWSER_SCORECARD_DEFAULTS,
  MATMUL_TOLERANCE,
  type BackendChoice,
  type BackendInfo,
  type MatmulCheckResult,
  type MetricRow,
  type StoredRollout,
  type RunStatus,
  type Scorecard,
  type ScorecardProgress,
  type ScorecardRequest,
  type StepProgress,
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
   * Whether the page is cross-origin isolated (the server sent COOP + COEP headers, as vite.config.ts's servers do).
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
  resumable = $derived(
    this.arms.length > 0 && this.arms.every((a) => a.status?.phase === 'paused' || a.status?.phase === 'ready'),
  );
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

/** Shows runs without training them (a stored run, an import, or recorded data). */
export function showRuns(views: ArmView[]): void {
  playground.lesson = null;
  playground.arms = views;
}

/** Runs a page-side action: `busy` while it runs, its error (if any) in `trainingError`. */
export async function guarded(action: () => Promise<void>): Promise<void> {
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

export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
