// docs/config.md is generated from the schema's descriptions and the presets; this test keeps it in step.
// Regenerate with: UPDATE_DOCS=1 npx vitest run tests/unit/starpo/config-doc.test.ts
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { defaultRunConfig, describeConfig, renderConfigDoc } from '../../../src/starpo/config';
import { PRESET_NAMES, resolvePreset } from '../../../src/starpo/presets';

const DOC_PATH = fileURLToPath(new URL('../../../docs/config.md', import.meta.url));

/** Dotted paths of every leaf value of an object (lists count as leaves). */
function leafKeys(obj: Record<string, unknown>, prefix = ''): string[] {
  return Object.entries(obj).flatMap(([k, v]) =>
    typeof v === 'object' && v !== null && !Array.isArray(v)
      ? leafKeys(v as Record<string, unknown>, `${prefix}${k}.`)
      : [`${prefix}${k}`],
  );
}

describe('config reference', () => {
  const rows = describeConfig();

  it('documents every key of the config, each with a description', () => {
    const documented = new Set(rows.map((r) => r.key));
    for (const key of leafKeys(defaultRunConfig() as unknown as Record<string, unknown>))
      expect(documented, key).toContain(key);
    for (const row of rows) expect(row.description.length, row.key).toBeGreaterThan(10);
  });

  it('shows the defaults of defaultRunConfig', () => {
    const byKey = new Map(rows.map((r) => [r.key, r]));
    expect(byKey.get('actor.clipRatioHigh')?.default).toBe('0.28');
    expect(byKey.get('agent.seedTrain')?.default).toBe('10000');
    expect(byKey.get('model.path')?.type).toBe('string | null');
    expect(byKey.get('actor.lossAggMode')?.type).toContain("'seq-mean-token-sum-norm'");
    expect(byKey.get('agent.trainEnvs[].tag')).toBeDefined();
  });

  it('docs/config.md is up to date with the schema and presets', () => {
    const expected = renderConfigDoc(PRESET_NAMES.map(resolvePreset));
    if (process.env.UPDATE_DOCS) writeFileSync(DOC_PATH, expected);
    const actual = readFileSync(DOC_PATH, 'utf8');
    expect(
      actual,
      'docs/config.md is stale: run UPDATE_DOCS=1 npx vitest run tests/unit/starpo/config-doc.test.ts',
    ).toBe(expected);
  });
});
