// Where a training step's metrics go. The Trainer only knows `MetricSink`; Node runs use `JsonlSink`
// (src/metrics/jsonlSink.ts, the only file here that touches node:fs), tests and the browser use `MemorySink`
// or `CallbackSink` (the worker forwards rows to the page through a Comlink callback).
//
// Every sink enforces strictly increasing steps: one row per training step is the contract of metrics.jsonl,
// and a resumed run that forgot to truncate would otherwise silently duplicate steps.

import { checkStep, metricRow, type MetricRow, type MetricValue, type StoredRollout } from './jsonl';

export type { MetricRow, MetricValue, StoredRollout } from './jsonl';

export interface MetricSink {
  /** Record one training step's metrics (a number per key, NaN = no value this step; a text for TEXT_METRIC_KEYS). */
  write(step: number, metrics: Readonly<Record<string, MetricValue>>): void | Promise<void>;
  /** Record sample trajectories of a step (think / answer text per turn), one record per trajectory. */
  writeRollouts?(step: number, rollouts: readonly object[]): void | Promise<void>;
  /** Forget everything after `step` (used by --resume from the checkpoint of `step`). */
  truncateAfter?(step: number): void | Promise<void>;
  close(): void | Promise<void>;
}

/** Tracks the last written step and rejects a step that does not move forward. */
export class StepGuard {
  constructor(public lastStep: number | null = null) {}
  advance(step: number): void {
    checkStep(step);
    if (this.lastStep !== null && step <= this.lastStep) {
      throw new Error(
        `metric step ${step} is not after the last written step ${this.lastStep} (truncateAfter() before resuming?)`,
      );
    }
    this.lastStep = step;
  }
}

/**
 * The records of one step, each carrying that step. Sinks store what they are given without looking inside; the
 * writers (Trainer, playground worker) give RolloutRecords built by toRolloutRecord (./rolloutRecord.ts).
 */
export function rolloutRecords(step: number, rollouts: readonly object[]): StoredRollout[] {
  checkStep(step);
  return rollouts.map((r, i) => {
    if (r === null || typeof r !== 'object' || Array.isArray(r))
      throw new Error(`rollout #${i} at step ${step} is not an object`);
    const own = (r as Record<string, unknown>).step;
    if (own !== undefined && own !== step)
      throw new Error(`rollout #${i} says step ${String(own)} but was written at step ${step}`);
    return { ...(r as Record<string, unknown>), step };
  });
}

/** Keeps everything in memory: for tests, and for the browser's charts. */
export class MemorySink implements MetricSink {
  readonly rows: MetricRow[] = [];
  readonly rollouts: StoredRollout[] = [];
  closed = false;
  private guard = new StepGuard();

  write(step: number, metrics: Readonly<Record<string, MetricValue>>): void {
    this.ensureOpen();
    const row = metricRow(step, metrics);
    this.guard.advance(step);
    this.rows.push(row);
  }

  writeRollouts(step: number, rollouts: readonly object[]): void {
    this.ensureOpen();
    this.rollouts.push(...rolloutRecords(step, rollouts));
  }

  truncateAfter(step: number): void {
    checkStep(step);
    const keep = <T extends { step: number }>(list: T[]) =>
      list.splice(0, list.length, ...list.filter((r) => r.step <= step));
    keep(this.rows);
    keep(this.rollouts);
    this.guard.lastStep = this.rows.length > 0 ? this.rows[this.rows.length - 1].step : null;
  }

  close(): void {
    this.closed = true;
  }

  private ensureOpen(): void {
    if (this.closed) throw new Error('MemorySink is closed');
  }
}

/** Hands each row (and rollout batch) to callbacks, e.g. a Comlink proxy to the page. */
export class CallbackSink implements MetricSink {
  private guard = new StepGuard();
  constructor(
    private readonly onMetrics: (row: MetricRow) => void | Promise<void>,
    private readonly onRollouts?: (step: number, rollouts: StoredRollout[]) => void | Promise<void>,
  ) {}

  write(step: number, metrics: Readonly<Record<string, MetricValue>>): void | Promise<void> {
    const row = metricRow(step, metrics);
    this.guard.advance(step);
    return this.onMetrics(row);
  }

  writeRollouts(step: number, rollouts: readonly object[]): void | Promise<void> {
    const records = rolloutRecords(step, rollouts);
    return this.onRollouts?.(step, records);
  }

  truncateAfter(step: number): void {
    checkStep(step);
    if (this.guard.lastStep !== null && this.guard.lastStep > step) this.guard.lastStep = step;
  }

  close(): void {}
}

/** Writes to several sinks, in order (e.g. the JSONL file and a progress display). */
export class TeeSink implements MetricSink {
  private readonly sinks: readonly MetricSink[];
  constructor(...sinks: MetricSink[]) {
    this.sinks = sinks;
  }

  async write(step: number, metrics: Readonly<Record<string, MetricValue>>): Promise<void> {
    for (const s of this.sinks) await s.write(step, metrics);
  }

  async writeRollouts(step: number, rollouts: readonly object[]): Promise<void> {
    for (const s of this.sinks) await s.writeRollouts?.(step, rollouts);
  }

  async truncateAfter(step: number): Promise<void> {
    for (const s of this.sinks) await s.truncateAfter?.(step);
  }

  async close(): Promise<void> {
    for (const s of this.sinks) await s.close();
  }
}
