// How fast a run goes and how long it has left, from its own logged step times: the playground's transport bar and
// `ragen train`'s step lines both say it. Pure TypeScript (no tfjs, no Node).
import type { MetricRow } from './jsonl';

/** How fast a run goes, from its own logged step times. */
export interface TimeEstimate {
  stepsPerMinute: number;
  /** Seconds until the run's last step at that pace. */
  secondsLeft: number;
}

/** Steps averaged for the pace: recent enough to follow a change of speed, enough to smooth a validation step. */
const PACE_STEPS = 5;

/**
 * The pace of a run (the mean `timing_s/step` of its last few steps) and the time its remaining steps take at that
 * pace, or null before a step was timed.
 */
export function timeEstimate(rows: readonly MetricRow[], done: number, total: number): TimeEstimate | null {
  const times = rows
    .filter((r) => r.step >= 1 && typeof r['timing_s/step'] === 'number' && (r['timing_s/step'] as number) > 0)
    .slice(-PACE_STEPS)
    .map((r) => r['timing_s/step'] as number);
  if (times.length === 0) return null;
  const perStep = times.reduce((a, b) => a + b, 0) / times.length;
  return { stepsPerMinute: 60 / perStep, secondsLeft: Math.max(0, total - done) * perStep };
}

/** A duration as people say it: "40 s", "3 min", "1 h 5 min". */
export function formatDuration(seconds: number): string {
  if (seconds < 60) return `${Math.max(1, Math.round(seconds))} s`;
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return `${minutes} min`;
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}
