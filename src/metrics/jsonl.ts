// The metrics.jsonl / rollouts.jsonl line format, browser-safe (no node:fs): the Node sink writes it, the CLI
// summary and the playground read it.
//
// One JSON object per line, `step` first. Metric values are numbers, except the few text metrics of
// TEXT_METRIC_KEYS (`echo_trap/signal`). JSON has no NaN or Infinity, so a non-finite number is written as
// null, and a metrics row read back turns null into NaN ("no value this step"). Infinity therefore reads back
// as NaN: acceptable, since an infinite metric is as unusable as a missing one.
//
// A process killed mid-write can leave a torn last line. The parser drops an unparseable LAST line without its
// trailing newline; an unparseable line anywhere else is corruption and raises an Error naming the line.

/**
 * Metric keys whose value is a short text, not a number: `echo_trap/signal` names what fired the echo-trap warning.
 * Every other metric is a number; a text under another key (or a number under one of these) is rejected on write and
 * on read, so a stray string never reaches a chart.
 */
export const TEXT_METRIC_KEYS: ReadonlySet<string> = new Set(['echo_trap/signal']);

/** A metric's value: a number (NaN = no value this step), or a text for the keys of TEXT_METRIC_KEYS. */
export type MetricValue = number | string;

/** One step's metrics as stored: `step` plus metric keys; missing / non-finite values are NaN in memory. */
export type MetricRow = { step: number } & Record<string, MetricValue>;

/** A metric of a row as a number: NaN when the row lacks it or holds a text there. */
export function metricNumber(row: Readonly<Record<string, unknown>>, key: string): number {
  const v = row[key];
  return typeof v === 'number' ? v : NaN;
}

/** A text metric of a row (e.g. `echo_trap/signal`), or null when the row has none. */
export function metricText(row: Readonly<Record<string, unknown>>, key: string): string | null {
  const v = row[key];
  return typeof v === 'string' ? v : null;
}

/** Why `value` cannot be stored under `key`, or null when it can. */
function badValue(key: string, value: unknown): string | null {
  if (TEXT_METRIC_KEYS.has(key)) return typeof value === 'string' ? null : 'not a text';
  return typeof value === 'number' ? null : 'not a number';
}

/**
 * One line of rollouts.jsonl as stored and read back: a step plus fields that are not checked here. Our writers
 * store RolloutRecords (./rolloutRecord.ts); a file from elsewhere may hold anything, and the rollout viewer
 * (src/ui/trajectories.ts) names a field it cannot draw.
 */
export type StoredRollout = { step: number } & Record<string, unknown>;

function nonFiniteToNull(_key: string, value: unknown): unknown {
  return typeof value === 'number' && !Number.isFinite(value) ? null : value;
}

/** Check a step number: a non-negative integer. */
export function checkStep(step: number): number {
  if (!Number.isInteger(step) || step < 0)
    throw new Error(`metric step must be a non-negative integer, got ${String(step)}`);
  return step;
}

/** Build the stored row of one step; every metric must be a number (NaN allowed), or a text for TEXT_METRIC_KEYS. */
export function metricRow(step: number, metrics: Readonly<Record<string, MetricValue>>): MetricRow {
  checkStep(step);
  const row: MetricRow = { step };
  for (const [key, value] of Object.entries(metrics)) {
    if (key === 'step') {
      if (value !== step) throw new Error(`metrics.step (${String(value)}) disagrees with the step argument (${step})`);
      continue;
    }
    const bad = badValue(key, value);
    if (bad) throw new Error(`metric "${key}" at step ${step} is a ${typeof value}, ${bad}`);
    row[key] = value;
  }
  return row;
}

/** One line (without the newline) for metrics.jsonl or rollouts.jsonl; non-finite numbers become null. */
export function encodeJsonLine(record: { step: number } & Record<string, unknown>): string {
  const { step, ...rest } = record;
  return JSON.stringify({ step, ...rest }, nonFiniteToNull);
}

export interface ParsedJsonl {
  /** The parsed objects, in file order. */
  records: Record<string, unknown>[];
  /** The source text of each record's line (trimmed), parallel to `records`. */
  lines: string[];
  /** True when a torn last line was dropped. */
  tornTail: boolean;
}

/** Parse JSON-lines text, tolerating a torn last line. `source` names the file in error messages. */
export function parseJsonl(text: string, source = 'jsonl'): ParsedJsonl {
  const records: Record<string, unknown>[] = [];
  const lines: string[] = [];
  let tornTail = false;
  let start = 0;
  let lineNo = 0;
  while (start < text.length) {
    const newline = text.indexOf('\n', start);
    const end = newline === -1 ? text.length : newline;
    const line = text.slice(start, end).trim();
    lineNo += 1;
    if (line !== '') {
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch {
        if (newline === -1) {
          tornTail = true; // a killed writer's half line: drop it
          break;
        }
        throw new Error(
          `${source}: line ${lineNo} is not valid JSON (only an unterminated last line counts as a torn write)`,
        );
      }
      if (value === null || typeof value !== 'object' || Array.isArray(value)) {
        throw new Error(`${source}: line ${lineNo} is not a JSON object`);
      }
      records.push(value as Record<string, unknown>);
      lines.push(line);
    }
    if (newline === -1) break; // a complete object that only lost its newline is kept
    start = newline + 1;
  }
  return { records, lines, tornTail };
}

function recordStep(record: Record<string, unknown>, index: number, source: string): number {
  const step = record.step;
  if (typeof step !== 'number' || !Number.isInteger(step) || step < 0) {
    throw new Error(`${source}: record ${index + 1} has no valid "step" (got ${JSON.stringify(step)})`);
  }
  return step;
}

/**
 * Metrics rows from metrics.jsonl text: null -> NaN; a value of the wrong kind (text outside TEXT_METRIC_KEYS, a
 * number inside) is an Error naming key and step.
 */
export function parseMetricsJsonl(text: string, source = 'metrics.jsonl'): MetricRow[] {
  return parseJsonl(text, source).records.map((record, i) => {
    const row: MetricRow = { step: recordStep(record, i, source) };
    for (const [key, value] of Object.entries(record)) {
      if (key === 'step') continue;
      if (value === null && !TEXT_METRIC_KEYS.has(key)) row[key] = NaN;
      else if (badValue(key, value) === null) row[key] = value as MetricValue;
      else {
        const expected = TEXT_METRIC_KEYS.has(key) ? 'a text' : 'a number or null';
        throw new Error(`${source}: step ${row.step}: metric "${key}" is ${JSON.stringify(value)}, not ${expected}`);
      }
    }
    return row;
  });
}

/** Rollout records from rollouts.jsonl text (each must carry a step). */
export function parseRolloutsJsonl(text: string, source = 'rollouts.jsonl'): StoredRollout[] {
  return parseJsonl(text, source).records.map((record, i) => {
    recordStep(record, i, source);
    return record as StoredRollout;
  });
}

/**
 * JSON-lines text keeping only the records with step <= `lastStep` (a torn last line is dropped too): what
 * `--resume` from the checkpoint of `lastStep` needs so that no step is duplicated or lost.
 */
export function truncateJsonlText(
  text: string,
  lastStep: number,
  source = 'jsonl',
): { text: string; kept: number; dropped: number } {
  checkStep(lastStep);
  const { records, lines } = parseJsonl(text, source);
  // Keep the original line text, so a truncation never rewrites the numbers of the steps it keeps.
  const kept = lines.filter((_, i) => recordStep(records[i], i, source) <= lastStep);
  return { text: kept.map((line) => line + '\n').join(''), kept: kept.length, dropped: records.length - kept.length };
}
