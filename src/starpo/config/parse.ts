// Reading a run config: a partial config (a YAML or JSON file, a preset) laid over the defaults, then checked, and
// the CLI's `--set key.path=value` overrides. Unknown keys (with a "did you mean" suggestion), wrong types and broken
// cross-field rules all stop the run with one ConfigError whose message names each key.
import type { z } from 'zod';
import YAML from 'yaml';
import { RunConfigSchema } from './checks';
import { defaultRunConfig } from './defaults';
import { ConfigError, describeValue, didYouMean, keyName, truncate } from './messages';
import type { RunConfig, RunConfigInput } from './schema';
import { childSchema, objectShapeAt, schemaAt, unwrap, type AnySchema } from './schemaWalk';

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * `over` laid onto `base`: nested objects merge key by key, everything else (numbers, strings, arrays, null)
 * replaces. Neither input is modified.
 */
export function mergeConfigInput<T>(base: T, over: unknown): T {
  if (!isPlainObject(base) || !isPlainObject(over)) return structuredClone(over === undefined ? base : over) as T;
  const out: Record<string, unknown> = structuredClone(base);
  for (const [key, value] of Object.entries(over)) {
    if (value === undefined) continue;
    // defineProperty, not `out[key] =`: a `__proto__` key from a config file must stay a plain (unknown) key.
    const merged = Object.hasOwn(out, key) ? mergeConfigInput(out[key], value) : structuredClone(value);
    Object.defineProperty(out, key, { value: merged, enumerable: true, writable: true, configurable: true });
  }
  return out as T;
}

/** Deeper than this, a config is not a run config (the real one nests 4 levels), and recursion would overflow. */
const MAX_CONFIG_DEPTH = 32;

/**
 * Throws a ConfigError naming the key when raw config input (a parsed file) nests deeper than MAX_CONFIG_DEPTH or
 * holds a `__proto__` key: JavaScript objects drop such a key on assignment, so it would vanish silently instead
 * of being reported. Walks without recursion, so even absurd nesting gets this one-line answer.
 */
export function checkConfigShape(obj: unknown, source?: string): void {
  const where = source ? ` (${source})` : '';
  const stack: { value: unknown; path: (string | number)[] }[] = [{ value: obj, path: [] }];
  while (stack.length > 0) {
    const { value, path } = stack.pop()!;
    if (typeof value !== 'object' || value === null) continue;
    if (path.length >= MAX_CONFIG_DEPTH) {
      throw new ConfigError(
        `invalid run config${where}: nested deeper than ${MAX_CONFIG_DEPTH} levels at '${truncate(keyName(path))}'`,
        [],
      );
    }
    for (const key of Object.keys(value)) {
      if (key === '__proto__')
        throw new ConfigError(`invalid run config${where}: config key '${keyName([...path, key])}' is not allowed`, []);
      stack.push({
        value: (value as Record<string, unknown>)[key],
        path: [...path, Array.isArray(value) ? Number(key) : key],
      });
    }
  }
}

/**
 * Validates a (partial) config laid over defaultRunConfig() and returns the complete RunConfig. Throws a
 * ConfigError naming every unknown key (with a suggestion), wrongly typed value and broken cross-field rule.
 * `source` (a file name, 'preset bandit-tiny', '--set') is quoted in the message.
 */
export function parseRunConfig(obj: unknown, source?: string): RunConfig {
  const where = source ? ` (${source})` : '';
  if (obj === null || obj === undefined) obj = {};
  if (!isPlainObject(obj)) {
    throw new ConfigError(`invalid run config${where}: expected an object of sections, got ${describeValue(obj)}`, []);
  }
  checkConfigShape(obj, source);
  const merged = mergeConfigInput(defaultRunConfig(), obj);
  const result = RunConfigSchema.safeParse(merged, { reportInput: true });
  if (result.success) return result.data;
  const problems = result.error.issues.flatMap(describeIssue);
  const body = problems.length === 1 ? problems[0] : `${problems.length} problems:\n  - ${problems.join('\n  - ')}`;
  throw new ConfigError(`invalid run config${where}: ${body}`, problems);
}

/** Reads a config file's text (YAML or JSON) and validates it like parseRunConfig. */
export function loadConfigText(text: string, format: 'yaml' | 'json', source?: string): RunConfig {
  return parseRunConfig(readConfigText(text, format, source), source);
}

/**
 * The plain value of a config file's text (not validated yet: see parseRunConfig). Throws a ConfigError of one line
 * naming the source: a syntax error (YAML's own message quotes the line below; only its first line is kept), or a
 * YAML warning such as an unknown `!tag`, which would otherwise print a warning and read the value as a string.
 */
export function readConfigText(text: string, format: 'yaml' | 'json', source?: string): unknown {
  const fail = (why: string) =>
    new ConfigError(
      `could not read the run config${source ? ` ${source}` : ''} as ${format.toUpperCase()}: ${why.split('\n')[0].replace(/:$/, '')}`,
      [],
    );
  if (format === 'json') {
    try {
      return JSON.parse(text);
    } catch (err) {
      throw fail((err as Error).message);
    }
  }
  let doc: ReturnType<typeof YAML.parseDocument>;
  try {
    doc = YAML.parseDocument(text, { logLevel: 'silent' });
  } catch (err) {
    throw fail((err as Error).message);
  }
  const problem = doc.errors[0] ?? doc.warnings[0];
  if (problem) throw fail(problem.message);
  try {
    return doc.toJS({ maxAliasCount: 100 });
  } catch (err) {
    throw fail((err as Error).message);
  }
}

function describeIssue(issue: z.core.$ZodIssue): string[] {
  const key = keyName(issue.path);
  const at = `config key '${key}'`;
  switch (issue.code) {
    case 'unrecognized_keys':
      return issue.keys.map((k) => {
        const valid = Object.keys(objectShapeAt(issue.path) ?? {});
        const full = key ? `${key}.${k}` : k;
        const hint = didYouMean(k, valid);
        return `unknown config key '${full}'${hint || ` (valid keys${key ? ` under '${key}'` : ''}: ${valid.join(', ')})`}`;
      });
    case 'invalid_type': {
      const schema = schemaAt(issue.path);
      const isInt = schema !== undefined && (unwrap(schema) as unknown as { isInt?: boolean }).isInt === true;
      const expected =
        issue.expected === 'int' || isInt ? 'an integer' : issue.expected === 'object' ? 'an object' : issue.expected;
      const nullable = schema?._zod.def.type === 'nullable' ? ' or null' : '';
      return [`${at}: expected ${expected}${nullable}, got ${describeValue(issue.input)}`];
    }
    case 'invalid_value': {
      const options = issue.values.map((v) => `'${String(v)}'`).join(', ');
      const hint = typeof issue.input === 'string' ? didYouMean(issue.input, issue.values.map(String)) : '';
      return [`${at}: expected one of ${options}, got ${describeValue(issue.input)}${hint}`];
    }
    case 'too_small':
    case 'too_big': {
      const small = issue.code === 'too_small';
      const bound = small ? issue.minimum : issue.maximum;
      if (issue.origin === 'array')
        return [
          `${at}: expected ${small ? 'at least' : 'at most'} ${bound} item(s), got ${describeValue(issue.input)}`,
        ];
      if (issue.origin === 'string') return [`${at}: must not be empty`];
      const op = small ? (issue.inclusive ? '>=' : '>') : issue.inclusive ? '<=' : '<';
      return [`${at}: must be ${op} ${bound}, got ${describeValue(issue.input)}`];
    }
    case 'custom':
      return [`${at}: ${issue.message}`];
    default:
      return [`${at}: ${issue.message}`];
  }
}

// --- `--set` overrides ---

/**
 * Applies `--set key.path=value` overrides and re-validates. Values are read as YAML (`0.28`, `1e-6`, `true`,
 * `null`, `[1, 2]`, `{tag: Bandit, nGroups: 8}`); a value YAML cannot read stays a plain string. Array items are
 * addressed by index (`agent.trainEnvs.0.nGroups=4`). An object value merges into an object key; anything else
 * replaces. `model=PATH` is a shorthand for `model.path=PATH`. Unknown keys are rejected with the valid keys listed.
 */
export function applyOverrides(config: RunConfig | RunConfigInput, overrides: readonly string[]): RunConfig {
  let out: Record<string, unknown> = structuredClone(config) as Record<string, unknown>;
  for (const override of overrides) {
    const eq = override.indexOf('=');
    if (eq <= 0) throw new ConfigError(`--set expects key=value, got '${override}'`, []);
    let key = override.slice(0, eq).trim();
    const raw = override.slice(eq + 1);
    if (key === 'model') key = 'model.path';
    const path = key.split('.');
    checkOverridePath(path, override);
    let value: unknown = raw;
    try {
      // A value YAML cannot read cleanly (a syntax error, or a warning such as an unknown `!tag`) stays a string.
      const doc = YAML.parseDocument(raw, { logLevel: 'silent' });
      if (doc.errors.length === 0 && doc.warnings.length === 0) value = doc.toJS();
    } catch {
      value = raw;
    }
    checkConfigShape(value, `--set ${shownOverride(override)}`);
    out = setAtPath(out, path, value, override);
  }
  return parseRunConfig(out, overrides.length ? `--set ${overrides.map(shownOverride).join(' ')}` : undefined);
}

function checkOverridePath(path: string[], override: string): void {
  let schema: AnySchema = RunConfigSchema;
  for (let i = 0; i < path.length; i++) {
    const segment = path[i];
    if (segment === '__proto__')
      throw new ConfigError(
        `config key '${path.slice(0, i + 1).join('.')}' in --set ${shownOverride(override)} is not allowed`,
        [],
      );
    const child = childSchema(schema, segment);
    if (!child) {
      const parent = path.slice(0, i).join('.');
      const shape = objectShapeAt(path.slice(0, i));
      const valid = shape ? Object.keys(shape) : [];
      const what = valid.length
        ? `valid keys${parent ? ` under '${parent}'` : ''}: ${valid.join(', ')}`
        : `'${parent}' has no sub-keys`;
      throw new ConfigError(
        `unknown config key '${path.slice(0, i + 1).join('.')}' in --set ${shownOverride(override)}${didYouMean(segment, valid)}; ${what}`,
        [],
      );
    }
    schema = child;
  }
}

function setAtPath(
  root: Record<string, unknown>,
  path: string[],
  value: unknown,
  override: string,
): Record<string, unknown> {
  let node: unknown = root;
  for (let i = 0; i < path.length; i++) {
    const container = node as Record<string, unknown>;
    const segment = path[i];
    if (Array.isArray(container) && Number(segment) >= container.length) {
      throw new ConfigError(
        `cannot apply --set ${shownOverride(override)}: index ${segment} is past the end of '${path.slice(0, i).join('.')}' (length ${container.length})`,
        [],
      );
    }
    if (i === path.length - 1) {
      const old = container[segment];
      container[segment] = isPlainObject(old) && isPlainObject(value) ? mergeConfigInput(old, value) : value;
      break;
    }
    // An optional section not written yet (an env block's `config`): the path was checked against the schema.
    if (container[segment] === undefined) container[segment] = {};
    node = container[segment];
    if (typeof node !== 'object' || node === null) {
      throw new ConfigError(
        `cannot apply --set ${shownOverride(override)}: '${path.slice(0, i + 1).join('.')}' is ${describeValue(node)}, not a section`,
        [],
      );
    }
  }
  return root;
}

/** An override as an error shows it: its key and at most 60 characters of its value (a map can be 10 KB). */
export function shownOverride(override: string): string {
  const eq = override.indexOf('=');
  const value = eq < 0 ? '' : override.slice(eq + 1);
  return value.length <= 60
    ? override
    : `${override.slice(0, eq + 1)}${value.slice(0, 57)}... (${value.length} characters)`;
}
