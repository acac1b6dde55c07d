// The typed contract between the page and the trainer worker. The worker implements `TrainerWorkerApi` and hands
// it to Comlink.expose; the page holds a `Remote<TrainerWorkerApi>` from Comlink.wrap, so every call is checked by
// TypeScript on both sides. Only structured-cloneable data (plain objects, numbers, strings, arrays) crosses it.
import type { BackendChoice, BackendInfo } from '../src/model/backend';
import type { MatmulCheckResult } from './matmul-check';
import type { RunConfig } from '../src/starpo/config';
import type { MetricRow, StoredRollout } from '../src/metrics/jsonl';
import type { RolloutRecord } from '../src/metrics/rolloutRecord';
import type { Scorecard, ScorecardProgress } from '../src/eval/scorecard';
import type { StepPhase } from '../src/starpo/trainer';
import type { WorkersChoice } from '../src/starpo/workers';

export type {
  BackendChoice,
  BackendInfo,
  MatmulCheckResult,
  MetricRow,
  RolloutRecord,
  RunConfig,
  Scorecard,
  ScorecardProgress,
  StepPhase,
  StoredRollout,
  WorkersChoice,
};

/** Side of the matrices the page's self-check multiplies: big enough to use real tiled kernels, fast on SwiftShader. */
export const MATMUL_CHECK_SIZE = 128;

/**
 * Largest |tfjs - float64 reference| accepted as a working matmul. Inputs lie in [-1, 1), so entries of a 128-wide
 * product are sums of 128 terms of size <= 1; float32 rounding over that is ~1e-5 at worst, while a broken kernel
 * (wrong tile, garbage buffer) is off by O(1).
 */
export const MATMUL_TOLERANCE = 1e-4;

/**
 * Where a training run is: 'loading' (building the model, fetching the warm start), 'ready' (built, no step yet
 * asked for), 'running', 'paused', then one of the ends: 'done' (all steps), 'stopped' (by the user), 'failed'.
 */
export type RunPhase = 'loading' | 'ready' | 'running' | 'paused' | 'stopped' | 'done' | 'failed';

export interface RunStatus {
  phase: RunPhase;
  /** Completed training steps. */
  step: number;
  totalSteps: number;
  /** Why the run failed, or a note (e.g. what it resumed from). */
  message: string | null;
  /** Cores the run trains on: 2 with a helper worker (CreateRunOptions.workers), else 1; absent before it is built. */
  cores?: number;
}

/** Where the step in flight is (the page's `step-progress` text, e.g. "rollout 12/48 tokens"). */
export interface StepProgress {
  /** The step in flight (completed steps + 1). */
  step: number;
  phase: StepPhase;
  /** `done` of `total` in this phase: tokens for validation / rollout, micro-batches for scoring, optimizer steps for update. */
  done: number;
  total: number;
}

/** A checkpoint as files (name -> bytes): the same files `checkpointFiles()` writes to checkpoints/step-N/. */
export type CheckpointBytes = Record<string, Uint8Array>;

/** The page's side of a run: the worker calls these through a Comlink proxy (the browser's CallbackSink). */
export interface TrainingListener {
  /** One training step's metrics row, as a metrics.jsonl line would hold it. */
  metrics(row: MetricRow): void;
  /** Sample trajectories of a step (think / answer text per turn), as rollouts.jsonl records. */
  rollouts(step: number, records: StoredRollout[]): void;
  /** Phase changes, and the step count after every step. */
  status(status: RunStatus): void;
  /** Progress inside the step in flight, a few times a second; null once no step is in flight. */
  progress(progress: StepProgress | null): void;
  /**
   * A checkpoint taken at a step boundary: after every step (not only every `trainer.saveFreq` steps as on disk: the
   * page keeps just the latest, in IndexedDB, and a Stop that has to end a busy worker must lose no completed step),
   * and whenever the run pauses, stops or ends. A reloaded tab resumes from it.
   */
  checkpoint(step: number, files: CheckpointBytes): void;
}

export interface CreateRunOptions {
  /** The run's complete config, built on the page by the same presets / parseRunConfig as the CLI. */
  config: RunConfig;
  /**
   * URL the warm-start checkpoint path (`model.warmStart`, relative to public/) is resolved against: the page's
   * `document.baseURI`, so the static build works from any sub-path.
   */
  siteBase: string;
  /** Continue from a stored checkpoint instead of the warm start. */
  resume?: { step: number; files: CheckpointBytes };
  /** Cores for this run, as `ragen train --workers` (default auto: src/starpo/workers.ts helpersFor). */
  workers?: WorkersChoice;
  /** Runs training side by side on this page (2 in classroom mode): 'auto' gives each a helper only if cores allow. */
  runs?: number;
  /**
   * Send a checkpoint to the page after every step and at every pause, stop and end (default true). The lesson's runs
   * are never resumed, so they skip it: writing the weights and optimizer state out every step costs time.
   */
  checkpoints?: boolean;
}

/**
 * Which policy a scorecard scores: 'current' is the live run's policy in this worker (its config sets the suites
 * and the protocol); a stored checkpoint comes as its files (`checkpointFiles()`, as IndexedDB keeps them) with the
 * config of the run it belongs to, and a name for the scorecard.
 */
export type ScorecardSource = 'current' | { files: CheckpointBytes; config: RunConfig; name: string };

/** The size of a scorecard: seeds per suite and rollouts per seed (the rest is the run's validation protocol). */
export interface ScorecardRequest {
  episodes: number;
  k: number;
}

/** Small enough to finish in tens of seconds on wasm for a tiny preset (the CLI defaults to the run's valGroups). */
export const BROWSER_SCORECARD_DEFAULTS: ScorecardRequest = { episodes: 8, k: 1 };

export interface TrainerWorkerApi {
  /** Starts the requested tfjs backend inside the worker and reports which one is active and why others were skipped. */
  init(backend: BackendChoice): Promise<BackendInfo>;
  /** Multiplies two seeded n x n matrices on the active backend and compares with a plain-JS reference. */
  matmulCheck(n: number): Promise<MatmulCheckResult>;
  /** Builds the Trainer for `options.config` (call init first); replaces any previous run in this worker. */
  createRun(options: CreateRunOptions, listener: TrainingListener): Promise<RunStatus>;
  /** Starts or resumes training; returns once the loop runs (progress arrives through the listener). */
  play(): Promise<void>;
  /**
   * Pauses after the step in flight, or within a fraction of a second if that step is still rolling out or scoring
   * (it is dropped and runs again on resume, with the same result); resolves when paused.
   */
  pause(): Promise<void>;
  /** Runs exactly one training step (from ready or paused); resolves when it is done. */
  stepOnce(): Promise<void>;
  /**
   * Ends the run: at once if that step is still rolling out or scoring (it is dropped), else after its update. The
   * latest checkpoint is sent before it resolves. (A page that cannot wait for an update ends the worker instead.)
   */
  stop(): Promise<void>;
  /** The current weights as checkpoint files, with the step they belong to (only while not playing). */
  checkpoint(): Promise<{ step: number; files: CheckpointBytes }>;
  /**
   * Plays one episode of `tag` with `board` (a custom Sokoban `{ level }` or FrozenLake `{ map }`) laid over the run's
   * own env block for that tag, in the run's agent format (the prompt the policy trained on), with the current
   * policy, without training; returns the trajectory as a rollout record. Refused for a tag the run does not train on.
   */
  playEpisode(tag: string, board: Record<string, unknown>): Promise<RolloutRecord>;
  /**
   * The checkpoint scorecard of `source` (see ScorecardSource), computed here with the CLI's runScorecard, default
   * suites and validation protocol (src/eval/fromConfig), sized by `request`. Refused while the run trains.
   * `onProgress` (a Comlink proxy) hears after every batch of episodes.
   */
  scorecard(
    source: ScorecardSource,
    request: ScorecardRequest,
    onProgress?: (p: ScorecardProgress) => void,
  ): Promise<Scorecard>;
}
