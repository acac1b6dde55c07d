import { describe, expect, it } from 'vitest';
import type { MetricRow } from '../../../src/metrics/jsonl';
import { formatSummary, summarizeMetrics, summarizeSeries } from '../../../src/metrics/summary';
import { defaultRunConfig } from '../../../src/starpo/config';

/** The detector settings a run uses by default, for rows without echo_trap keys. */
const echoTrap = defaultRunConfig().echoTrap;

const rows: MetricRow[] = [
  { step: 0, 'train/FrozenLake/success': 0.1, 'rollout/in_group_std': 1.0, 'actor/entropy_loss': 2.0 },
  {
    step: 1,
    'train/FrozenLake/success': 0.5,
    'rollout/in_group_std': 1.2,
    'actor/entropy_loss': 1.8,
    'val-env/FrozenLake/success': 0.4,
  },
  { step: 2, 'train/FrozenLake/success': NaN, 'rollout/in_group_std': 0.6, 'actor/entropy_loss': 1.5 },
  { step: 3, 'train/FrozenLake/success': 0.3, 'rollout/in_group_std': 0.9, 'actor/entropy_loss': 1.9 },
];

describe('summarizeSeries', () => {
  it('gives first / peak / min / last, skipping NaN and missing values', () => {
    expect(summarizeSeries(rows, 'train/FrozenLake/success')).toEqual({
      first: { step: 0, value: 0.1 },
      peak: { step: 1, value: 0.5 },
      min: { step: 0, value: 0.1 },
      last: { step: 3, value: 0.3 },
      count: 3,
    });
    expect(summarizeSeries(rows, 'val-env/FrozenLake/success')?.count).toBe(1);
    expect(summarizeSeries(rows, 'nope')).toBeNull();
  });
});

describe('summarizeMetrics', () => {
  it('summarises success keys and the collapse indicators', () => {
    const s = summarizeMetrics([...rows].reverse(), { echoTrap }); // order of rows does not matter
    expect(s.steps).toBe(4);
    expect(s.firstStep).toBe(0);
    expect(s.lastStep).toBe(3);
    expect(Object.keys(s.series)).toEqual([
      'train/FrozenLake/success',
      'val-env/FrozenLake/success',
      'rollout/in_group_std',
      'actor/entropy_loss',
    ]);
    expect(s.series['rollout/in_group_std'].peak).toEqual({ step: 1, value: 1.2 });
    expect(s.series['actor/entropy_loss'].min).toEqual({ step: 2, value: 1.5 });
    expect(s.echoTrap).toEqual({ firedStep: null, signal: null, gradNormSpikeStep: null, source: 'replayed' });
  });

  it('reads the logged warning when present', () => {
    const logged: MetricRow[] = rows.map((r, i) => ({
      ...r,
      'echo_trap/warning': i >= 2 ? 1 : 0,
      'echo_trap/grad_norm_spike': i === 3 ? 1 : 0,
      ...(i >= 2 ? { 'echo_trap/signal': 'reward_std+mi_zscore_ema' } : {}),
    }));
    const s = summarizeMetrics(logged, { echoTrap });
    expect(s.echoTrap).toEqual({
      firedStep: 2,
      signal: 'reward_std+mi_zscore_ema',
      gradNormSpikeStep: 3,
      source: 'logged',
    });
    expect(formatSummary(s)).toContain(
      'echo trap warning: fired at step 2 (signal: reward_std+mi_zscore_ema); grad-norm spike: step 3',
    );
  });

  it('replays the detector on a collapsing run without echo_trap keys', () => {
    const std = [1, 1, 1, 1, 1, 0.8, 0.2, 0.1, 0.1];
    const collapsing: MetricRow[] = std.map((v, step) => ({
      step,
      'rollout/in_group_std': v,
      'actor/entropy_loss': v * 2,
    }));
    expect(summarizeMetrics(collapsing, { echoTrap }).echoTrap.firedStep).toBe(7);
    expect(summarizeMetrics(collapsing, { echoTrap }).echoTrap.signal).toBe('reward_std+entropy');
    // a stricter detector (3 consecutive steps) fires one step later
    expect(summarizeMetrics(collapsing, { echoTrap: { ...echoTrap, patience: 3 } }).echoTrap.firedStep).toBe(8);
  });

  it('formats a short text report', () => {
    const text = formatSummary(summarizeMetrics(rows, { echoTrap }));
    expect(text).toContain('steps: 4 (0..3)');
    expect(text).toContain('train/FrozenLake/success: first 0.100 @0, peak 0.500 @1, last 0.300 @3');
    expect(text).toContain('echo trap warning: not fired');
    expect(formatSummary(summarizeMetrics([], { echoTrap }))).toContain('steps: 0');
  });
});
