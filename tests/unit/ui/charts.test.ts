import { describe, expect, it } from 'vitest';
import { EchoTrapDetector } from '../../../src/metrics/echoTrap';
import type { MetricRow } from '../../../src/metrics/jsonl';
import { defaultRunConfig } from '../../../src/starpo/config';
import { chartData, chartSpecs, echoTrapMark, successKeys } from '../../../src/ui/charts';

const row = (step: number, values: Record<string, number>): MetricRow => ({ step, ...values });

describe('charts: specs and data', () => {
  it('has a chart per paper indicator, keyed by RAGEN metric keys', () => {
    const keys = chartSpecs(['Bandit']).map((s) => s.key);
    expect(keys).toEqual([
      'train/Bandit/success', 'rollout/in_group_mean', 'rollout/in_group_std', 'actor/entropy_loss',
      'actor/grad_norm', 'response_length/mean', 'reasoning_length/mean',
    ]);
  });

  it('aligns series on the union of steps, NaN and missing values as gaps, empty series left out', () => {
    const spec = chartSpecs(['Bandit']).find((s) => s.key === 'rollout/in_group_std')!;
    const a = [row(1, { 'rollout/in_group_std': 0.5, 'rollout/chosen_in_group_std': NaN }), row(3, { 'rollout/in_group_std': 0.25 })];
    const d = chartData(spec, [{ label: 'a', rows: a }]);
    expect(d.labels).toEqual(['rollout/in_group_std']);
    expect(d.columns).toEqual([[1, 3], [0.5, 0.25]]);
    const b = [row(2, { 'rollout/in_group_std': 0.1, 'rollout/chosen_in_group_std': 0.2 })];
    const overlaid = chartData(spec, [{ label: 'starpo', rows: a }, { label: 'starpo-s', rows: b }]);
    expect(overlaid.labels).toEqual(['starpo: rollout/in_group_std', 'starpo-s: rollout/in_group_std', 'starpo-s: rollout/chosen_in_group_std']);
    expect(overlaid.columns).toEqual([[1, 2, 3], [0.5, null, 0.25], [null, 0.1, null], [null, 0.2, null]]);
  });

  it('lists the success keys a run logged', () => {
    expect(successKeys([row(0, { 'train/Bandit/success': 1, 'val-env/Bandit/success': 0, 'train/FrozenLake/success': 0 })]))
      .toEqual(['train/Bandit/success', 'train/FrozenLake/success']);
  });
});

describe('charts: echo-trap marker', () => {
  it('uses the step the Trainer logged', () => {
    const rows = [row(1, { 'echo_trap/warning': 0 }), row(2, { 'echo_trap/warning': 1 }), row(3, { 'echo_trap/warning': 1 })];
    expect(echoTrapMark(rows)).toEqual({ step: 2, reason: null });
    expect(echoTrapMark([row(1, { 'echo_trap/warning': 0 })])).toBeNull();
  });

  it('runs the detector on rows without echo_trap keys, agreeing with the detector fed directly', () => {
    // Std and entropy fall to a tenth after a flat start: the paper's collapse shape.
    const rows: MetricRow[] = [];
    for (let s = 1; s <= 12; s++) {
      const level = s <= 6 ? 1 : 0.1;
      rows.push(row(s, { 'rollout/in_group_std': level, 'actor/entropy_loss': 2 * level }));
    }
    const direct = new EchoTrapDetector(defaultRunConfig().echoTrap);
    for (const r of rows) direct.update(r.step, r);
    const mark = echoTrapMark([...rows].reverse());
    expect(mark?.step).toBe(direct.report().firstFiredStep);
    expect(mark?.step).toBeGreaterThan(6);
    expect(mark?.reason).toMatch(/echo trap warning/);
    // A run whose signals stay flat never fires.
    expect(echoTrapMark(rows.slice(0, 6))).toBeNull();
  });
});
