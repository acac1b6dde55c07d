// The reference documentation of the run config (docs/config.md), rendered from the schema's own texts and the
// defaults, plus each preset's departures from them.
import { defaultRunConfig } from './defaults';
import { configNotes } from './checks';
import { isPlainObject } from './parse';
import { RunConfigFieldsSchema, type RunConfig } from './schema';
import { unwrap, type AnySchema } from './schemaWalk';

export interface ConfigDocRow {
  /** Dotted key path; list items as `[]`, e.g. `agent.trainEnvs[].tag`. */
  key: string;
  /** Type in words: `number`, `integer`, `'a' | 'b'`, `string | null`, … */
  type: string;
  /** The default (defaultRunConfig), as JSON; '' for keys inside list items. */
  default: string;
  description: string;
}

function typeName(schema: AnySchema): string {
  const def = schema._zod.def as {
    type: string;
    innerType?: AnySchema;
    entries?: Record<string, string>;
    items?: AnySchema[];
    element?: AnySchema;
  };
  switch (def.type) {
    case 'nullable':
      return `${typeName(def.innerType!)} | null`;
    case 'optional':
      return `${typeName(def.innerType!)} (optional)`;
    case 'number': {
      // With its range, so that docs/config.md documents every bound of the schema (./limits.ts).
      const n = schema as unknown as { isInt?: boolean; minValue?: number | null; maxValue?: number | null };
      const kind = n.isInt ? 'integer' : 'number';
      const shown = (v: number | null | undefined) =>
        v === undefined || v === null || !Number.isFinite(v) || Math.abs(v) >= Number.MAX_SAFE_INTEGER ? null : v;
      const [min, max] = [shown(n.minValue), shown(n.maxValue)];
      if (max === null) return min === null ? kind : `${kind} ≥ ${min}`;
      return `${kind} ${min === null ? '≤' : `${min} …`} ${max}`;
    }
    case 'enum':
      return Object.values(def.entries!)
        .map((v) => `'${v}'`)
        .join(' | ');
    case 'tuple':
      return `[${def.items!.map(typeName).join(', ')}]`;
    case 'array':
      return unwrap(def.element!)._zod.def.type === 'object' ? 'list of objects' : `list of ${typeName(def.element!)}`;
    case 'record':
      return 'object';
    case 'union':
      return (def as unknown as { options: AnySchema[] }).options.map(typeName).join(' | ');
    case 'literal':
      return (def as unknown as { values: unknown[] }).values
        .map((v) => JSON.stringify(v).replace(/"/g, "'"))
        .join(' | ');
    case 'object':
      return 'section';
    default:
      return def.type;
  }
}

function descriptionOf(schema: AnySchema): string {
  let s: AnySchema | undefined = schema;
  while (s) {
    const d = (s as unknown as { description?: string }).description;
    if (d) return d;
    const inner: AnySchema | undefined = (s._zod.def as { innerType?: AnySchema }).innerType;
    s = inner;
  }
  return '';
}

/** One row per key of the schema, in declaration order, with the RAGEN defaults. */
export function describeConfig(): ConfigDocRow[] {
  const rows: ConfigDocRow[] = [];
  const defaults = defaultRunConfig() as unknown as Record<string, unknown>;
  const visit = (schema: AnySchema, key: string, defaultValue: unknown, inList: boolean) => {
    const def = unwrap(schema)._zod.def as { type: string; shape?: Record<string, AnySchema>; element?: AnySchema };
    if (def.type === 'object') {
      rows.push({ key, type: 'section', default: '', description: descriptionOf(schema) });
      for (const [k, child] of Object.entries(def.shape!)) {
        visit(child, `${key}.${k}`, inList ? undefined : (defaultValue as Record<string, unknown>)[k], inList);
      }
      return;
    }
    rows.push({
      key,
      type: typeName(schema),
      default: inList ? '' : JSON.stringify(defaultValue),
      description: descriptionOf(schema),
    });
    if (def.type === 'array' && unwrap(def.element!)._zod.def.type === 'object') {
      const itemShape = (unwrap(def.element!)._zod.def as unknown as { shape: Record<string, AnySchema> }).shape;
      for (const [k, child] of Object.entries(itemShape)) visit(child, `${key}[].${k}`, undefined, true);
    }
  };
  for (const [section, schema] of Object.entries(RunConfigFieldsSchema.shape))
    visit(schema, section, defaults[section], false);
  return rows;
}

/** Leaf keys whose values differ between two configs (lists compared whole), as `[key, JSON value]` pairs. */
export function configDifferences(config: RunConfig, base: RunConfig = defaultRunConfig()): [string, string][] {
  const out: [string, string][] = [];
  const walk = (a: unknown, b: unknown, key: string) => {
    if (isPlainObject(a) && isPlainObject(b)) {
      for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) walk(a[k], b[k], key ? `${key}.${k}` : k);
    } else if (JSON.stringify(a) !== JSON.stringify(b)) {
      out.push([key, a === undefined ? '(unset)' : JSON.stringify(a)]);
    }
  };
  walk(config, base, '');
  return out;
}

const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');

/**
 * The text of docs/config.md: how configs are given, the rules checked, a table per section, and each preset's
 * departures from the defaults (pass the resolved presets; the config does not import presets.ts).
 */
export function renderConfigDoc(
  presets: readonly { name: string; summary: string; arms: readonly { name: string; config: RunConfig }[] }[] = [],
): string {
  const lines: string[] = [
    '# Run configuration reference',
    '',
    '<!-- Generated from the schema in src/starpo/config/schema.ts and the presets in src/starpo/presets.ts.',
    '     Do not edit by hand: run `UPDATE_DOCS=1 npx vitest run tests/unit/starpo/config-doc.test.ts`. -->',
    '',
    'A run is described by one `RunConfig`; the browser playground and the `ragen` CLI build the same trainer from it.',
    'It can come from:',
    '',
    '- a preset: `npx ragen train --preset bandit-tiny` (list below);',
    '- a YAML or JSON file with any subset of the keys below (`loadConfigText`); missing keys take the defaults;',
    '- `--set key.path=value` overrides on top of either, e.g. `--set actor.lr=3e-5 --set agent.trainEnvs=[{tag: FrozenLake, nGroups: 8}]`.',
    '  Values are read as YAML (numbers, `true`/`false`, `null`, `[a, b]`, `{k: v}`); list items by index',
    '  (`agent.trainEnvs.0.nGroups=4`); `--set model=PATH` is short for `--set model.path=PATH`.',
    '  The CLI flags map to keys: `--steps` → `trainer.totalSteps`, `--seed` → `trainer.seed`, `--backend` → `trainer.backend`.',
    '',
    "Defaults are RAGEN v1's `config/base.yaml` merged with veRL's defaults (StarPO-S, PPO with a critic, on",
    'SimpleSokoban with Qwen2.5-0.5B-Instruct). Where RAGEN has two versions, the v1 code value is the default and the',
    'other (the paper, or RAGEN-2 = v2) is an option; each key says which. Keys are camelCase; the RAGEN / veRL key',
    'each one maps to is named in its description.',
    '',
    '## Validation',
    '',
    'Nothing runs until the whole config is valid. Every problem is reported at once, each naming its key:',
    '',
    "- unknown keys, with a suggestion for typos and RAGEN's snake_case spellings (`clip_ratio_high` → `clipRatioHigh`);",
    '- wrongly typed or out-of-range values, and unknown choices;',
    "- env tags must exist and each block's `config` must be accepted by the environment;",
    '- the `nGroups` of `agent.trainEnvs` must sum to `agent.envGroups`, those of `agent.valEnvs` to `agent.valGroups`;',
    '- filter `ratio`: floor(ratio × envGroups) ≥ 1 group, and the kept trajectories must fill one `actor.ppoMiniBatchSize`',
    "  (RAGEN's assert envGroups × groupSize × ratio ≥ ppo_mini_batch_size, checked on the kept count really produced);",
    '- `actor.ppoMicroBatchSize` must divide `actor.ppoMiniBatchSize`;',
    '- `algorithm.advEstimator: grpo` requires reward normalisation (`mean_std` = GRPO, `mean` = Dr.GRPO): with `identity`',
    '  RAGEN v1 silently trains GRPO on raw rewards; we refuse it. With grouping `state` it also needs groupSize > 1;',
    '- the tiny model shape: numHeads divides hiddenSize with an even head size, numKvHeads divides numHeads.',
    '',
    'Legal but suspicious settings produce warnings (`configWarnings`, printed by `ragen train`), e.g. a KL coefficient',
    'without its switch. Facts about a setting that ask for no change are notes (`configNotes`), listed under each',
    'preset below, e.g. that PPO clipping never acts with one mini-batch per rollout (spec §10.7). A config for a',
    'pretrained model (`model.pretrained`) also needs `model.path` before it can run (`assertRunnable`).',
    '',
  ];
  const rows = describeConfig();
  rows.forEach((row, i) => {
    if (!row.key.includes('.')) {
      lines.push(
        `## \`${row.key}\``,
        '',
        cell(row.description),
        '',
        '| key | type | default | meaning |',
        '|---|---|---|---|',
      );
    } else {
      const type = row.type === 'section' ? 'section' : cell(row.type);
      lines.push(
        `| \`${row.key}\` | ${type} | ${row.default ? `\`${cell(row.default)}\`` : ''} | ${cell(row.description)} |`,
      );
    }
    const next = rows[i + 1];
    if (next === undefined || !next.key.includes('.')) lines.push('');
  });
  if (presets.length) {
    lines.push('## Presets', '', 'Each preset lists only how it departs from the defaults above.', '');
    for (const preset of presets) {
      lines.push(`### \`${preset.name}\``, '', preset.summary, '');
      for (const arm of preset.arms) {
        if (preset.arms.length > 1) lines.push(`Arm \`${arm.name}\`:`, '');
        lines.push('| key | value |', '|---|---|');
        for (const [key, value] of configDifferences(arm.config)) lines.push(`| \`${key}\` | \`${cell(value)}\` |`);
        lines.push('');
        for (const note of configNotes(arm.config)) lines.push(`Note: ${note}.`, '');
      }
    }
  }
  return lines.join('\n');
}
