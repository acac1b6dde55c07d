import { describe, expect, it } from 'vitest';
import {
  CRITIC_KEYS,
  OPTIONAL_FIXED_KEYS,
  REQUIRED_FIXED_KEYS,
  REQUIRED_METRIC_KEYS,
  envMetricKey,
  isSuccessKey,
  missingRequiredKeys,
  parseSuccessKey,
  passAtName,
  requiredMetricKeys,
  successByTag,
  valSuccessKey,
} from '../../../src/metrics/keys';

// The metric contract of docs/architecture.md, copied from the design document (not from keys.ts).
const DESIGN_KEYS = [
  'step',
  'rollout/in_group_std',
  'rollout/chosen_in_group_std',
  'actor/entropy_loss',
  'actor/grad_norm',
  'actor/pg_loss',
  'actor/pg_clipfrac',
  'actor/ppo_kl',
  'response_length/mean',
  'reasoning_length/mean',
  'timing_s/step',
  'perf/throughput',
];

describe('metric keys', () => {
  it('requires every key of the docs/architecture.md contract, plus per-tag success keys', () => {
    const keys = requiredMetricKeys({
      trainTags: ['SimpleSokoban'],
      valTags: ['SimpleSokoban', 'LargerSokoban'],
      hasCritic: true,
    });
    for (const k of DESIGN_KEYS) expect(keys).toContain(k);
    expect(keys).toContain('critic/vf_loss');
    expect(keys).toContain('train/SimpleSokoban/success');
    expect(keys).toContain('val-env/SimpleSokoban/success');
    expect(keys).toContain('val-env/LargerSokoban/success');
    expect(keys).not.toContain('train/LargerSokoban/success');
    expect(new Set(keys).size).toBe(keys.length);
    expect([...REQUIRED_METRIC_KEYS].sort()).toEqual([...DESIGN_KEYS].sort());
  });

  it('does not require the critic loss without a critic (GRPO)', () => {
    const keys = requiredMetricKeys({ trainTags: ['Bandit'], valTags: ['Bandit', 'BanditTest'], hasCritic: false });
    expect(keys).not.toContain('critic/vf_loss');
    expect(keys).toContain('val-env/BanditTest/success');
  });

  it('documents every key once, with a meaning and what it mirrors', () => {
    const all = [...REQUIRED_FIXED_KEYS, ...CRITIC_KEYS, ...OPTIONAL_FIXED_KEYS];
    expect(new Set(all.map((d) => d.key)).size).toBe(all.length);
    for (const d of all) {
      expect(d.meaning.length).toBeGreaterThan(5);
      expect(d.mirrors.length).toBeGreaterThan(0);
    }
  });

  it('builds per-tag keys with RAGEN prefixes', () => {
    expect(envMetricKey('train', 'FrozenLake', 'num_actions')).toBe('train/FrozenLake/num_actions');
    expect(envMetricKey('val', 'FrozenLake', passAtName(16))).toBe('val-env/FrozenLake/pass@16');
    expect(() => envMetricKey('train', '', 'success')).toThrow(/tag/);
    expect(() => envMetricKey('train', 'a/b', 'success')).toThrow(/a\/b/);
    expect(() => envMetricKey('test' as never, 'Bandit', 'success')).toThrow(/split/);
    expect(() => passAtName(0)).toThrow(/group size/);
    expect(() => passAtName(2.5)).toThrow(/group size/);
  });

  it('lists the required keys no row holds', () => {
    const opts = { trainTags: ['Bandit'], valTags: ['Bandit'], hasCritic: true };
    const row = Object.fromEntries(requiredMetricKeys(opts).map((k) => [k, 0]));
    expect(missingRequiredKeys([row], opts)).toEqual([]);
    // val-env keys only on validation steps: spread over two rows is fine
    const { ['val-env/Bandit/success']: val, ...train } = row;
    expect(missingRequiredKeys([train, { step: 10, 'val-env/Bandit/success': val }], opts)).toEqual([]);
    expect(missingRequiredKeys([train], opts)).toEqual(['val-env/Bandit/success']);
  });
});

describe('parseSuccessKey: the one reader of success keys', () => {
  it('reads the split and tag of train/<Tag>/success and val-env/<Tag>/success, and nothing else', () => {
    expect(parseSuccessKey('train/FrozenLake/success')).toEqual({ split: 'train', tag: 'FrozenLake' });
    expect(parseSuccessKey(valSuccessKey('BanditTest'))).toEqual({ split: 'val', tag: 'BanditTest' });
    for (const key of [
      'train/Bandit/pass@8',
      'val/Bandit/success',
      'train/a/b/success',
      'train//success',
      'xtrain/Bandit/success',
      'success',
    ]) {
      expect(parseSuccessKey(key), key).toBeNull();
    }
    expect(isSuccessKey('train/Bandit/success', 'train')).toBe(true);
    expect(isSuccessKey('train/Bandit/success', 'val')).toBe(false);
    expect(isSuccessKey('val-env/Bandit/success')).toBe(true);
  });

  it('successByTag picks one split of a metrics row, by tag, in row order', () => {
    const row = {
      step: 3,
      'val-env/Bandit/success': 0.94,
      'train/Bandit/success': 0.5,
      'val-env/BanditTest/success': 0,
      'echo_trap/signal': 'x',
    };
    expect(successByTag(row, 'val')).toEqual({ Bandit: 0.94, BanditTest: 0 });
    expect(Object.keys(successByTag(row, 'val'))).toEqual(['Bandit', 'BanditTest']);
    expect(successByTag(row, 'train')).toEqual({ Bandit: 0.5 });
  });
});
