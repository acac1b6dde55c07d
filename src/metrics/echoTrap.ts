// The echo-trap early warning (paper §4 / App. B.3, spec §6 and §7.1).
//
// The paper's collapse timeline: in-group reward std and policy entropy drop EARLY (the warning), and the reward
// plateau / drop and gradient-norm spikes come later and confirm an irreversible collapse (e.g. FrozenLake-PPO:
// reward std drops at step 40, reward mean collapses at 90, grad-norm spike at ~90). This detector watches the
// early signals one step at a time:
//   * baseline = mean of the first `baselineSteps` finite values of `rollout/in_group_std` and of
//     `actor/entropy_loss` (each signal separately; NaN values are skipped);
//   * after both baselines exist, a step is "low" when BOTH ratios value / baseline are below `fraction`;
//   * the warning fires at the step that completes `patience` consecutive low steps, and then stays on
//     (`echo_trap/warning` = 1 from that step on: the paper's collapses do not recover on their own).
// It also flags a gradient-norm spike, grad norm > `gradSpikeFactor` x the median of the previous
// `gradMedianWindow` finite grad norms, as the "collapse confirmed" signal.
//
// With `signals: 'reward_std'`, baselineSteps 10, fraction 0.1, patience 10 it reproduces RAGEN-2's
// reward-variance early-stopping rule (spec §4.7 (b)).
//
// The whole state is plain JSON (`toState` / `fromState`) so `--resume` continues the same detector.

/** Which early signals must both be low for the warning. */
export type EchoTrapSignals = 'reward_std_and_entropy' | 'reward_std';

/**
 * The detector's settings. A run's `echoTrap` section (src/starpo/config.ts) is exactly this shape and holds the
 * defaults and the documentation of every field; this file depends on nothing outside src/metrics, so it names the
 * shape again instead of importing it.
 */
export interface EchoTrapConfig {
  baselineSteps: number;
  fraction: number;
  patience: number;
  signals: EchoTrapSignals;
  gradSpikeFactor: number;
  gradMedianWindow: number;
  gradMinHistory: number;
}

/** What the detector concluded so far. */
export interface EchoTrapReport {
  fired: boolean;
  /** The step at which the warning fired, or null. */
  firstFiredStep: number | null;
  /** A human sentence explaining why it fired, or null. */
  reason: string | null;
  /** The first step with a gradient-norm spike, or null. */
  firstGradNormSpikeStep: number | null;
}

/** The detector's complete state, as plain JSON. */
export interface EchoTrapState {
  config: EchoTrapConfig;
  lastStep: number | null;
  /** The first finite values of each signal, until `baselineSteps` of them were collected. */
  rewardStdBaselineValues: number[];
  entropyBaselineValues: number[];
  /** The step whose value completed each baseline (for the reason text). */
  baselineCompleteStep: number | null;
  lowStreak: number;
  /** The last `gradMedianWindow` finite grad norms. */
  gradNormHistory: number[];
  /** Best mean train success seen so far (for the reason text), with its step. */
  peakSuccess: number | null;
  peakSuccessStep: number | null;
  report: EchoTrapReport;
}

export const REWARD_STD_KEY = 'rollout/in_group_std';
export const ENTROPY_KEY = 'actor/entropy_loss';
export const GRAD_NORM_KEY = 'actor/grad_norm';
const TRAIN_SUCCESS_RE = /^train\/[^/]+\/success$/;

function validateConfig(c: EchoTrapConfig): void {
  const positiveInt = (name: keyof EchoTrapConfig) => {
    const v = c[name] as number;
    if (!Number.isInteger(v) || v < 1) throw new Error(`echo trap: ${name} must be a positive integer, got ${String(v)}`);
  };
  positiveInt('baselineSteps');
  positiveInt('patience');
  positiveInt('gradMedianWindow');
  positiveInt('gradMinHistory');
  if (!(c.fraction > 0 && c.fraction <= 1)) throw new Error(`echo trap: fraction must be in (0, 1], got ${c.fraction}`);
  if (!(c.gradSpikeFactor > 1)) throw new Error(`echo trap: gradSpikeFactor must be > 1, got ${c.gradSpikeFactor}`);
  if (c.gradMinHistory > c.gradMedianWindow) {
    throw new Error(`echo trap: gradMinHistory (${c.gradMinHistory}) cannot exceed gradMedianWindow (${c.gradMedianWindow})`);
  }
  if (c.signals !== 'reward_std_and_entropy' && c.signals !== 'reward_std') {
    throw new Error(`echo trap: unknown signals "${String(c.signals)}" (expected "reward_std_and_entropy" or "reward_std")`);
  }
}

function mean(values: readonly number[]): number {
  return values.reduce((a, b) => a + b, 0) / values.length;
}

function median(values: readonly number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

/** value / baseline, or NaN when either is unusable (a baseline of 0 carries no scale to fall from). */
function ratio(value: number | undefined, baseline: number): number {
  if (value === undefined || !Number.isFinite(value) || !(baseline > 0)) return NaN;
  return value / baseline;
}

export class EchoTrapDetector {
  private s: EchoTrapState;

  constructor(config: EchoTrapConfig) {
    validateConfig(config);
    this.s = {
      config: { ...config },
      lastStep: null,
      rewardStdBaselineValues: [],
      entropyBaselineValues: [],
      baselineCompleteStep: null,
      lowStreak: 0,
      gradNormHistory: [],
      peakSuccess: null,
      peakSuccessStep: null,
      report: { fired: false, firstFiredStep: null, reason: null, firstGradNormSpikeStep: null },
    };
  }

  /** Rebuild a detector from `toState()` output (e.g. read back from a checkpoint). */
  static fromState(state: EchoTrapState): EchoTrapDetector {
    if (!state || typeof state !== 'object' || !state.config || !state.report) {
      throw new Error('echo trap: fromState needs an object produced by toState()');
    }
    const d = new EchoTrapDetector(state.config);
    d.s = structuredClone(state);
    return d;
  }

  /** A deep copy of the state, safe to JSON.stringify. */
  toState(): EchoTrapState {
    return structuredClone(this.s);
  }

  get config(): Readonly<EchoTrapConfig> {
    return this.s.config;
  }

  report(): EchoTrapReport {
    return { ...this.s.report };
  }

  private baselinesReady(): boolean {
    const n = this.s.config.baselineSteps;
    const stdReady = this.s.rewardStdBaselineValues.length >= n;
    return this.s.config.signals === 'reward_std' ? stdReady : stdReady && this.s.entropyBaselineValues.length >= n;
  }

  /**
   * Feed one training step's metrics (steps must increase). Returns the `echo_trap/*` metrics of this step:
   * `echo_trap/warning`, `echo_trap/reward_std_ratio`, `echo_trap/entropy_ratio` (NaN while the baseline is
   * being collected) and `echo_trap/grad_norm_spike`.
   */
  update(step: number, metrics: Readonly<Record<string, number>>): Record<string, number> {
    const s = this.s;
    const c = s.config;
    if (!Number.isFinite(step)) throw new Error(`echo trap: step must be a finite number, got ${step}`);
    if (s.lastStep !== null && step <= s.lastStep) {
      throw new Error(`echo trap: steps must increase, got step ${step} after step ${s.lastStep}`);
    }
    s.lastStep = step;
    this.trackSuccess(step, metrics);

    const rewardStd = metrics[REWARD_STD_KEY];
    const entropy = metrics[ENTROPY_KEY];
    let stdRatio = NaN;
    let entropyRatio = NaN;

    if (!this.baselinesReady()) {
      // This step feeds the baselines; it is never compared against a baseline it helped build.
      if (Number.isFinite(rewardStd) && s.rewardStdBaselineValues.length < c.baselineSteps) s.rewardStdBaselineValues.push(rewardStd);
      if (Number.isFinite(entropy) && s.entropyBaselineValues.length < c.baselineSteps) s.entropyBaselineValues.push(entropy);
      if (this.baselinesReady()) s.baselineCompleteStep = step;
    } else {
      stdRatio = ratio(rewardStd, mean(s.rewardStdBaselineValues));
      // In 'reward_std' mode the entropy ratio is informative only (its baseline may hold fewer values).
      if (s.entropyBaselineValues.length > 0) entropyRatio = ratio(entropy, mean(s.entropyBaselineValues));
      const needEntropy = c.signals === 'reward_std_and_entropy';
      const usable = Number.isFinite(stdRatio) && (!needEntropy || Number.isFinite(entropyRatio));
      // A step without usable numbers neither extends nor breaks the streak ("skip NaN").
      if (usable) {
        const low = stdRatio < c.fraction && (!needEntropy || entropyRatio < c.fraction);
        s.lowStreak = low ? s.lowStreak + 1 : 0;
        if (low && s.lowStreak >= c.patience && !s.report.fired) {
          s.report.fired = true;
          s.report.firstFiredStep = step;
          s.report.reason = this.reasonText(step, stdRatio, entropyRatio);
        }
      }
    }

    const spike = this.checkGradNorm(step, metrics[GRAD_NORM_KEY]);
    return {
      'echo_trap/warning': s.report.fired ? 1 : 0,
      'echo_trap/reward_std_ratio': stdRatio,
      'echo_trap/entropy_ratio': entropyRatio,
      'echo_trap/grad_norm_spike': spike ? 1 : 0,
    };
  }

  private checkGradNorm(step: number, gradNorm: number | undefined): boolean {
    const s = this.s;
    const c = s.config;
    if (gradNorm === undefined || !Number.isFinite(gradNorm)) return false; // a skipped optimizer step logs NaN
    const spike = s.gradNormHistory.length >= c.gradMinHistory && gradNorm > c.gradSpikeFactor * median(s.gradNormHistory);
    if (spike && s.report.firstGradNormSpikeStep === null) s.report.firstGradNormSpikeStep = step;
    s.gradNormHistory.push(gradNorm);
    if (s.gradNormHistory.length > c.gradMedianWindow) s.gradNormHistory.shift();
    return spike;
  }

  private trackSuccess(step: number, metrics: Readonly<Record<string, number>>): void {
    const values = Object.entries(metrics)
      .filter(([k, v]) => TRAIN_SUCCESS_RE.test(k) && Number.isFinite(v))
      .map(([, v]) => v);
    if (values.length === 0) return;
    const success = mean(values);
    if (this.s.peakSuccess === null || success > this.s.peakSuccess) {
      this.s.peakSuccess = success;
      this.s.peakSuccessStep = step;
    }
  }

  private reasonText(step: number, stdRatio: number, entropyRatio: number): string {
    const c = this.s.config;
    const pct = (r: number) => `${(r * 100).toFixed(0)}%`;
    const parts = [`${REWARD_STD_KEY} at ${pct(stdRatio)}`];
    if (c.signals === 'reward_std_and_entropy') parts.push(`${ENTROPY_KEY} at ${pct(entropyRatio)}`);
    let text =
      `echo trap warning at step ${step}: ${parts.join(' and ')} of their early baseline ` +
      `(mean of the first ${c.baselineSteps} steps, complete at step ${this.s.baselineCompleteStep}), ` +
      `below ${pct(c.fraction)} for ${c.patience} consecutive steps`;
    if (this.s.peakSuccess !== null) {
      text += `; train success peaked at ${this.s.peakSuccess.toFixed(3)} (step ${this.s.peakSuccessStep})`;
    }
    return text;
  }
}
