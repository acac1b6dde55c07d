// The worker's play / pause / step / stop state machine, driven by a run whose steps we release one at a time.
import { describe, expect, it } from 'vitest';
import { RunController, StepAbandoned, type Steppable } from '../../../workers/run-controller';
import type { RunStatus } from '../../../workers/protocol';

/** A run whose step() waits until the test releases it, so pauses can land in the middle of a step. */
class GatedRun implements Steppable {
  stepsDone = 0;
  failAt: number | null = null;
  private gates: (() => void)[] = [];
  constructor(
    readonly totalSteps: number,
    private readonly gated = false,
  ) {}
  async step(): Promise<void> {
    if (this.gated) await new Promise<void>((resolve) => this.gates.push(resolve));
    if (this.failAt === this.stepsDone + 1) throw new Error('out of memory at step ' + this.failAt);
    this.stepsDone += 1;
  }
  release(): void {
    this.gates.shift()?.();
  }
  get waiting(): number {
    return this.gates.length;
  }
}

const tick = () => new Promise((r) => setTimeout(r, 0));

function controller(run: Steppable) {
  const seen: RunStatus[] = [];
  const c = new RunController(run, (s) => {
    seen.push(s);
  });
  return { c, seen };
}

describe('RunController', () => {
  it('plays to the end and reports every step', async () => {
    const run = new GatedRun(3);
    const { c, seen } = controller(run);
    c.play();
    while (c.status().phase !== 'done') await tick();
    expect(run.stepsDone).toBe(3);
    expect(seen.filter((s) => s.phase === 'running').map((s) => s.step)).toEqual([0, 1, 2, 3]);
    expect(() => c.play()).toThrow(/the run is done/);
  });

  it('pause waits for the step in flight and never cuts it; play resumes', async () => {
    const run = new GatedRun(10, true);
    const { c } = controller(run);
    c.play();
    await tick();
    expect(run.waiting).toBe(1);
    const paused = c.pause();
    run.release();
    await paused;
    expect(c.status()).toMatchObject({ phase: 'paused', step: 1 });
    expect(run.waiting).toBe(0);
    c.play();
    await tick();
    run.release();
    await tick();
    expect(run.stepsDone).toBe(2);
    const p = c.pause();
    run.release();
    await p;
    expect(c.status()).toMatchObject({ phase: 'paused', step: 3 });
  });

  it('single-steps from ready and paused, not while playing', async () => {
    const run = new GatedRun(5);
    const { c } = controller(run);
    await c.stepOnce();
    expect(c.status()).toMatchObject({ phase: 'paused', step: 1 });
    await c.stepOnce();
    expect(run.stepsDone).toBe(2);
    const gatedRun = new GatedRun(5, true);
    const g = controller(gatedRun).c;
    g.play();
    await tick();
    await expect(g.stepOnce()).rejects.toThrow(/pause it first/);
    const stopped = g.stop();
    gatedRun.release();
    await stopped;
    expect(g.status().phase).toBe('stopped');
    await expect(g.stepOnce()).rejects.toThrow(/stopped/);
  });

  it('a failing step ends the run as failed with the error message', async () => {
    const run = new GatedRun(5);
    run.failAt = 2;
    const { c } = controller(run);
    c.play();
    while (c.status().phase === 'running') await tick();
    expect(c.status()).toMatchObject({ phase: 'failed', step: 1, message: 'out of memory at step 2' });
    expect(() => c.play()).toThrow(/failed \(out of memory at step 2\)/);
  });

  it('a step that gives up cleanly on pause or stop is not a failure: the counter stays and the same step runs next', async () => {
    // A long step that checks, between its "kernels", whether the controller wants to halt.
    const started: number[] = []; // the step number each call of step() began
    const run: Steppable & { stepsDone: number } = {
      stepsDone: 0,
      totalSteps: 5,
      async step() {
        started.push(this.stepsDone + 1);
        for (let k = 0; k < 50; k++) {
          await tick();
          if (c.wantsToHalt()) throw new StepAbandoned();
        }
        this.stepsDone++;
      },
    };
    const seen: RunStatus[] = [];
    const c = new RunController(run, (s) => {
      seen.push(s);
    });
    c.play();
    while (run.stepsDone < 1) await tick();
    await tick();
    await c.pause(); // lands inside step 2
    expect(c.status()).toMatchObject({ phase: 'paused', step: 1, message: null });
    expect(started).toEqual([1, 2]);
    c.play();
    while (run.stepsDone < 2) await tick();
    expect(started.slice(0, 3)).toEqual([1, 2, 2]); // step 2 ran again, from its start
    await c.stop(); // lands inside step 3
    expect(c.status()).toMatchObject({ phase: 'stopped', step: 2 });
    expect(seen.some((s) => s.phase === 'failed')).toBe(false);
    expect(seen.filter((s) => s.phase === 'stopped')).toHaveLength(1);
  });
});
