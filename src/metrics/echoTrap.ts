// The echo-trap early warning (paper §4 / App. B.3, RAGEN-2's template collapse; spec §4.7, §6, §7.1).
//
// The paper's collapse timeline: in-group reward std and policy entropy drop EARLY (the warning), and the reward
// plateau / drop and gradient-norm spikes come later and confirm an irreversible collapse (e.g. FrozenLake-PPO:
// reward std drops at step 40, reward mean collapses at 90, grad-norm spike at ~90). RAGEN-2 adds what the entropy
// misses: reasoning can stay varied while it stops depending on the input (template collapse), which its MI
// diagnostics measure (src/metrics/collapse.ts). This detector watches three signals, one step at a time:
//   R = rollout/in_group_std                                  (the task's learning signal)
//   E = actor/entropy_loss                                    (entropy collapse)
//   M = collapse_<miSample>_sample/mi_zscore_ema              (template collapse; logged every collapse.computeFreq
//                                                              steps only, so between two measurements the latest
//                                                              one stands)
// The rule:
//   * baselines: R and E each average their first `baselineSteps` finite values, M its first `miBaselineValues`
//     (NaN values are skipped; a step that feeds a baseline is never compared against it);
//   * ratios: value / baseline (NaN while the baseline is incomplete, or when the baseline is <= 0: no scale to fall
//     from). A signal is low when its ratio is below its threshold: R below `fraction`, E below `entropyFraction`,
//     M below `miFraction`;
//   * a step is low when R is low AND, by `signals`:
//       'reward_std_and_entropy_or_mi' (default): E or M is low (whichever is known: without collapse diagnostics this
//                                      is the paper's rule);
//       'reward_std_and_entropy':      E is low (the paper's rule);
//       'reward_std':                  nothing more (with baselineSteps 10, fraction 0.1, patience 10 it reproduces
//                                      RAGEN-2's reward-variance early stopping, spec §4.7 (b));
//     a step whose needed ratios are all unknown neither extends nor breaks the streak;
//   * the warning fires at the step that completes `patience` consecutive low steps, and then stays on
//     (`echo_trap/warning` = 1 from that step on: the paper's collapses do not recover on their own).
//     `echo_trap/signal` names what fired: the low signals of that step, '+'-joined from reward_std, entropy,
//     mi_zscore_ema (e.g. 'reward_std+mi_zscore_ema'); it is on every row from the firing step on.
// Collapse or convergence? Low in-group reward std has two causes. In the echo trap the policy keeps training on
// groups whose rollouts all got the same reward: their advantages are the critic's small errors, whitened up to unit
// size (RAGEN-2: the task gradient is weak, so what else is in the update takes over). A converged policy has low std
// too, because every rollout succeeds, but when its update skips the agreeing groups (StarPO-S without zero-std
// groups keeps nothing then) no noise is trained on. So a step counts towards the WARNING only when the groups the
// update trained on had low std as well: `rollout/chosen_in_group_std` below `fraction` of the same baseline (vanilla
// StarPO trains on every group, so there it is the same number); a row without that key is read as training on
// every group (the rule before the split). A step with low std whose update trained on nothing
// (`rollout/empty_after_filter` = 1) or only on groups that still disagree, while the training success is within
// CONVERGED_TOLERANCE of its best so far, counts towards CONVERGED instead: `echo_trap/converged` turns 1 after
// `patience` such steps in a row and stays on, a separate mark on the charts, not a warning.
//
// It also flags a gradient-norm spike, grad norm > `gradSpikeFactor` x the median of the previous `gradMedianWindow`
// finite grad norms, as the "collapse confirmed" signal.
//
// The whole state is plain JSON (`toState` / `fromState`) so `--resume` continues the same detector.

import { isSuccessKey } from './keys';

/** Which signals the warning needs besides the reward std (see the rule above). */
export type EchoTrapSignals = 'reward_std_and_entropy_or_mi' | 'reward_std_and_entropy' | 'reward_std';
export const ECHO_TRAP_SIGNALS: readonly EchoTrapSignals[] = [
  'reward_std_and_entropy_or_mi',
  'reward_std_and_entropy',
  'reward_std',
];

/** Which collapse-diagnostics sample the MI signal reads. */
export type EchoTrapMiSample = 'first_turn' | 'trajectory';

/**
 * The detector's settings. A run's `echoTrap` section (src/starpo/config/schema.ts) is exactly this shape and holds
 * the defaults and the documentation of every field; this file depends on nothing outside src/metrics, so it names
 * the shape again instead of importing it.
 */
export interface EchoTrapConfig {
  baselineSteps: number;
  fraction: number;
  entropyFraction: number;
  miFraction: number;
  miBaselineValues: number;
  miSample: EchoTrapMiSample;
  patience: number;
  signals: EchoTrapSignals;
  gradSpikeFactor: number;
  gradMedianWindow: number;
  gradMinHistory: number;
}

/** The names `echo_trap/signal` joins. */
export type EchoTrapSignalName = 'reward_std' | 'entropy' | 'mi_zscore_ema';

/** What the detector concluded so far. */
export interface EchoTrapReport {
  fired: boolean;
  /** The step at which `echo_trap/converged` turned 1 (low reward std, nothing trained on it, success at its best), or null. */
  convergedStep: number | null;
  /** The step at which the warning fired, or null. */
  firstFiredStep: number | null;
  /** What fired, as logged in `echo_trap/signal` (e.g. 'reward_std+entropy'), or null. */
  signal: string | null;
  /** A human sentence explaining why it fired, or null. */
  reason: string | null;
  /** The first step with a gradient-norm spike, or null. */
  firstGradNormSpikeStep: number | null;
}

/** The detector's complete state, as plain JSON. */
export interface EchoTrapState {
  config: EchoTrapConfig;
  lastStep: number | null;
  /** The first finite values of each signal, until its baseline is complete. */
  rewardStdBaselineValues: number[];
  entropyBaselineValues: number[];
  miBaselineValues: number[];
  /** The step whose value completed the reward-std baseline (and the entropy one when the rule needs it). */
  baselineCompleteStep: number | null;
  /** The ratio of the latest MI measurement to its baseline (held between measurements), or null. */
  miRatio: number | null;
  lowStreak: number;
  /** Consecutive converged steps (see the rule above). */
  convergedStreak: number;
  /** The last `gradMedianWindow` finite grad norms. */
  gradNormHistory: number[];
  /** Best mean train success seen so far (for the reason text), with its step. */
  peakSuccess: number | null;
  peakSuccessStep: number | null;
  report: EchoTrapReport;
}

export const REWARD_STD_KEY = 'rollout/in_group_std';
/** The in-group reward std of the groups the update trained on (the filter's kept groups). */
export const TRAINED_STD_KEY = 'rollout/chosen_in_group_std';
/** 1 when the filter kept no group, so the step made no update (RAGEN-2's filter, src/starpo/filter.ts). */
export const EMPTY_AFTER_FILTER_KEY = 'rollout/empty_after_filter';
/**
 * "Success at its peak" for convergence: the step's training success is at most this far below its best so far (the
 * lesson's own hold tolerance, src/metrics/lessonVerdict.ts). Keeps an arm whose format broke (every rollout
 * fails, std 0, nothing kept) from reading as converged.
 */
export const CONVERGED_TOLERANCE = 0.1;
export const ENTROPY_KEY = 'actor/entropy_loss';
export const GRAD_NORM_KEY = 'actor/grad_norm';
/** The key `echo_trap/signal` is logged under (a text value: src/metrics/jsonl.ts TEXT_METRIC_KEYS). */
export const SIGNAL_KEY = 'echo_trap/signal';

/** The metric the MI signal reads. */
export function miKey(sample: EchoTrapMiSample): string {
  return `collapse_${sample}_sample/mi_zscore_ema`;
}

function validateConfig(c: EchoTrapConfig): void {
  const positiveInt = (name: keyof EchoTrapConfig) => {
    const v = c[name] as number;
    if (!Number.isInteger(v) || v < 1)
      throw new Error(`echo trap: ${name} must be a positive integer, got ${String(v)}`);
  };
  positiveInt('baselineSteps');
  positiveInt('miBaselineValues');
  positiveInt('patience');
  positiveInt('gradMedianWindow');
  positiveInt('gradMinHistory');
  for (const name of ['fraction', 'entropyFraction', 'miFraction'] as const) {
    if (!(c[name] > 0 && c[name] <= 1)) throw new Error(`echo trap: ${name} must be in (0, 1], got ${c[name]}`);
  }
  if (!(c.gradSpikeFactor > 1)) throw new Error(`echo trap: gradSpikeFactor must be > 1, got ${c.gradSpikeFactor}`);
  if (c.gradMinHistory > c.gradMedianWindow) {
    throw new Error(
      `echo trap: gradMinHistory (${c.gradMinHistory}) cannot exceed gradMedianWindow (${c.gradMedianWindow})`,
    );
  }
  if (!ECHO_TRAP_SIGNALS.includes(c.signals)) {
    throw new Error(
      `echo trap: unknown signals "${String(c.signals)}" (expected ${ECHO_TRAP_SIGNALS.map((s) => `"${s}"`).join(', ')})`,
    );
  }
  if (c.miSample !== 'first_turn' && c.miSample !== 'trajectory') {
    throw new Error(`echo trap: unknown miSample "${String(c.miSample)}" (expected "first_turn" or "trajectory")`);
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

/** A row's value of `key` when it is a finite number, else NaN (missing, NaN, or a text metric). */
function numberAt(metrics: Readonly<Record<string, unknown>>, key: string): number {
  const v = metrics[key];
  return typeof v === 'number' && Number.isFinite(v) ? v : NaN;
}

/** value / baseline, or NaN when either is unusable (a baseline of 0 carries no scale to fall from). */
function ratio(value: number, baseline: number): number {
  if (!Number.isFinite(value) || !(baseline > 0)) return NaN;
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
      miBaselineValues: [],
      baselineCompleteStep: null,
      miRatio: null,
      lowStreak: 0,
      convergedStreak: 0,
      gradNormHistory: [],
      peakSuccess: null,
      peakSuccessStep: null,
      report: {
        fired: false,
        convergedStep: null,
        firstFiredStep: null,
        signal: null,
        reason: null,
        firstGradNormSpikeStep: null,
      },
    };
  }

  /**
   * Rebuild a detector from `toState()` output (e.g. read back from a checkpoint). A state without the MI signal's
   * settings and fields (a checkpoint written by a detector without that signal) takes them from `defaults` (the
   * run's current `echoTrap` config) and keeps its saved settings, so the run goes on with the rule it started with.
   */
  static fromState(state: EchoTrapState, defaults?: EchoTrapConfig): EchoTrapDetector {
    if (!state || typeof state !== 'object' || !state.config || !state.report) {
      throw new Error('echo trap: fromState needs an object produced by toState()');
    }
    const d = new EchoTrapDetector({ ...defaults, ...state.config } as EchoTrapConfig);
    const saved = structuredClone(state);
    d.s = {
      ...d.s,
      ...saved,
      config: d.s.config,
      miBaselineValues: saved.miBaselineValues ?? [],
      miRatio: saved.miRatio ?? null,
      convergedStreak: saved.convergedStreak ?? 0,
      report: {
        ...saved.report,
        signal: saved.report.signal ?? null,
        convergedStep: saved.report.convergedStep ?? null,
      },
    };
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

  /** The text metrics of the current row: `echo_trap/signal` once the warning fired, else nothing. */
  labels(): Record<string, string> {
    return this.s.report.signal === null ? {} : { [SIGNAL_KEY]: this.s.report.signal };
  }

  private needsEntropy(): boolean {
    return this.s.config.signals === 'reward_std_and_entropy';
  }

  /** The reward-std baseline (and the entropy one, when the rule needs it) are complete. */
  private baselinesReady(): boolean {
    const n = this.s.config.baselineSteps;
    const stdReady = this.s.rewardStdBaselineValues.length >= n;
    return this.needsEntropy() ? stdReady && this.s.entropyBaselineValues.length >= n : stdReady;
  }

  /**
   * Feed one training step's metrics (steps must increase; text values are ignored). Returns the numeric
   * `echo_trap/*` metrics of this step: `echo_trap/warning`, `echo_trap/reward_std_ratio`, `echo_trap/entropy_ratio`,
   * `echo_trap/mi_ratio` (NaN while unknown) and `echo_trap/grad_norm_spike`. `labels()` then gives the text one.
   */
  update(step: number, metrics: Readonly<Record<string, unknown>>): Record<string, number> {
    const s = this.s;
    const c = s.config;
    if (!Number.isFinite(step)) throw new Error(`echo trap: step must be a finite number, got ${step}`);
    if (s.lastStep !== null && step <= s.lastStep) {
      throw new Error(`echo trap: steps must increase, got step ${step} after step ${s.lastStep}`);
    }
    s.lastStep = step;
    const success = this.trackSuccess(step, metrics);

    const rewardStd = numberAt(metrics, REWARD_STD_KEY);
    const entropy = numberAt(metrics, ENTROPY_KEY);
    let stdRatio = NaN;
    let trainedStdRatio = NaN;
    let entropyRatio = NaN;
    const miRatio = this.trackMi(numberAt(metrics, miKey(c.miSample)));

    if (!this.baselinesReady()) {
      // This step feeds the baselines; it is never compared against a baseline it helped build.
      if (Number.isFinite(rewardStd) && s.rewardStdBaselineValues.length < c.baselineSteps)
        s.rewardStdBaselineValues.push(rewardStd);
      if (Number.isFinite(entropy) && s.entropyBaselineValues.length < c.baselineSteps)
        s.entropyBaselineValues.push(entropy);
      if (this.baselinesReady()) s.baselineCompleteStep = step;
    } else {
      // The entropy baseline may still be filling when the rule does not need it.
      if (Number.isFinite(entropy) && s.entropyBaselineValues.length < c.baselineSteps)
        s.entropyBaselineValues.push(entropy);
      else if (s.entropyBaselineValues.length >= c.baselineSteps)
        entropyRatio = ratio(entropy, mean(s.entropyBaselineValues));
      const stdBaseline = mean(s.rewardStdBaselineValues);
      stdRatio = ratio(rewardStd, stdBaseline);
      trainedStdRatio = this.trainedStdRatio(metrics, rewardStd, stdBaseline);
      // The trap needs the trained-on groups low too; a low step whose update skipped them may be convergence.
      const trainedLow = trainedStdRatio < c.fraction;
      const low = this.lowSignals(stdRatio, trainedLow, entropyRatio, miRatio);
      this.trackConvergence(step, stdRatio, trainedLow, success);
      // A step without usable numbers neither extends nor breaks the streak ("skip NaN").
      if (low !== null) {
        s.lowStreak = low.length > 0 ? s.lowStreak + 1 : 0;
        if (low.length > 0 && s.lowStreak >= c.patience && !s.report.fired) {
          s.report.fired = true;
          s.report.firstFiredStep = step;
          s.report.signal = low.join('+');
          s.report.reason = this.reasonText(step, low, {
            reward_std: stdRatio,
            entropy: entropyRatio,
            mi_zscore_ema: miRatio,
          });
        }
      }
    }

    const spike = this.checkGradNorm(step, numberAt(metrics, GRAD_NORM_KEY));
    return {
      'echo_trap/warning': s.report.fired ? 1 : 0,
      'echo_trap/converged': s.report.convergedStep !== null ? 1 : 0,
      'echo_trap/reward_std_ratio': stdRatio,
      'echo_trap/trained_std_ratio': trainedStdRatio,
      'echo_trap/entropy_ratio': entropyRatio,
      'echo_trap/mi_ratio': miRatio,
      'echo_trap/grad_norm_spike': spike ? 1 : 0,
    };
  }

  /**
   * The signals that make this step low (reward_std first), [] for a step that is not low, or null when the rule
   * cannot tell (its ratios are unknown). The reward std counts as low only when the trained-on groups' std is low too.
   */
  private lowSignals(
    stdRatio: number,
    trainedLow: boolean,
    entropyRatio: number,
    miRatio: number,
  ): EchoTrapSignalName[] | null {
    const c = this.s.config;
    if (!Number.isFinite(stdRatio)) return null;
    const stdLow = stdRatio < c.fraction && trainedLow;
    if (c.signals === 'reward_std') return stdLow ? ['reward_std'] : [];
    const candidates: [EchoTrapSignalName, number, number][] =
      c.signals === 'reward_std_and_entropy'
        ? [['entropy', entropyRatio, c.entropyFraction]]
        : [
            ['entropy', entropyRatio, c.entropyFraction],
            ['mi_zscore_ema', miRatio, c.miFraction],
          ];
    const known = candidates.filter(([, r]) => Number.isFinite(r));
    if (known.length === 0) return null;
    const low = known.filter(([, r, threshold]) => r < threshold).map(([name]) => name);
    return stdLow && low.length > 0 ? ['reward_std', ...low] : [];
  }

  /**
   * The in-group reward std of the groups the update trained on, over the reward-std baseline: NaN when the step
   * trained on nothing (the filter kept no group); the all-groups ratio when the row does not say what was kept.
   */
  private trainedStdRatio(metrics: Readonly<Record<string, unknown>>, rewardStd: number, baseline: number): number {
    if (metrics[EMPTY_AFTER_FILTER_KEY] === 1) return NaN;
    if (!(TRAINED_STD_KEY in metrics)) return ratio(rewardStd, baseline);
    return ratio(numberAt(metrics, TRAINED_STD_KEY), baseline);
  }

  /** A converged step: low reward std, no update on low-std groups, training success within the tolerance of its best. */
  private trackConvergence(step: number, stdRatio: number, trainedLow: boolean, success: number): void {
    const s = this.s;
    if (!Number.isFinite(stdRatio)) return; // unknown: neither extends nor breaks the streak
    const atPeak = Number.isFinite(success) && s.peakSuccess !== null && success >= s.peakSuccess - CONVERGED_TOLERANCE;
    const converged = stdRatio < s.config.fraction && !trainedLow && atPeak;
    s.convergedStreak = converged ? s.convergedStreak + 1 : 0;
    if (converged && s.convergedStreak >= s.config.patience && s.report.convergedStep === null)
      s.report.convergedStep = step;
  }

  /** Folds in an MI measurement (NaN = none this step) and returns the MI ratio that stands now (NaN if none). */
  private trackMi(value: number): number {
    const s = this.s;
    if (Number.isFinite(value)) {
      if (s.miBaselineValues.length < s.config.miBaselineValues) s.miBaselineValues.push(value);
      else s.miRatio = ratio(value, mean(s.miBaselineValues));
    }
    return s.miRatio ?? NaN;
  }

  private checkGradNorm(step: number, gradNorm: number): boolean {
    const s = this.s;
    const c = s.config;
    if (!Number.isFinite(gradNorm)) return false; // a skipped optimizer step logs NaN
    const spike =
      s.gradNormHistory.length >= c.gradMinHistory && gradNorm > c.gradSpikeFactor * median(s.gradNormHistory);
    if (spike && s.report.firstGradNormSpikeStep === null) s.report.firstGradNormSpikeStep = step;
    s.gradNormHistory.push(gradNorm);
    if (s.gradNormHistory.length > c.gradMedianWindow) s.gradNormHistory.shift();
    return spike;
  }

  /** Updates the best training success so far and returns this step's (the mean over env tags; NaN if none). */
  private trackSuccess(step: number, metrics: Readonly<Record<string, unknown>>): number {
    const values = Object.keys(metrics)
      .filter((k) => isSuccessKey(k, 'train'))
      .map((k) => numberAt(metrics, k))
      .filter(Number.isFinite);
    if (values.length === 0) return NaN;
    const success = mean(values);
    if (this.s.peakSuccess === null || success > this.s.peakSuccess) {
      this.s.peakSuccess = success;
      this.s.peakSuccessStep = step;
    }
    return success;
  }

  private reasonText(
    step: number,
    low: readonly EchoTrapSignalName[],
    ratios: Record<EchoTrapSignalName, number>,
  ): string {
    const c = this.s.config;
    const pct = (r: number) => `${(r * 100).toFixed(0)}%`;
    const what: Record<EchoTrapSignalName, string> = {
      reward_std: `${REWARD_STD_KEY} at ${pct(ratios.reward_std)} (below ${pct(c.fraction)})`,
      entropy: `${ENTROPY_KEY} at ${pct(ratios.entropy)} (below ${pct(c.entropyFraction)})`,
      mi_zscore_ema: `${miKey(c.miSample)} at ${pct(ratios.mi_zscore_ema)} (below ${pct(c.miFraction)})`,
    };
    let text =
      `echo trap warning at step ${step} (signal ${low.join('+')}): ${low.map((n) => what[n]).join(' and ')} of their early ` +
      `baseline, for ${c.patience} consecutive steps (baselines: the first ${c.baselineSteps} steps, complete at step ` +
      `${this.s.baselineCompleteStep}${low.includes('mi_zscore_ema') ? `; MI: its first ${c.miBaselineValues} measurements` : ''})`;
    if (this.s.peakSuccess !== null) {
      text += `; train success peaked at ${this.s.peakSuccess.toFixed(3)} (step ${this.s.peakSuccessStep})`;
    }
    return text;
  }
}

/** The keys the detector writes into a metrics row (its numeric outputs and `echo_trap/signal`). */
const DETECTOR_KEYS = /^echo_trap\//;

/**
 * A run's metrics rows with every `echo_trap/*` key recomputed by a fresh detector with `config`: what a run with
 * that setting logs, since the detector only reads the row (the step-0 row, before any training, gets none). Used to
 * judge runs logged by older code with the current rule (experiments/lab/lesson-verdict.ts) and to keep the shipped
 * lesson recording's marks those of the current Trainer (experiments/record-lesson.ts --replay-marks).
 */
export function replayEchoTrap<R extends { step: number }>(rows: readonly R[], config: EchoTrapConfig): R[] {
  const detector = new EchoTrapDetector(config);
  return [...rows]
    .sort((a, b) => a.step - b.step)
    .map((row) => {
      const kept = Object.fromEntries(Object.entries(row).filter(([k]) => !DETECTOR_KEYS.test(k))) as R;
      if (row.step < 1) return kept;
      return { ...kept, ...detector.update(row.step, kept), ...detector.labels() };
    });
}
