// Wilson intervals and pass@k against values computed by hand from their definitions.
import { describe, expect, it } from 'vitest';
import { Z95, passAtK, wilsonInterval } from '../../../src/eval/stats';

describe('wilsonInterval', () => {
  it('matches the closed form for 8/16 and is symmetric around 1/2', () => {
    // p = 0.5, n = 16: centre 0.5; half = z/(1+z²/n) * sqrt(0.25/16 + z²/(4·256)).
    const z2 = Z95 * Z95;
    const half = (Z95 / (1 + z2 / 16)) * Math.sqrt(0.25 / 16 + z2 / 1024);
    const { lo, hi } = wilsonInterval(8, 16);
    expect(lo).toBeCloseTo(0.5 - half, 12);
    expect(hi).toBeCloseTo(0.5 + half, 12);
    expect(hi - lo).toBeGreaterThan(0.4); // 16 trials say little
  });

  it('stays inside [0, 1] and is not degenerate at 0/n and n/n', () => {
    const zero = wilsonInterval(0, 32);
    expect(zero.lo).toBe(0);
    // Upper end for 0 successes: z²/(n + z²).
    expect(zero.hi).toBeCloseTo((Z95 * Z95) / (32 + Z95 * Z95), 12);
    const all = wilsonInterval(32, 32);
    expect(all.hi).toBe(1);
    expect(all.lo).toBeCloseTo(32 / (32 + Z95 * Z95), 12);
  });

  it('narrows as trials grow', () => {
    const small = wilsonInterval(5, 10);
    const large = wilsonInterval(500, 1000);
    expect(large.hi - large.lo).toBeLessThan((small.hi - small.lo) / 5);
  });

  it('names bad input', () => {
    expect(() => wilsonInterval(3, 0)).toThrow(/trials must be a positive integer/);
    expect(() => wilsonInterval(5, 4)).toThrow(/successes must be an integer in \[0, 4\]/);
  });
});

describe('passAtK', () => {
  it('is the chance that k draws without replacement contain a success', () => {
    // n = 4, c = 1, k = 2: 1 - C(3,2)/C(4,2) = 1 - 3/6.
    expect(passAtK(4, 1, 2)).toBeCloseTo(0.5, 12);
    // n = 5, c = 2, k = 3: 1 - C(3,3)/C(5,3) = 1 - 1/10.
    expect(passAtK(5, 2, 3)).toBeCloseTo(0.9, 12);
    // k = 1 is the plain success fraction.
    expect(passAtK(8, 3, 1)).toBeCloseTo(3 / 8, 12);
  });

  it('with n = k is RAGEN pass@group_size: 1 if any succeeded', () => {
    expect(passAtK(4, 0, 4)).toBe(0);
    expect(passAtK(4, 1, 4)).toBe(1);
  });

  it('names bad input', () => {
    expect(() => passAtK(4, 1, 5)).toThrow(/k must be an integer in \[1, 4\]/);
    expect(() => passAtK(4, 6, 2)).toThrow(/c must be an integer/);
  });
});
