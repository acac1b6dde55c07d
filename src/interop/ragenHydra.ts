// RAGEN config values (from ragenMapping's toRagen) written the two ways Hydra takes them: a config file that
// extends RAGEN's base.yaml (`python train.py --config-dir DIR --config-name NAME`), and an override list
// (`python train.py --config-name base key=value ...`). The list also reads back (parseHydraOverrides), so the
// round-trip tests go through the same text a user would run. Pure TypeScript.
import YAML from 'yaml';
import { type RagenConfig } from './ragenMapping';

/** The values as one nested object, RAGEN's config layout. */
export function nestRagenValues(values: ReadonlyMap<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [path, value] of values) {
    const parts = path.split('.');
    let node = out;
    for (const segment of parts.slice(0, -1)) {
      if (node[segment] === null || typeof node[segment] !== 'object') node[segment] = {};
      node = node[segment] as Record<string, unknown>;
    }
    node[parts[parts.length - 1]] = value;
  }
  return out;
}

/**
 * A Hydra config file layered on RAGEN's base.yaml: `defaults: [base, _self_]` then the values, nested. `header`
 * lines become YAML comments at the top.
 */
export function ragenConfigYaml(config: RagenConfig, header: readonly string[] = []): string {
  const doc = { defaults: ['base', '_self_'], ...nestRagenValues(config.values) };
  const comments = header.map((line) => `# ${line}`.trimEnd()).join('\n');
  return (comments ? comments + '\n' : '') + YAML.stringify(doc, { lineWidth: 0 });
}

const BARE_STRING = /^[A-Za-z_/][\w\-/.:]*$/;
const HYDRA_WORDS = new Set(['true', 'false', 'null', 'nan', 'inf', 'none']);

/** One value in Hydra's override grammar: numbers and booleans bare, strings quoted unless plainly a word. */
export function hydraValue(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new Error(`a RAGEN config value must be finite, got ${value}`);
    return String(value);
  }
  if (typeof value === 'string') {
    if (BARE_STRING.test(value) && !HYDRA_WORDS.has(value.toLowerCase())) return value;
    return `'${value.replace(/'/g, "\\'")}'`; // Hydra escapes a quote inside quotes with a backslash
  }
  if (Array.isArray(value)) return `[${value.map(hydraValue).join(',')}]`;
  if (typeof value === 'object') {
    return `{${Object.entries(value as Record<string, unknown>)
      .map(([k, v]) => `${k}:${hydraValue(v)}`)
      .join(',')}}`;
  }
  throw new Error(`cannot write ${typeof value} as a Hydra value`);
}

/**
 * The override list, one `key=value` per entry. Keys RAGEN v1's composed config may lack (RAGEN-2 keys, env_config
 * entries of a tag whose env_config is null) get Hydra's `++` (add or override), the others a plain `=`, so a typo
 * in a plain key still fails loudly in Hydra.
 */
export function hydraOverrides(config: RagenConfig): string[] {
  return [...config.values].map(([path, value]) => `${config.added.has(path) ? '++' : ''}${path}=${hydraValue(value)}`);
}

/**
 * Reads an override list back into a nested object (values parsed as YAML flow scalars, which covers what
 * hydraValue writes). Blank lines and `#` comments are skipped; an entry without `=` is an Error naming it.
 */
export function parseHydraOverrides(lines: readonly string[]): Record<string, unknown> {
  const values = new Map<string, unknown>();
  lines.forEach((line, i) => {
    const text = line.trim();
    if (!text || text.startsWith('#')) return;
    const eq = text.indexOf('=');
    if (eq <= 0) throw new Error(`override ${i + 1} ('${text}') is not key=value`);
    const key = text.slice(0, eq).replace(/^\+{1,2}/, '');
    const raw = text.slice(eq + 1);
    let value: unknown;
    try {
      value = YAML.parse(raw.replace(/\\'/g, "''"));
    } catch {
      value = raw;
    }
    values.set(key, value);
  });
  return nestRagenValues(values);
}
