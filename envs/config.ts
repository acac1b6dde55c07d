// Config checking shared by every env: an unknown key or a wrongly typed value is an Error that names the tag,
// the key and what was expected, because a silently ignored typo ("numBox") would train on the wrong task.

/** Returns null when the value is acceptable, else what was expected (e.g. "must be an integer >= 1"). */
export type Validator = (value: unknown) => string | null;

export function validateConfig(
  tag: string,
  config: Record<string, unknown> | undefined,
  validators: Readonly<Record<string, Validator>>,
): void {
  if (config === undefined || config === null) return;
  if (typeof config !== 'object' || Array.isArray(config)) {
    throw new Error(`${tag}: config must be an object of key/value pairs, got ${describeValue(config)}`);
  }
  const validKeys = Object.keys(validators);
  for (const [key, value] of Object.entries(config)) {
    const validate = Object.hasOwn(validators, key) ? validators[key] : undefined;
    if (!validate) {
      throw new Error(`${tag}: unknown config key '${key}' (valid keys: ${validKeys.join(', ')})`);
    }
    if (value === undefined) continue; // an explicit undefined means "use the default"
    const problem = validate(value);
    if (problem !== null) {
      throw new Error(`${tag}: config '${key}' ${problem}, got ${describeValue(value)}`);
    }
  }
}

/** Runs `parse`, prefixing its Error with the tag and config key, so the message says which env and which key. */
export function withKey<T>(tag: string, key: string, parse: () => T): T {
  try {
    return parse();
  } catch (err) {
    throw new Error(`${tag}: config '${key}': ${(err as Error).message}`, { cause: err });
  }
}

/** A short, printable rendering of any value for error messages. */
export function describeValue(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 60 ? value.slice(0, 57) + '...' : value);
  // A long list (a 100-row map) shows its first items and its length, not every row.
  if (Array.isArray(value))
    return `[${value.slice(0, 4).map(describeValue).join(', ')}${value.length > 4 ? `, … (${value.length} items)` : ''}]`;
  if (value === null) return 'null';
  if (typeof value === 'object') return 'an object';
  return String(value);
}

/**
 * The largest side of a grid env (Sokoban rooms and levels, FrozenLake maps). RAGEN's rooms are 6x6 and 8x8; a
 * 20x20 Sokoban room already takes about a second to generate (minutes with several boxes), and a larger one
 * overflows the level generator's recursion and any tiny model's context.
 */
export const MAX_GRID_SIDE = 20;

export const integerBetween =
  (min: number, max: number): Validator =>
  (v) =>
    typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max
      ? null
      : `must be an integer from ${min} to ${max}`;

/** A finite number in [lo, hi] (or (lo, hi] when `excludeLo`). */
export const numberBetween =
  (lo: number, hi: number, excludeLo = false): Validator =>
  (v) =>
    typeof v === 'number' && Number.isFinite(v) && (excludeLo ? v > lo : v >= lo) && v <= hi
      ? null
      : `must be a number in ${excludeLo ? '(' : '['}${lo}, ${hi}]`;

export const nonEmptyString: Validator = (v) =>
  typeof v === 'string' && v.trim().length > 0 ? null : 'must be a non-empty string';

/** A grid given as one string with rows separated by '\n', or as an array of row strings. */
export const gridText: Validator = (v) =>
  typeof v === 'string' || (Array.isArray(v) && v.every((row) => typeof row === 'string'))
    ? null
    : "must be a string (rows joined by '\\n') or an array of row strings";

/** Splits a grid given as text or rows into rows; drops '\r' and a trailing empty line. */
export function gridRows(grid: string | readonly string[]): string[] {
  const rows = typeof grid === 'string' ? grid.replace(/\r/g, '').split('\n') : grid.map((r) => r.replace(/\r/g, ''));
  while (rows.length > 0 && rows[rows.length - 1] === '') rows.pop();
  return rows;
}

/** Throws when a hand-written grid is larger than MAX_GRID_SIDE on a side (`what`: "Sokoban level", "FrozenLake map"). */
export function checkGridSize(what: string, rows: readonly string[]): void {
  const widest = rows.reduce((w, row) => Math.max(w, [...row].length), 0);
  if (rows.length > MAX_GRID_SIDE || widest > MAX_GRID_SIDE) {
    throw new Error(
      `${what} is ${rows.length} rows x ${widest} columns; at most ${MAX_GRID_SIDE} x ${MAX_GRID_SIDE} is supported`,
    );
  }
}

/**
 * The index of `action` in `actionNames`, compared case-insensitively after trimming whitespace; -1 when it is
 * not one of them (RAGEN drops such actions as invalid).
 */
export function lookupAction(actionNames: readonly string[], action: unknown): number {
  if (typeof action !== 'string') return -1;
  const wanted = action.trim().toLowerCase();
  return actionNames.findIndex((name) => name.toLowerCase() === wanted);
}

/** The entries of a config whose value is not undefined (undefined means "keep the default"). */
export function definedEntries(config: Record<string, unknown> | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(config ?? {})) if (value !== undefined) out[key] = value;
  return out;
}
