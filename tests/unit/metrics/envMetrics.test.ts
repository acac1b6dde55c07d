import { describe, expect, it } from 'vitest';
import { aggregateEnvMetrics, envOutcomeFromRolloutState, turnMean, type EnvOutcome } from '../../../src/metrics/envMetrics';

const outcome = (o: Partial<EnvOutcome> & Pick<EnvOutcome, 'groupId'>): EnvOutcome => ({
  tag: 'SimpleSokoban',
  success: false,
  numActions: 0,
  actionIsEffective: 0,
  actionIsValid: 0,
  ...o,
});

// Two groups of two envs (group size 2). Only env 0 succeeds.
const batch: EnvOutcome[] = [
  outcome({ groupId: 0, success: true, numActions: 3, actionIsEffective: 1, actionIsValid: 1 }),
  outcome({ groupId: 0, success: false, numActions: 10, actionIsEffective: 0.5, actionIsValid: 0.75 }),
  outcome({ groupId: 1, success: false, numActions: 2, actionIsEffective: 0, actionIsValid: 0.5 }),
  outcome({ groupId: 1, success: false, numActions: 0, actionIsEffective: 0, actionIsValid: 0 }),
];

describe('turnMean', () => {
  it('is the per-turn mean of a flag, 0 for no turns', () => {
    expect(turnMean([true, false, true, true])).toBe(0.75);
    expect(turnMean([1, 0])).toBe(0.5);
    expect(turnMean([])).toBe(0);
  });
});

describe('aggregateEnvMetrics', () => {
  it('averages per tag and computes pass@k per group (hand-computed)', () => {
    const m = aggregateEnvMetrics(batch, { split: 'train' });
    expect(m['train/SimpleSokoban/success']).toBeCloseTo(1 / 4, 12);
    expect(m['train/SimpleSokoban/num_actions']).toBeCloseTo(15 / 4, 12);
    expect(m['train/SimpleSokoban/action_is_effective']).toBeCloseTo(1.5 / 4, 12);
    expect(m['train/SimpleSokoban/action_is_valid']).toBeCloseTo(2.25 / 4, 12);
    // group 0 has a success -> both its envs count 1; group 1 -> 0
    expect(m['train/SimpleSokoban/pass@2']).toBeCloseTo(2 / 4, 12);
    expect(Object.keys(m).some((k) => k.includes('non-zero'))).toBe(false);
  });

  it('adds non-zero/ means over the envs whose value is not 0', () => {
    const m = aggregateEnvMetrics(batch, { split: 'train', nonZero: true });
    expect(m['train/SimpleSokoban/non-zero/num_actions']).toBeCloseTo(15 / 3, 12);
    expect(m['train/SimpleSokoban/non-zero/action_is_effective']).toBeCloseTo(1.5 / 2, 12);
    expect(m['train/SimpleSokoban/non-zero/success']).toBe(1);
    const none = aggregateEnvMetrics([outcome({ groupId: 0 })], { split: 'train', nonZero: true });
    expect('train/SimpleSokoban/non-zero/success' in none).toBe(false);
  });

  it('divides by the configured env count of the tag, as RAGEN does', () => {
    const m = aggregateEnvMetrics(batch, { split: 'train', envCountByTag: { SimpleSokoban: 8 } });
    expect(m['train/SimpleSokoban/success']).toBeCloseTo(1 / 8, 12);
    expect(m['train/SimpleSokoban/pass@2']).toBeCloseTo(2 / 8, 12);
    expect(() => aggregateEnvMetrics(batch, { split: 'train', envCountByTag: { SimpleSokoban: 3 } })).toThrow(/4 env outcomes.*3/);
  });

  it('keeps tags apart and uses val-env/ for validation; pass@1 equals success', () => {
    const val = [
      outcome({ tag: 'SimpleSokoban', groupId: 0, success: true }),
      outcome({ tag: 'SimpleSokoban', groupId: 1 }),
      outcome({ tag: 'LargerSokoban', groupId: 2 }),
      outcome({ tag: 'LargerSokoban', groupId: 3 }),
      outcome({ tag: 'LargerSokoban', groupId: 4, success: true }),
      outcome({ tag: 'LargerSokoban', groupId: 5, success: true }),
    ];
    const m = aggregateEnvMetrics(val, { split: 'val' });
    expect(m['val-env/SimpleSokoban/success']).toBe(0.5);
    expect(m['val-env/SimpleSokoban/pass@1']).toBe(0.5);
    expect(m['val-env/LargerSokoban/success']).toBe(0.5);
    expect(m['val-env/LargerSokoban/pass@1']).toBe(0.5);
    expect(Object.keys(m).every((k) => k.startsWith('val-env/'))).toBe(true);
  });

  it('uses the configured group size in the pass@k name and aggregates extra counters', () => {
    const m = aggregateEnvMetrics(
      [outcome({ groupId: 0, success: true, extra: { success_find: 1 } }), outcome({ groupId: 0, extra: { success_find: 0 } })],
      { split: 'train', groupSize: 16, envCountByTag: { SimpleSokoban: 2 } },
    );
    expect(m['train/SimpleSokoban/pass@16']).toBe(1);
    expect(m['train/SimpleSokoban/success_find']).toBe(0.5);
  });

  it('rejects inconsistent input with a clear error', () => {
    expect(() => aggregateEnvMetrics([outcome({ groupId: 0 }), outcome({ groupId: 0, tag: 'FrozenLake' })], { split: 'train' })).toThrow(/mixes tags/);
    expect(() => aggregateEnvMetrics([outcome({ groupId: 0 }), outcome({ groupId: 0 }), outcome({ groupId: 1 })], { split: 'train' })).toThrow(/different sizes/);
    expect(() => aggregateEnvMetrics([outcome({ groupId: 0 }), outcome({ groupId: 0 })], { split: 'train', groupSize: 1 })).toThrow(/more than the group size/);
    expect(() => aggregateEnvMetrics([outcome({ groupId: 0, numActions: NaN })], { split: 'train' })).toThrow(/numActions/);
    expect(() => aggregateEnvMetrics([outcome({ groupId: -1 })], { split: 'train' })).toThrow(/groupId/);
    expect(aggregateEnvMetrics([], { split: 'train' })).toEqual({});
  });

  it('adapts an agent rollout state', () => {
    const state = {
      tag: 'FrozenLake',
      groupId: 3,
      success: true,
      status: { numActions: 4 },
      metrics: { 'FrozenLake/action_is_effective': 0.5, 'FrozenLake/action_is_valid': 1, 'FrozenLake/success': 1 },
    };
    expect(envOutcomeFromRolloutState(state)).toEqual({
      tag: 'FrozenLake',
      groupId: 3,
      success: true,
      numActions: 4,
      actionIsEffective: 0.5,
      actionIsValid: 1,
    });
    expect(() => envOutcomeFromRolloutState({ ...state, metrics: {} })).toThrow(/FrozenLake\/action_is_effective/);
  });
});
