// How config problems are worded: the error every config check throws, key paths as users write them, values
// quoted briefly, and a "did you mean" for misspelt keys and choices.

/** A config that cannot be used. `problems` lists every issue found, one line each. */
export class ConfigError extends Error {
  constructor(
    message: string,
    readonly problems: string[],
  ) {
    super(message);
    this.name = 'ConfigError';
  }
}

/** A key path as users write it: `agent.trainEnvs[0].tag`. */
export function keyName(path: readonly PropertyKey[]): string {
  return path
    .map((p) => (typeof p === 'number' ? `[${p}]` : String(p)))
    .join('.')
    .replace(/\.\[/g, '[');
}

/** A value in a few words for an error message: `string "abc"`, `an array [1,2]`, `null`. */
export function describeValue(v: unknown): string {
  if (v === undefined) return 'nothing (the key is missing)';
  if (v === null) return 'null';
  if (Array.isArray(v)) return `an array ${truncate(JSON.stringify(v))}`;
  if (typeof v === 'string') return `string ${JSON.stringify(truncate(v))}`;
  if (typeof v === 'object') return 'an object';
  return `${typeof v} ${String(v)}`;
}

/** `s` cut to `max` characters, with an ellipsis when cut. */
export function truncate(s: string, max = 60): string {
  return s.length > max ? `${s.slice(0, max)}…` : s;
}

/** Levenshtein distance: the fewest single-character inserts, deletions and substitutions from a to b. */
function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = row;
  }
  return prev[b.length];
}

/** ` (did you mean 'x'?)` for the closest candidate within a few edits (snake_case and case ignored), else ''. */
export function didYouMean(word: string, candidates: readonly string[]): string {
  // RAGEN users will type snake_case keys (clip_ratio_high): compare with separators and case removed.
  const norm = (s: string) => s.toLowerCase().replace(/[_\-.]/g, '');
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of candidates) {
    const d = editDistance(norm(word), norm(candidate));
    if (d < bestDistance) [best, bestDistance] = [candidate, d];
  }
  const allowed = Math.max(1, Math.floor(norm(word).length / 3));
  return best !== undefined && bestDistance <= allowed ? ` (did you mean '${best}'?)` : '';
}
