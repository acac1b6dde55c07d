// The Node metric sink: `metrics.jsonl` (one line per training step) and `rollouts.jsonl` (one line per sample
// trajectory) in a run directory. Node-only (node:fs): the browser bundles the rest of src/metrics, not this.
//
// Crash safety: each record is one synchronous write of "line\n" followed (by default) by fsync, so after a
// kill the file holds whole lines plus at most one torn last line. Opening a sink on an existing file first
// repairs such a tail (drops a torn half line, or adds the newline a complete last line lost), so the next append
// starts on a fresh line. `truncateAfter(step)` rewrites both files keeping steps <= step (via a temp file and
// rename, so a crash during truncation leaves either the old or the new file), which is what --resume needs.

import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  encodeJsonLine,
  metricRow,
  parseMetricsJsonl,
  parseRolloutsJsonl,
  truncateJsonlText,
  type MetricRow,
  type MetricValue,
  type StoredRollout,
} from './jsonl';
import { StepGuard, rolloutRecords, type MetricSink } from './sink';

export const METRICS_FILE = 'metrics.jsonl';
export const ROLLOUTS_FILE = 'rollouts.jsonl';

export interface JsonlSinkOptions {
  /** fsync after every write (default true): a step's line survives a power loss once write() returns. */
  fsync?: boolean;
}

/** Make sure an existing file ends with a newline after a whole line; returns what was done. */
export function repairTornTail(file: string): 'none' | 'dropped-torn-line' | 'added-newline' {
  if (!fs.existsSync(file)) return 'none';
  const buf = fs.readFileSync(file);
  if (buf.length === 0 || buf[buf.length - 1] === 0x0a) return 'none';
  const lastNewline = buf.lastIndexOf(0x0a);
  const tail = buf
    .subarray(lastNewline + 1)
    .toString('utf8')
    .trim();
  let whole: boolean;
  try {
    const v: unknown = JSON.parse(tail);
    whole = v !== null && typeof v === 'object' && !Array.isArray(v);
  } catch {
    whole = false;
  }
  if (whole) {
    fs.appendFileSync(file, '\n');
    return 'added-newline';
  }
  fs.truncateSync(file, lastNewline + 1);
  return 'dropped-torn-line';
}

/** Rows of a metrics.jsonl file; a torn last line (killed writer) is skipped; null values read as NaN. */
export function readMetricsJsonl(file: string): MetricRow[] {
  return parseMetricsJsonl(fs.readFileSync(file, 'utf8'), file);
}

/** Records of a rollouts.jsonl file; a torn last line is skipped. */
export function readRolloutsJsonl(file: string): StoredRollout[] {
  return parseRolloutsJsonl(fs.readFileSync(file, 'utf8'), file);
}

/** Rewrite a JSONL file keeping only records with step <= lastStep. A missing file is left missing. */
export function truncateJsonlFileAfter(file: string, lastStep: number): { kept: number; dropped: number } {
  if (!fs.existsSync(file)) return { kept: 0, dropped: 0 };
  const { text, kept, dropped } = truncateJsonlText(fs.readFileSync(file, 'utf8'), lastStep, file);
  const tmp = `${file}.tmp-${process.pid}`;
  fs.writeFileSync(tmp, text);
  const fd = fs.openSync(tmp, 'r+');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(tmp, file);
  return { kept, dropped };
}

export class JsonlSink implements MetricSink {
  readonly metricsPath: string;
  readonly rolloutsPath: string;
  private readonly fsync: boolean;
  private metricsFd: number | null = null;
  private rolloutsFd: number | null = null;
  private guard = new StepGuard();
  private closed = false;

  /** Open (creating the directory and files if needed) `<runDir>/metrics.jsonl` and `<runDir>/rollouts.jsonl`
   *  for appending. Existing lines are kept: a resumed run calls truncateAfter(checkpointStep) next. */
  constructor(
    readonly runDir: string,
    opts: JsonlSinkOptions = {},
  ) {
    this.fsync = opts.fsync ?? true;
    this.metricsPath = path.join(runDir, METRICS_FILE);
    this.rolloutsPath = path.join(runDir, ROLLOUTS_FILE);
    fs.mkdirSync(runDir, { recursive: true });
    this.open();
  }

  private open(): void {
    repairTornTail(this.metricsPath);
    repairTornTail(this.rolloutsPath);
    this.metricsFd = fs.openSync(this.metricsPath, 'a');
    this.rolloutsFd = fs.openSync(this.rolloutsPath, 'a');
    const rows = readMetricsJsonl(this.metricsPath);
    this.guard = new StepGuard(rows.length > 0 ? Math.max(...rows.map((r) => r.step)) : null);
  }

  private closeFds(): void {
    if (this.metricsFd !== null) fs.closeSync(this.metricsFd);
    if (this.rolloutsFd !== null) fs.closeSync(this.rolloutsFd);
    this.metricsFd = this.rolloutsFd = null;
  }

  private append(fd: number | null, text: string): void {
    if (fd === null) throw new Error(`JsonlSink for ${this.runDir} is closed`);
    fs.writeSync(fd, text);
    if (this.fsync) fs.fsyncSync(fd);
  }

  /** The last step written (or kept after truncation), or null for an empty file. */
  get lastStep(): number | null {
    return this.guard.lastStep;
  }

  write(step: number, metrics: Readonly<Record<string, MetricValue>>): void {
    const row = metricRow(step, metrics);
    if (this.metricsFd === null) throw new Error(`JsonlSink for ${this.runDir} is closed`);
    this.guard.advance(step);
    this.append(this.metricsFd, encodeJsonLine(row) + '\n');
  }

  writeRollouts(step: number, rollouts: readonly object[]): void {
    const records = rolloutRecords(step, rollouts);
    if (records.length === 0) return;
    // One write for the whole batch: fewer syscalls, and a crash tears at most the last line.
    this.append(this.rolloutsFd, records.map((r) => encodeJsonLine(r) + '\n').join(''));
  }

  /** Drop every metrics and rollout line with step > `step` (resume from the checkpoint of `step`). */
  truncateAfter(step: number): void {
    if (this.closed) throw new Error(`JsonlSink for ${this.runDir} is closed`);
    this.closeFds();
    truncateJsonlFileAfter(this.metricsPath, step);
    truncateJsonlFileAfter(this.rolloutsPath, step);
    this.open();
  }

  close(): void {
    this.closed = true;
    this.closeFds();
  }
}
