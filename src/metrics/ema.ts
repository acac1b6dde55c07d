// Exponential moving average, the smoothing the paper's training curves use (spec §5.2: "metrics EMA-smoothed
// for plots"). Debiased like TensorBoard's and W&B's EMA slider, so the first points are not dragged toward 0:
//   acc_t = weight * acc_{t-1} + (1 - weight) * x_t,  acc_0 = 0,  smoothed_t = acc_t / (1 - weight^t)
// where t counts the finite values seen so far. A non-finite value (NaN: missing metric) is not folded in and
// its smoothed output is NaN, so a gap in the data stays a gap in the plot.

export class EmaSmoother {
  private acc = 0;
  private count = 0;

  /** weight: how much of the past each new point keeps (0 = no smoothing; 0.9 ≈ a 10-point window). */
  constructor(readonly weight = 0.9) {
    if (!(weight >= 0 && weight < 1)) throw new Error(`EMA weight must be in [0, 1), got ${weight}`);
  }

  /** Fold in one value and return the smoothed value (NaN for a non-finite input). */
  update(value: number): number {
    if (!Number.isFinite(value)) return NaN;
    this.acc = this.weight * this.acc + (1 - this.weight) * value;
    this.count += 1;
    return this.acc / (1 - this.weight ** this.count);
  }
}

/** The smoothed series of `values` (same length). */
export function emaSmooth(values: readonly number[], weight = 0.9): number[] {
  const ema = new EmaSmoother(weight);
  return values.map((v) => ema.update(v));
}
