// RAGEN's logged metrics, as a Weights & Biases history export, read into this project's metrics rows, so that a
// run trained by RAGEN on a cluster shows in the playground and the experiments' plots beside local runs.
// `ragen import-metrics` and the playground's run import both use it. Browser-safe (no node:fs).
//
// Accepted exports (RAGEN logs through veRL with the training step as W&B's step):
//   * CSV: `run.history().to_csv()` (a `_step` column), or a chart's "Export CSV" (`Step`, columns named
//     "<run> - <key>" plus "__MIN"/"__MAX" smoothing bands, which are dropped);
//   * JSON: a list of rows (`run.scan_history()` / `history.to_json(orient='records')`), `{columns, data}` (a W&B
//     table / orient='split'), `{key: {index: value}}` (pandas' default orient), or JSON lines (wandb-history.jsonl).
// Metric keys are RAGEN's, which this project logs too (src/metrics/keys.ts), with two exceptions renamed below.
// Nothing is dropped silently: every column not imported is listed with the reason.
import Papa from 'papaparse';
import { parseJsonl, type MetricRow } from '../metrics/jsonl';

/**
 * RAGEN keys whose meaning is another key here. RAGEN's own response length (assistant tokens per trajectory,
 * spec §6) is logged as `train/response_length`, which is our `response_length/mean`; veRL's `response_length/*`
 * counts RAGEN's whole re-tokenized dialogue as the "response", so it moves aside rather than passing for ours.
 */
export const RAGEN_METRIC_RENAMES: Readonly<Record<string, string>> = {
  'train/response_length': 'response_length/mean',
  'response_length/mean': 'verl/response_length/mean',
  'response_length/max': 'verl/response_length/max',
  'response_length/min': 'verl/response_length/min',
  'response_length/clip_ratio': 'verl/response_length/clip_ratio',
};

const STEP_COLUMNS = ['_step', 'step', 'Step', 'global_step'];

export interface ImportedHistory {
  rows: MetricRow[];
  /** The column the steps were read from. */
  stepColumn: string;
  /** RAGEN key -> our key, for the renamed columns present. */
  renamed: Record<string, string>;
  /** Column -> why it was not imported. */
  dropped: Record<string, string>;
  /**
   * What was imported but changed, column (or step) -> why: a step logged twice with different values (the later
   * row is kept, as W&B shows it), infinite values (metrics.jsonl stores every non-finite number as null, "no
   * value"), a column with no finite value at all (kept, all null).
   */
  notes: Record<string, string>;
}

/** History rows are objects of numbers: nesting deeper than this is not a history export (and would overflow). */
const MAX_JSON_DEPTH = 16;

type Cell = unknown;

/** Reads a W&B history export. Errors name the file and the problem (no step column, a bad step, unreadable JSON). */
export function parseWandbHistory(fileName: string, text: string): ImportedHistory {
  const records = /\.csv$/i.test(fileName) ? csvRecords(fileName, text) : jsonRecords(fileName, text);
  if (records.length === 0) throw new Error(`${fileName}: no history rows`);
  const columns = [...new Set(records.flatMap((r) => Object.keys(r)))];
  const stepColumn = STEP_COLUMNS.find((c) => columns.includes(c));
  if (!stepColumn)
    throw new Error(
      `${fileName}: no step column (expected one of ${STEP_COLUMNS.join(', ')}; found ${columns.slice(0, 8).join(', ')}${columns.length > 8 ? ', …' : ''})`,
    );

  const dropped: Record<string, string> = {};
  // A chart's CSV export: "<run> - <key>" columns with smoothing bands.
  let prefix = '';
  const metricColumns = columns.filter((c) => c !== stepColumn);
  for (const c of metricColumns)
    if (/__(MIN|MAX)$/.test(c)) dropped[c] = 'W&B chart smoothing band (min/max of the smoothing window)';
  const plain = metricColumns.filter((c) => !dropped[c]);
  const m = plain.length ? /^(.+? - )/.exec(plain[0]) : null;
  if (m && plain.every((c) => c.startsWith(m[1]))) prefix = m[1];
  for (const c of plain) if (c.startsWith('_')) dropped[c] = 'W&B bookkeeping';

  const keyOf = (column: string) => {
    const key = column.slice(prefix.length);
    return RAGEN_METRIC_RENAMES[key] ?? key;
  };
  const candidates = plain.filter((c) => !dropped[c]);
  const numbers = new Map<string, (number | undefined)[]>();
  for (const c of candidates) {
    const values: (number | undefined)[] = [];
    let bad: Cell;
    for (const r of records) {
      const v = toNumber(r[c]);
      if (v === 'bad') {
        bad = r[c];
        break;
      }
      values.push(v);
    }
    if (bad !== undefined) dropped[c] = `not numeric (e.g. ${clipped(bad)})`;
    else numbers.set(c, values);
  }
  const renamed: Record<string, string> = {};
  for (const c of numbers.keys()) if (keyOf(c) !== c.slice(prefix.length)) renamed[c.slice(prefix.length)] = keyOf(c);

  const notes: Record<string, string> = {};
  for (const [c, values] of numbers) {
    const infinite = values.filter((v) => v === Infinity || v === -Infinity).length;
    const present = values.filter((v) => v !== undefined);
    if (present.length > 0 && present.every((v) => !Number.isFinite(v)))
      notes[c] = `no finite value (${present.length} NaN or infinite): imported as null in every row`;
    else if (infinite > 0) notes[c] = `${infinite} infinite value(s) imported as null (metrics.jsonl has no infinity)`;
  }

  const byStep = new Map<number, MetricRow>();
  const conflicts = new Map<number, Set<string>>();
  records.forEach((r, i) => {
    const step = toNumber(r[stepColumn]);
    if (step === undefined) return; // a row W&B wrote without a step (e.g. summary-only): nothing to plot
    if (step === 'bad' || !Number.isSafeInteger(step) || step < 0) {
      throw new Error(
        `${fileName}: row ${i + 1} has step ${clipped(r[stepColumn])}, not a non-negative integer (at most ${Number.MAX_SAFE_INTEGER})`,
      );
    }
    const row = byStep.get(step) ?? { step };
    for (const [c, values] of numbers) {
      const v = values[i];
      if (v === undefined) continue;
      const key = keyOf(c);
      const before = row[key];
      if (typeof before === 'number' && !Object.is(before, v))
        conflicts.set(step, (conflicts.get(step) ?? new Set()).add(key));
      row[key] = v;
    }
    byStep.set(step, row); // W&B may split one step over several rows: merge them
  });
  if (conflicts.size > 0) {
    const steps = [...conflicts.keys()].sort((a, b) => a - b);
    const shown = steps.length > 5 ? `${steps.slice(0, 5).join(', ')}, …` : steps.join(', ');
    notes._step = `${steps.length} step(s) logged twice with different values (${shown}; e.g. ${[...conflicts.get(steps[0])!].slice(0, 3).join(', ')}): the later row was kept`;
  }
  const rows = [...byStep.values()].sort((a, b) => a.step - b.step);
  if (rows.length === 0) throw new Error(`${fileName}: no row has a step`);
  return { rows, stepColumn, renamed, dropped, notes };
}

/** A cell as shown in an error: its JSON, at most 40 characters. */
function clipped(v: Cell): string {
  const text = typeof v === 'string' ? JSON.stringify(v) : (JSON.stringify(v) ?? String(v));
  return text.length > 40 ? `${text.slice(0, 40)}…` : text;
}

/** The deepest nesting of brackets in JSON text (strings skipped), stopping once it passes `limit`. */
function jsonDepth(text: string, limit: number): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (inString) {
      if (ch === '\\') i++;
      else if (ch === '"') inString = false;
    } else if (ch === '"') inString = true;
    else if (ch === '[' || ch === '{') {
      deepest = Math.max(deepest, ++depth);
      if (deepest > limit) return deepest;
    } else if (ch === ']' || ch === '}') depth--;
  }
  return deepest;
}

/** A cell as a number; undefined = empty; 'bad' = not a number. */
function toNumber(v: Cell): number | undefined | 'bad' {
  if (v === null || v === undefined || v === '') return undefined;
  if (typeof v === 'number') return v;
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v !== 'string') return 'bad';
  const s = v.trim();
  if (s === '' || /^(null|none)$/i.test(s)) return undefined;
  if (/^nan$/i.test(s)) return NaN;
  if (/^[+-]?(inf|infinity)$/i.test(s)) return s.startsWith('-') ? -Infinity : Infinity;
  if (/^(true|false)$/i.test(s)) return /^true$/i.test(s) ? 1 : 0;
  const n = Number(s);
  return Number.isNaN(n) ? 'bad' : n;
}

function csvRecords(fileName: string, text: string): Record<string, Cell>[] {
  const parsed = Papa.parse<Record<string, string>>(text.replace(/^\uFEFF/, ''), {
    header: true,
    skipEmptyLines: true,
  });
  const fatal = parsed.errors.find((e) => e.type !== 'FieldMismatch' || e.code === 'TooManyFields');
  if (fatal) throw new Error(`${fileName}: row ${(fatal.row ?? 0) + 2}: ${fatal.message}`);
  // pandas writes the index as an unnamed first column.
  return parsed.data.map((r) => {
    const { '': _index, ...rest } = r;
    return rest;
  });
}

// Python's json writes NaN / Infinity as bare words, which JSON.parse refuses: they become strings, which toNumber
// reads back as NaN / ±Infinity (null would make a NaN column vanish as if it were empty).
const BARE_NON_FINITE = /([:[,]\s*)(-?Infinity|NaN)(?=\s*[,\]}])/g;

function jsonRecords(fileName: string, text: string): Record<string, Cell>[] {
  const trimmed = text.trim();
  if (jsonDepth(trimmed, MAX_JSON_DEPTH) > MAX_JSON_DEPTH) {
    throw new Error(
      `${fileName}: JSON nested deeper than ${MAX_JSON_DEPTH} levels: a history export holds rows of numbers`,
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(trimmed);
  } catch {
    try {
      value = JSON.parse(trimmed.replace(BARE_NON_FINITE, '$1"$2"'));
    } catch {
      value = undefined;
    }
  }
  if (value === undefined) {
    // JSON lines (wandb-history.jsonl): one object per line.
    try {
      return parseJsonl(trimmed.replace(BARE_NON_FINITE, '$1"$2"'), fileName).records;
    } catch (err) {
      throw new Error(`${fileName}: neither JSON nor JSON lines (${(err as Error).message})`, { cause: err });
    }
  }
  if (Array.isArray(value)) {
    if (!value.every((r) => r !== null && typeof r === 'object' && !Array.isArray(r)))
      throw new Error(`${fileName}: a JSON list of history rows must hold objects`);
    return value as Record<string, Cell>[];
  }
  if (value !== null && typeof value === 'object') {
    const o = value as Record<string, unknown>;
    if (Array.isArray(o.columns) && Array.isArray(o.data)) {
      const cols = o.columns.map(String);
      return (o.data as unknown[][]).map((row) => Object.fromEntries(cols.map((c, i) => [c, row[i]])));
    }
    const cols = Object.values(o);
    if (cols.length && cols.every((c) => c !== null && typeof c === 'object' && !Array.isArray(c))) {
      // pandas' orient='columns': {key: {rowIndex: value}}.
      const index = [...new Set(cols.flatMap((c) => Object.keys(c as object)))];
      return index.map((i) =>
        Object.fromEntries(Object.entries(o).map(([k, c]) => [k, (c as Record<string, unknown>)[i]])),
      );
    }
    return [o]; // a single row
  }
  throw new Error(`${fileName}: expected history rows, got ${typeof value}`);
}
