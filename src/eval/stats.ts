// The few statistics a scorecard needs: a 95% interval for a success rate, pass@k, and a NaN-aware mean.

/** z for a two-sided 95% interval. */
export const Z95 = 1.959963984540054;

/**
 * Wilson score interval for `successes` out of `trials` (Wilson, 1927). Unlike the normal approximation it stays
 * inside [0, 1] and is sensible at 0 or n successes, which is where a small evaluation of a tiny agent often lands
 * (0/32 gives [0, 0.107], not [0, 0]).
 */
export function wilsonInterval(successes: number, trials: number, z = Z95): { lo: number; hi: number } {
  if (!Number.isInteger(trials) || trials < 1) throw new Error(`wilsonInterval: trials must be a positive integer, got ${trials}`);
  if (!Number.isInteger(successes) || successes < 0 || successes > trials) {
    throw new Error(`wilsonInterval: successes must be an integer in [0, ${trials}], got ${successes}`);
  }
  const p = successes / trials;
  const z2 = z * z;
  const denom = 1 + z2 / trials;
  const centre = (p + z2 / (2 * trials)) / denom;
  const half = (z / denom) * Math.sqrt((p * (1 - p)) / trials + z2 / (4 * trials * trials));
  // Clamp the floating-point dust at the ends (0/n must give exactly 0, n/n exactly 1).
  return { lo: successes === 0 ? 0 : Math.max(0, centre - half), hi: successes === trials ? 1 : Math.min(1, centre + half) };
}

/**
 * Unbiased pass@k from n samples of which c succeeded (Chen et al., 2021): 1 − C(n−c, k) / C(n, k), the chance
 * that k samples drawn without replacement contain a success. With n = k it is RAGEN's `pass@{group_size}`
 * (1 when any member of the group succeeded).
 */
export function passAtK(n: number, c: number, k: number): number {
  if (!Number.isInteger(n) || n < 1) throw new Error(`passAtK: n must be a positive integer, got ${n}`);
  if (!Number.isInteger(c) || c < 0 || c > n) throw new Error(`passAtK: c must be an integer in [0, ${n}], got ${c}`);
  if (!Number.isInteger(k) || k < 1 || k > n) throw new Error(`passAtK: k must be an integer in [1, ${n}], got ${k}`);
  if (n - c < k) return 1;
  // C(n-c, k) / C(n, k) as a running product: no big binomials.
  let fail = 1;
  for (let i = n - c + 1; i <= n; i++) fail *= 1 - k / i;
  return 1 - fail;
}

/** Mean of the finite values; NaN when there are none. */
export function finiteMean(values: readonly number[]): number {
  let sum = 0;
  let n = 0;
  for (const v of values) {
    if (Number.isFinite(v)) {
      sum += v;
      n++;
    }
  }
  return n === 0 ? NaN : sum / n;
}
