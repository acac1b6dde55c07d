import { describe, expect, it } from 'vitest';
import { EmaSmoother, emaSmooth } from '../../../src/metrics/ema';

describe('EMA smoothing', () => {
  it('matches a hand-computed debiased EMA', () => {
    // weight 0.5: acc1 = 0.5 -> 0.5 / (1 - 0.5) = 1; acc2 = 0.25 + 1.5 = 1.75 -> 1.75 / 0.75 = 7/3
    const out = emaSmooth([1, 3], 0.5);
    expect(out[0]).toBeCloseTo(1, 12);
    expect(out[1]).toBeCloseTo(7 / 3, 12);
  });

  it('leaves a constant series unchanged (no pull toward 0) and weight 0 is the identity', () => {
    for (const v of emaSmooth([0.2, 0.2, 0.2, 0.2], 0.9)) expect(v).toBeCloseTo(0.2, 12);
    expect(emaSmooth([3, -1, 5], 0)).toEqual([3, -1, 5]);
  });

  it('keeps gaps: NaN in, NaN out, and the gap is not folded in', () => {
    const out = emaSmooth([1, NaN, 3], 0.5);
    expect(out[0]).toBeCloseTo(1, 12);
    expect(out[1]).toBeNaN();
    expect(out[2]).toBeCloseTo(7 / 3, 12);
  });

  it('rejects a weight outside [0, 1)', () => {
    expect(() => new EmaSmoother(1)).toThrow(/weight/);
    expect(() => new EmaSmoother(-0.1)).toThrow(/weight/);
  });
});
