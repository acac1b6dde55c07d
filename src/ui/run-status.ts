// The words the playground shows for where training is: the `run-status` text (one word for all arms on screen)
// and the `step-progress` text (the phase and count inside the step in flight). Pure TypeScript, unit-tested.
import type { RunStatus, StepPhase, StepProgress } from '../../workers/protocol';
import { formatDuration, type TimeEstimate } from '../metrics/pace';

// The pace of a run is shared with the command line (`ragen train` prints the time left too).
export { formatDuration, timeEstimate, type TimeEstimate } from '../metrics/pace';

/**
 * The `run-status` text. docs/architecture.md's five (idle / running / stopping / stopped / done) plus the states
 * between: 'pausing' and 'paused' (Pause keeps the run, Stop ends it) and 'failed'.
 */
export type RunStatusText = 'idle' | 'running' | 'pausing' | 'paused' | 'stopping' | 'stopped' | 'done' | 'failed';

/** What the page asked an arm's worker to do and has not heard back about yet. */
export type Halting = 'pause' | 'stop' | null;

export interface ArmState {
  /** The worker's last status; null for a run only being viewed (stored or imported). */
  status: RunStatus | null;
  halting: Halting;
}

/**
 * One word for all arms: a request in flight wins (stopping, pausing), then any arm still working (running), then
 * the arms' common end. No live arm (nothing started, or a stored run being viewed) is 'idle'.
 */
export function runStatusText(arms: readonly ArmState[]): RunStatusText {
  const live = arms.filter((a) => a.status !== null);
  if (live.length === 0) return 'idle';
  if (live.some((a) => a.halting === 'stop')) return 'stopping';
  const phases = live.map((a) => a.status!.phase);
  if (phases.includes('failed')) return 'failed';
  if (live.some((a) => a.halting === 'pause')) return 'pausing';
  if (phases.some((p) => p === 'running' || p === 'loading')) return 'running';
  if (phases.includes('paused')) return 'paused';
  if (phases.every((p) => p === 'ready')) return 'idle';
  if (phases.includes('stopped')) return 'stopped';
  if (phases.every((p) => p === 'done')) return 'done';
  return 'idle';
}

/** What a phase counts, for the progress text. */
const UNIT: Record<StepPhase, string> = {
  validation: 'tokens',
  rollout: 'tokens',
  collapse: 'micro-batches',
  scoring: 'micro-batches',
  update: 'optimizer steps',
};

/** The `step-progress` text, e.g. "rollout 12/48 tokens"; '' when no step is in flight. */
export function progressText(progress: StepProgress | null): string {
  if (!progress) return '';
  return `${progress.phase} ${progress.done}/${progress.total} ${UNIT[progress.phase]}`;
}

/** A longer explanation of the progress text (its tooltip). */
export function progressHelp(progress: StepProgress | null): string {
  if (!progress) return 'No step is running.';
  const what: Record<StepPhase, string> = {
    validation: 'playing the fixed validation envs; tokens generated of the budget (turns x tokens per turn)',
    rollout: 'playing the env groups; tokens generated of the budget (turns x tokens per turn)',
    collapse:
      'collapse diagnostics: scoring sampled reasoning under every prompt of the sample, micro-batch by micro-batch (once per sample strategy)',
    scoring: 'computing old log-probs (and reference log-probs, critic values), micro-batch by micro-batch',
    update: 'PPO optimizer steps (critic and actor) over the kept trajectories',
  };
  return `Step ${progress.step}: ${what[progress.phase]}.`;
}

/** The transport bar's time line, e.g. "4.2 steps/min · about 3 min left". */
export function timeText(estimate: TimeEstimate): string {
  const pace =
    estimate.stepsPerMinute >= 10 ? Math.round(estimate.stepsPerMinute) : Math.round(estimate.stepsPerMinute * 10) / 10;
  return `${pace} steps/min · ${estimate.secondsLeft > 0 ? `about ${formatDuration(estimate.secondsLeft)} left` : 'last step'}`;
}
