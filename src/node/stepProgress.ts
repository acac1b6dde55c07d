// What `ragen train` says while a step is running. A tiny preset's step takes seconds and needs nothing; a
// sokoban-qwen step on a GPU server takes minutes (rollouts of 128 dialogues, then a long update), and a run that is
// silent that long looks hung. The Trainer reports progress inside a step (TrainerOptions.onProgress); this turns
// it into the progress bar's `phase` field on a terminal, and into an occasional log line elsewhere (a server's log
// file): nothing during a step's first `everySeconds`, then at most one line per `everySeconds`.
import type { StepPhase } from '../starpo/trainer';

/** "rollout 45 %", "update 3/32": where a step is. */
export function describePhase(phase: StepPhase, done: number, total: number): string {
  if (phase === 'rollout' || phase === 'validation') {
    // Counted in tokens of the longest possible dialogue: a share reads better than a token count.
    return `${phase} ${total > 0 ? Math.min(100, Math.floor((100 * done) / total)) : 0} %`;
  }
  const what =
    phase === 'update'
      ? 'update, optimizer step'
      : phase === 'scoring'
        ? 'scoring, micro-batch'
        : 'collapse diagnostics';
  return `${what} ${done}/${total}`;
}

export interface StepProgressOptions {
  /** A line for the log, e.g. console.log (used when there is no bar). */
  log: (line: string) => void;
  /** Silence at the start of a step, and the least time between two lines (default: the environment's
   *  RAGEN_PROGRESS_SECONDS, else 15 s). */
  everySeconds?: number;
  /** The clock, in milliseconds (tests pass their own). */
  now?: () => number;
}

export class StepProgress {
  /** The latest description ('' at the start of a step). */
  phase = '';
  private step = 0;
  private stepStart = 0;
  private lastLine = 0;
  private readonly everyMs: number;
  private readonly now: () => number;
  private bar: ((phase: string) => void) | null = null;

  constructor(private readonly opts: StepProgressOptions) {
    this.everyMs = 1000 * (opts.everySeconds ?? progressSecondsFromEnv() ?? 15);
    this.now = opts.now ?? Date.now;
  }

  /** Shows each description in a progress bar instead of logging (a terminal): `show` is called at every report. */
  useBar(show: (phase: string) => void): void {
    this.bar = show;
  }

  /** Called before each step: starts its clock. */
  startStep(step: number): void {
    this.step = step;
    this.stepStart = this.lastLine = this.now();
    this.phase = '';
    this.bar?.('');
  }

  /** The Trainer's onProgress. */
  report = (phase: StepPhase, done: number, total: number): void => {
    this.phase = describePhase(phase, done, total);
    if (this.bar) {
      this.bar(this.phase);
      return;
    }
    const t = this.now();
    if (t - this.lastLine < this.everyMs) return;
    this.lastLine = t;
    this.opts.log(`  step ${this.step}: ${this.phase} (${((t - this.stepStart) / 1000).toFixed(0)} s into the step)`);
  };
}

/** The longest RAGEN_PROGRESS_SECONDS accepted: a day. */
export const MAX_PROGRESS_SECONDS = 86_400;

/** RAGEN_PROGRESS_SECONDS: seconds from 0 to a day, or undefined where it is unset or empty. */
export function progressSecondsFromEnv(
  text: string | undefined = process.env.RAGEN_PROGRESS_SECONDS,
): number | undefined {
  if (text === undefined || text.trim() === '') return undefined;
  const seconds = Number(text);
  if (!Number.isFinite(seconds) || seconds < 0 || seconds > MAX_PROGRESS_SECONDS) {
    const shown = text.length > 40 ? `${text.slice(0, 40)}…` : text;
    throw new Error(
      `RAGEN_PROGRESS_SECONDS=${shown}: expected a number of seconds from 0 to ${MAX_PROGRESS_SECONDS} (or unset)`,
    );
  }
  return seconds;
}
