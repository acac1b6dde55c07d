import { describe, expect, it } from 'vitest';
import { EchoTrapDetector } from '../../../src/metrics/echoTrap';
import type { MetricRow } from '../../../src/metrics/jsonl';
import { defaultRunConfig } from '../../../src/starpo/config';
import {
  ARM_COLOURS,
  chartData,
  chartSpecs,
  echoTrapExplanation,
  echoTrapMark,
  formatValue,
  hasInputDependence,
  INPUT_DEPENDENCE_KEY,
  lessonChartSpecs,
  successKeys,
} from '../../../src/ui/charts';

const row = (step: number, values: Record<string, number>): MetricRow => ({ step, ...values });

describe('charts: specs and data', () => {
  it('has a chart per paper indicator, keyed by RAGEN metric keys', () => {
    const keys = chartSpecs(['Bandit']).map((s) => s.key);
    expect(keys).toEqual([
      'train/Bandit/success',
      'rollout/in_group_mean',
      'rollout/in_group_std',
      'actor/entropy_loss',
      'actor/grad_norm',
      'response_length/mean',
      'reasoning_length/mean',
    ]);
  });

  it('the lesson draws success first, then the early signs, then the late ones, with the same specs as the playground', () => {
    const lesson = lessonChartSpecs(['FrozenLake']);
    expect(lesson.map((s) => s.key)).toEqual([
      'train/FrozenLake/success',
      'rollout/in_group_std',
      'actor/entropy_loss',
      'actor/grad_norm',
      'reasoning_length/mean',
    ]);
    const all = chartSpecs(['FrozenLake']);
    for (const spec of lesson) expect(spec).toEqual(all.find((s) => s.key === spec.key));
    expect(lesson[0].range).toEqual([0, 1]);
    for (const spec of lesson) expect(spec.yLabel.length).toBeGreaterThan(3);
  });

  it("draws RAGEN-2's input dependence (first-turn MI) right after success when the run measures it, and only then", () => {
    expect(lessonChartSpecs(['FrozenLake'], true).map((s) => s.key)).toEqual([
      'train/FrozenLake/success',
      INPUT_DEPENDENCE_KEY,
      'rollout/in_group_std',
      'actor/entropy_loss',
      'actor/grad_norm',
      'reasoning_length/mean',
    ]);
    expect(
      chartSpecs(['FrozenLake'], true)
        .map((s) => s.key)
        .slice(0, 2),
    ).toEqual(['train/FrozenLake/success', INPUT_DEPENDENCE_KEY]);
    expect(chartSpecs(['FrozenLake']).map((s) => s.key)).not.toContain(INPUT_DEPENDENCE_KEY);
    expect(INPUT_DEPENDENCE_KEY).toBe('collapse_first_turn_sample/mi_estimate');
    expect(hasInputDependence([row(1, { 'actor/grad_norm': 1 }), row(5, { [INPUT_DEPENDENCE_KEY]: NaN })])).toBe(false);
    expect(hasInputDependence([row(1, { 'actor/grad_norm': 1 }), row(5, { [INPUT_DEPENDENCE_KEY]: 0.4 })])).toBe(true);
  });

  it('aligns series on the union of steps, NaN and missing values as gaps, empty series left out', () => {
    const spec = chartSpecs(['Bandit']).find((s) => s.key === 'rollout/in_group_std')!;
    const a = [
      row(1, { 'rollout/in_group_std': 0.5, 'rollout/chosen_in_group_std': NaN }),
      row(3, { 'rollout/in_group_std': 0.25 }),
    ];
    const d = chartData(spec, [{ label: 'a', rows: a }]);
    expect(d.steps).toEqual([1, 3]);
    expect(d.series.map((s) => [s.label, s.values, s.last])).toEqual([['all groups', [0.5, 0.25], 0.25]]);
    const b = [row(2, { 'rollout/in_group_std': 0.1, 'rollout/chosen_in_group_std': 0.2 })];
    const overlaid = chartData(spec, [
      { label: 'starpo', rows: a },
      { label: 'starpo-s', rows: b },
    ]);
    expect(overlaid.steps).toEqual([1, 2, 3]);
    expect(overlaid.series.map((s) => [s.arm, s.key, s.values])).toEqual([
      ['starpo', 'rollout/in_group_std', [0.5, null, 0.25]],
      ['starpo-s', 'rollout/in_group_std', [null, 0.1, null]],
      ['starpo-s', 'rollout/chosen_in_group_std', [null, 0.2, null]],
    ]);
    expect(overlaid.series.map((s) => s.label)).toEqual([
      'starpo · all groups',
      'starpo-s · all groups',
      'starpo-s · groups kept by the filter',
    ]);
  });

  it('gives each arm one colour on every chart, and companion series a dashed line', () => {
    const rows = (v: number) => [
      row(1, {
        'train/Bandit/success': v,
        'val-env/Bandit/success': v,
        'actor/entropy_loss': v,
        'rollout/in_group_std': v,
        'rollout/chosen_in_group_std': v,
      }),
    ];
    const runs = [
      { label: 'starpo', rows: rows(0.5) },
      { label: 'starpo-s', rows: rows(0.25) },
    ];
    const colours = new Map<string, Set<string>>();
    for (const spec of chartSpecs(['Bandit'])) {
      for (const s of chartData(spec, runs).series) {
        colours.set(s.arm, (colours.get(s.arm) ?? new Set()).add(s.colour));
        expect(s.dashed).toBe(spec.series.find((x) => x.key === s.key)!.dashed);
      }
    }
    expect([...colours.entries()].map(([arm, c]) => [arm, [...c]])).toEqual([
      ['starpo', [ARM_COLOURS[0]]],
      ['starpo-s', [ARM_COLOURS[1]]],
    ]);
  });

  it('every chart labels its y axis; success rates get a fixed 0-1 axis, the rest fit their data', () => {
    for (const spec of chartSpecs(['Bandit', 'FrozenLake'])) {
      expect(spec.yLabel.length, spec.key).toBeGreaterThan(3);
      expect(spec.watch.length, spec.key).toBeGreaterThan(20);
      expect(spec.range, spec.key).toEqual(spec.key.endsWith('/success') ? [0, 1] : undefined);
    }
    // Bandit's success is explained: it is about the arm chosen, not the (random) reward of one pull.
    expect(chartSpecs(['Bandit'])[0].watch).toMatch(/higher expected reward/);
  });

  it('formats legend values to 3 significant digits', () => {
    expect([0.123456, 12.3456, 0, null, 1234567, NaN].map(formatValue)).toEqual([
      '0.123',
      '12.3',
      '0',
      '–',
      '1.23e+6',
      '–',
    ]);
  });

  it('lists the success keys a run logged', () => {
    expect(
      successKeys([row(0, { 'train/Bandit/success': 1, 'val-env/Bandit/success': 0, 'train/FrozenLake/success': 0 })]),
    ).toEqual(['train/Bandit/success', 'train/FrozenLake/success']);
  });
});

describe('charts: echo-trap marker', () => {
  it('uses the step the Trainer logged, with the ratios and the signal that fired it', () => {
    const rows = [
      row(1, { 'echo_trap/warning': 0 }),
      row(2, {
        'echo_trap/warning': 1,
        'echo_trap/reward_std_ratio': 0.12,
        'echo_trap/entropy_ratio': 0.25,
        'echo_trap/mi_ratio': 0.08,
      }),
      row(3, { 'echo_trap/warning': 1 }),
    ];
    rows[1]['echo_trap/signal'] = 'reward_std+mi_zscore_ema';
    const mark = echoTrapMark(rows)!;
    expect(mark).toEqual({
      step: 2,
      rewardStdRatio: 0.12,
      entropyRatio: 0.25,
      miRatio: 0.08,
      signal: 'reward_std+mi_zscore_ema',
    });
    // The explanation names what fired (here not the entropy, though its ratio was logged).
    expect(echoTrapExplanation(mark)).toBe(
      'fired at step 2: in-group reward std fell to 12% and the input dependence of the reasoning (MI z-score) to 8% of their early level (signal: reward_std+mi_zscore_ema)',
    );
    // A row of an older run, without a signal, is explained from its ratios.
    expect(echoTrapExplanation({ ...mark, miRatio: NaN, signal: null })).toBe(
      'fired at step 2: in-group reward std fell to 12% and entropy to 25% of their early level',
    );
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
    expect(mark?.rewardStdRatio).toBeCloseTo(0.1, 6);
    expect(echoTrapExplanation(mark!)).toMatch(
      /^fired at step \d+: in-group reward std fell to 10% and entropy to 10% of their early level \(signal: reward_std\+entropy\)$/,
    );
    // A run whose signals stay flat never fires.
    expect(echoTrapMark(rows.slice(0, 6))).toBeNull();
  });
});
