// The 95% Wilson score interval of a rate: the scorecard's success over episodes and the Echo Trap lesson's
// collapse and hold rates over runs both use it.

/** z for a two-sided 95% interval. */
export const Z95 = 1.959963984540054;

/**
 * Wilson score interval for `successes` out of `trials` (Wilson, 1927). Unlike the normal approximation it stays
 * inside [0, 1] and is sensible at 0 or n successes, which is where a small evaluation of a tiny agent often lands
 * (0/32 gives [0, 0.107], not [0, 0]).
 */
export function wilsonInterval(successes: number, trials: number, z = Z95): { lo: number; hi: number } {
  if (!Number.isInteger(trials) || trials < 1)
    throw new Error(`wilsonInterval: trials must be a positive integer, got ${trials}`);
  if (!Number.isInteger(successes) || successes < 0 || successes > trials) {
    throw new Error(`wilsonInterval: successes must be an integer in [0, ${trials}], got ${successes}`);
  }
  const p = successes / trials;
  const z2 = z * z;
  const denom = 1 + z2 / trials;
  const centre = (p + z2 / (2 * trials)) / denom;
  const half = (z / denom) * Math.sqrt((p * (1 - p)) / trials + z2 / (4 * trials * trials));
  // Clamp the floating-point dust at the ends (0/n must give exactly 0, n/n exactly 1).
  return {
    lo: successes === 0 ? 0 : Math.max(0, centre - half),
    hi: successes === trials ? 1 : Math.min(1, centre + half),
  };
}
