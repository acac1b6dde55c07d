// The few statistics a scorecard needs: a 95% interval for a success rate, pass@k, and a NaN-aware mean.

// The Wilson interval lives with the metrics, where the browser's lesson page can import it too.
export { wilsonInterval, Z95 } from '../metrics/wilson';

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
