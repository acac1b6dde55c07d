import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { applyKlInReward, klEstimate, klLoss, klPenalty, type KlEstimator } from '../../../src/starpo/kl';

beforeAll(async () => {
  await tf.setBackend('cpu');
});

const f32 = (xs: number[]) => Float32Array.from(xs);

describe('KL estimators on known numbers', () => {
  it('d = logp - logref = +1 and -1', () => {
    // d = +1: k1 = 1, |d| = 1, k2 = 0.5, k3 = e^{-1} - (-1) - 1 = e^{-1}.
    expect(klEstimate(-1, -2, 'kl')).toBe(1);
    expect(klEstimate(-1, -2, 'abs')).toBe(1);
    expect(klEstimate(-1, -2, 'mse')).toBe(0.5);
    expect(klEstimate(-1, -2, 'low_var_kl')).toBeCloseTo(Math.exp(-1), 12);
    // d = -1: k1 = -1, |d| = 1, k2 = 0.5, k3 = e^{1} - 1 - 1 = e - 2.
    expect(klEstimate(-2, -1, 'kl')).toBe(-1);
    expect(klEstimate(-2, -1, 'abs')).toBe(1);
    expect(klEstimate(-2, -1, 'mse')).toBe(0.5);
    expect(klEstimate(-2, -1, 'low_var_kl')).toBeCloseTo(Math.E - 2, 12);
  });

  it('k3 is never negative, also for tiny differences in float32 tensors', () => {
    const ds = [-5, -1, -1e-3, -1e-5, -1e-7, 0, 1e-7, 1e-5, 1e-3, 0.3, 2, 7];
    for (const d of ds) expect(klEstimate(d, 0, 'low_var_kl')).toBeGreaterThanOrEqual(0);
    const k3 = tf.tidy(() =>
      Array.from(klPenalty(tf.tensor2d([ds]), tf.zeros([1, ds.length]), 'low_var_kl').dataSync()),
    );
    k3.forEach((k) => expect(k).toBeGreaterThanOrEqual(0));
  });

  it('k3 is clamped to 10, with a finite (zero) gradient where clamped', () => {
    // d = -30: x = 30 -> clamped to 20, e^20 - 20 - 1 >> 10 -> 10.  d = +30: x = -20, e^-20 + 20 - 1 = 19 -> 10.
    expect(klEstimate(-30, 0, 'low_var_kl')).toBe(10);
    expect(klEstimate(30, 0, 'low_var_kl')).toBe(10);
    const grad = tf.tidy(() => {
      const g = tf.grad((lp: tf.Tensor) => tf.sum(klPenalty(lp, tf.zeros([1, 3]), 'low_var_kl')));
      return Array.from(g(tf.tensor2d([[-300, 0.5, 300]])).dataSync());
    });
    expect(Math.abs(grad[0])).toBe(0);
    expect(Math.abs(grad[2])).toBe(0);
    // d k3 / d logp with x = -d: d/dd (e^{-d} + d - 1) = 1 - e^{-d}; at d = 0.5 -> 1 - e^{-0.5}.
    expect(grad[1]).toBeCloseTo(1 - Math.exp(-0.5), 5);
  });

  it('tensor and number versions agree', () => {
    const lp = [-0.3, -2.5, -1.0, -4.0];
    const ref = [-0.2, -1.5, -1.7, -0.1];
    for (const e of ['kl', 'abs', 'mse', 'low_var_kl'] as KlEstimator[]) {
      const t = tf.tidy(() => Array.from(klPenalty(tf.tensor2d([lp]), tf.tensor2d([ref]), e).dataSync()));
      t.forEach((v, i) => expect(v).toBeCloseTo(klEstimate(lp[i], ref[i], e), 5));
    }
  });

  it('rejects an unknown estimator', () => {
    expect(() => klEstimate(0, 0, 'full' as never)).toThrow(/unknown KL estimator 'full'/);
  });
});

describe('klLoss', () => {
  it('token-means the estimator over loss tokens', () => {
    // d on loss tokens: 0.5, -0.25, 1 -> k1 mean = 1.25 / 3; the masked token (d = 9) does not count.
    const v = tf.tidy(
      () =>
        klLoss(
          tf.tensor2d([[-1, -2, 0, 9]]),
          tf.tensor2d([[-1.5, -1.75, -1, 0]]),
          tf.tensor2d([[1, 1, 1, 0]]),
          'kl',
        ).dataSync()[0],
    );
    expect(v).toBeCloseTo(1.25 / 3, 6);
  });
});

describe('applyKlInReward', () => {
  it('subtracts beta x KL(old, ref) on loss tokens only and reports critic/kl', () => {
    // Row 0: loss tokens 1, 2 with old - ref = 0.2 and -0.1; terminal reward 1 on token 2.
    // Row 1: loss token 0 with old - ref = 0.4.
    // beta 0.5 -> r = [0, -0.1, 1 + 0.05, 0] and [-0.2, 0]; critic/kl = mean(mean(0.2, -0.1), 0.4) = (0.05 + 0.4) / 2.
    const mask = [f32([0, 1, 1, 0]), f32([1, 0])];
    const rewards = [f32([0, 0, 1, 0]), f32([0, 0])];
    const old = [f32([7, -1.0, -2.1, 3]), f32([-0.6, 5])];
    const ref = [f32([-9, -1.2, -2.0, 8]), f32([-1.0, -5])];
    const { rewards: r, metrics } = applyKlInReward(rewards, old, ref, mask, 0.5, 'kl');
    const expected = [
      [0, -0.1, 1.05, 0],
      [-0.2, 0],
    ];
    expected.forEach((row, i) => row.forEach((x, t) => expect(r[i][t]).toBeCloseTo(x, 5)));
    expect(metrics['critic/kl']).toBeCloseTo((0.05 + 0.4) / 2, 5);
    expect(metrics['critic/kl_coeff']).toBe(0.5);
  });

  it('with beta = 0 (StarPO-S) leaves the rewards as they are', () => {
    const { rewards } = applyKlInReward([f32([0, 2])], [f32([-1, -1])], [f32([-3, -3])], [f32([1, 1])], 0);
    expect(Array.from(rewards[0])).toEqual([0, 2]);
  });

  it('rejects a negative beta and mismatched rows', () => {
    expect(() => applyKlInReward([f32([0])], [f32([0])], [f32([0])], [f32([1])], -1)).toThrow(/beta/);
    expect(() => applyKlInReward([f32([0])], [f32([0, 1])], [f32([0])], [f32([1])], 0.1)).toThrow(
      /oldLogProbs row 0 has length 2/,
    );
  });
});
