import * as fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { MetricsRow } from '../../../experiments/lib/analysis';
import { armSeries, freshSeedTableText } from '../../../experiments/lib/freshSeedTable';
import { parseFreshSeedTable } from '../../../src/ui/lessonRobustness';

/** 12 steps of a run: success 0 then 1 from step 5; the MI measured at steps 1, 5 and 10 (as collapse.enabled does). */
const rows: MetricsRow[] = Array.from({ length: 12 }, (_, i) => ({
  step: i + 1,
  'train/FrozenLake/success': i + 1 >= 5 ? 1 : 0,
  ...([1, 5, 10].includes(i + 1) ? { 'collapse_first_turn_sample/mi_estimate': (i + 1) / 100 + 0.123456 } : {}),
}));

describe('armSeries (the fresh-seed curves the lab scripts write)', () => {
  it('samples step 1 and every 5th step, with the 5-step trailing mean of the training success', () => {
    const s = armSeries(rows, false);
    expect(s.step).toEqual([1, 5, 10]);
    // Step 5: steps 1-5 are 0,0,0,0,1; step 10: steps 6-10 all 1.
    expect(s.success).toEqual([0, 0.2, 1]);
    expect(s.mi).toBeUndefined();
  });

  it('carries the MI at the sampled steps, rounded to 4 decimals, and null where none was measured', () => {
    expect(armSeries(rows, true).mi).toEqual([0.1335, 0.1735, 0.2235]);
    const gap = rows.map((r) => (r.step === 5 ? { step: 5, 'train/FrozenLake/success': 1 } : r));
    expect(armSeries(gap, true).mi).toEqual([0.1335, null, 0.2235]);
  });

  it('refuses a run without a training success metric', () => {
    expect(() => armSeries([{ step: 1, loss: 1 }], true)).toThrow(/train\/<tag>\/success/);
  });
});

describe('freshSeedTableText (how a fresh-seed table is written)', () => {
  const table = parseFreshSeedTable(
    JSON.parse(fs.readFileSync('public/lessons/echo-trap-frozenlake/fresh-seeds.json', 'utf8')),
  );

  it('reads back as the same table', () => {
    expect(parseFreshSeedTable(JSON.parse(freshSeedTableText(table)))).toEqual(table);
  });

  it('writes each list of numbers on one line (nulls and negative numbers included), and nothing else on one line', () => {
    const text = freshSeedTableText(table);
    const lines = text.split('\n');
    expect(lines.some((l) => /^\s*(-?[\d.e+-]+|null),?$/.test(l))).toBe(false);
    const steps = table.rows[0].series!.vanilla.step;
    expect(lines.map((l) => l.trim())).toContain(`"step": [${steps.join(', ')}],`);
    // Objects and lists of strings keep one entry per line.
    expect(text).toContain('"vanilla": {\n');
    expect(freshSeedTableText({ ...table, rows: [{ ...table.rows[0], failed: ['miFalls'] }] })).toContain(
      '"failed": [\n',
    );
  });
});
