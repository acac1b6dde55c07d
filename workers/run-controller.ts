// The play / pause / single-step / stop state machine of a training run in the worker. It knows nothing about
// tfjs: it drives anything with a `step()` (in the playground, the shared Trainer), one whole step at a time, so a
// pause or stop never cuts a step in half (the metrics, rollouts and checkpoint of a step always belong together).
// The one exception is a step the run itself gives up cleanly: while `wantsToHalt()` is true, a step may throw
// `StepAbandoned` before it has kept anything, and the controller then treats it as never started (the next play
// runs the same step again). That is how Pause and Stop land within a second in the middle of a long rollout.
import type { RunPhase, RunStatus } from './protocol';

/** Thrown by a step that gave up, on request, before keeping anything: not a failure. */
export class StepAbandoned extends Error {
  constructor() {
    super('the step was abandoned before it changed anything');
    this.name = 'StepAbandoned';
  }
}

/** What the controller drives: one training step per call. */
export interface Steppable {
  /** Completed training steps so far (0 before the first). */
  readonly stepsDone: number;
  /** The run ends after this many steps. */
  readonly totalSteps: number;
  /** Runs the next training step to completion. */
  step(): Promise<void>;
}

export class RunController {
  private phase: RunPhase = 'ready';
  private message: string | null = null;
  /** The loop started by play(), while it runs. */
  private loop: Promise<void> | null = null;
  /** The step in flight (play loop or stepOnce), so pause/stop can wait for it. */
  private current: Promise<void> | null = null;
  private wantPause = false;
  private wantStop = false;

  constructor(
    private readonly run: Steppable,
    /** Called on every phase change and after every step. */
    private readonly onStatus: (status: RunStatus) => void | Promise<void>,
  ) {}

  /** True once pause or stop was asked for: a step in flight may give up (StepAbandoned) if it can do so cleanly. */
  wantsToHalt(): boolean {
    return this.wantPause || this.wantStop;
  }

  status(): RunStatus {
    return { phase: this.phase, step: this.run.stepsDone, totalSteps: this.run.totalSteps, message: this.message };
  }

  /** Starts (or resumes) stepping until paused, stopped, finished or failed. Returns once the loop is running. */
  play(): void {
    this.assertUsable('play');
    if (this.loop) return; // already playing
    this.wantPause = false;
    this.loop = this.runLoop().finally(() => {
      this.loop = null;
    });
  }

  /** Asks the loop to pause after the step in flight; resolves when it has. */
  async pause(): Promise<void> {
    if (!this.loop) return;
    this.wantPause = true;
    await this.loop;
  }

  /** Runs exactly one step while not playing (from ready or paused). */
  async stepOnce(): Promise<void> {
    this.assertUsable('step');
    if (this.loop) throw new Error('cannot single-step while the run is playing: pause it first');
    if (this.current) throw new Error('a step is already running');
    await this.oneStep();
    if (this.phase === 'running') await this.setPhase(this.wantStop ? 'stopped' : this.finished() ? 'done' : 'paused');
  }

  /** Ends the run after the step in flight (or sooner, if that step can give up cleanly); it cannot be played again. */
  async stop(): Promise<void> {
    this.wantStop = true;
    if (this.loop) await this.loop;
    else if (this.current) await this.current.catch(() => undefined);
    if (this.phase !== 'failed' && this.phase !== 'done' && this.phase !== 'stopped') await this.setPhase('stopped');
  }

  private finished(): boolean {
    return this.run.stepsDone >= this.run.totalSteps;
  }

  private assertUsable(what: string): void {
    if (this.phase === 'stopped' || this.phase === 'failed' || this.phase === 'done') {
      throw new Error(`cannot ${what}: the run is ${this.phase}${this.message ? ` (${this.message})` : ''}`);
    }
    if (this.finished()) throw new Error(`cannot ${what}: all ${this.run.totalSteps} steps are done`);
  }

  private async runLoop(): Promise<void> {
    await this.setPhase('running');
    while (!this.wantPause && !this.wantStop && !this.finished()) {
      await this.oneStep();
      if (this.phase === 'failed') return;
    }
    if (this.wantStop) await this.setPhase('stopped');
    else if (this.finished()) await this.setPhase('done');
    else await this.setPhase('paused');
    this.wantPause = false;
  }

  private async oneStep(): Promise<void> {
    if (this.phase !== 'running') await this.setPhase('running');
    this.current = this.run.step();
    try {
      await this.current;
      await this.onStatus(this.status());
    } catch (err) {
      if (err instanceof StepAbandoned) return;
      this.message = err instanceof Error ? err.message : String(err);
      await this.setPhase('failed');
    } finally {
      this.current = null;
    }
  }

  private async setPhase(phase: RunPhase): Promise<void> {
    this.phase = phase;
    await this.onStatus(this.status());
  }
}
