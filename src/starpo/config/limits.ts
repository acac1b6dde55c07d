// The upper bounds of the run config's numbers, in one place: the schema (./schema.ts, ./filterSchema.ts) applies
// them with everything else before any work, and docs/config.md shows each key's range. Far above any run this
// project makes, low enough that a typo (an extra zero, 2^53) is refused in one line instead of hanging a pre-check
// or allocating gigabytes. A key without a bound of its own named here is a count (`count`) or a real (`real`).
export const CONFIG_LIMITS = {
  /** Any count: steps, groups, tokens, sizes, frequencies. */
  count: 1_000_000,
  /** Turns per episode (RAGEN 5): every turn's history is rendered by the context pre-check. */
  turns: 100,
  /** Primitive actions per turn or per episode (RAGEN 5 and 10). */
  actions: 10_000,
  /** Seeds (env seeds and the sampling seed): below 2^31, which every generator takes as it is. */
  seed: 2 ** 31 - 1,
  /** Model widths (hidden size, MLP width). */
  width: 65_536,
  /** Learning rates, coefficients, clip ranges and other real-valued knobs. */
  real: 1_000_000,
  /** Sampling temperatures. */
  temperature: 100,
} as const;
