// RAGEN-2's early stopping (spec §4.7): end a run that has entered a regime it cannot learn from.
//
// How the trainer uses this file:
//   const stopper = new EarlyStopper(config.earlyStop, config.trainer.stopAfterCollapse);   // or .fromState on --resume
//   every training step, after filtering (filter.ts metrics):
//       const d = stopper.observeStep({ emptyAfterFilter: m['rollout/empty_after_filter'] === 1,
//                                       inGroupRewardStd: m['rollout/in_group_reward_std'] ?? m['rollout/in_group_std'],
//                                       step, trainSuccess: m['train/<Tag>/success'] });
//   after every validation:
//       const d = stopper.observeValidation({ SimpleSokoban: 0.004, ... });   // val-env/<Tag>/success per env
//   if (d.stop) { log stopper.metrics() (the `early_stopped/<reason>` keys), save, and end the run }
//   checkpoints store stopper.state() (plain JSON) so a resumed run continues the same counters.
//
// The three rules (thresholds in the run's `earlyStop` config, RAGEN-2's values as its defaults):
//   (a) empty_after_filter: the filter kept nothing on `emptyStopSteps` (5) consecutive steps;
//   (b) reward_variance_collapse: baseline = mean of the in-group reward std over the first `varianceBaselineSteps`
//       (10) steps; afterwards, stop once `varianceCollapseSteps` (10) consecutive steps are all below
//       `varianceCollapseRatio` (10 %) of the baseline. Reading of "the next 10 consecutive values": any run of 10
//       consecutive low values after the baseline window, not only steps 11-20 (a single value at or above the
//       threshold resets the run). A baseline of 0 never triggers (nothing is below 0);
//   (c) validation_collapse: some env's validation success stays below `valSuccessThreshold` (1 %) for
//       `valCollapseValidations` (5) consecutive validations of that env.
// And one rule of this project's, on whether `earlyStop.enabled` or not:
//   (d) success_collapse: `trainer.stopAfterCollapse` (K > 0) steps after the training success collapsed by the
//       Echo Trap lesson's rule (src/metrics/lessonVerdict.ts CollapseWatch, the same rule its verdict reads). A
//       collapsed run's later steps change nothing the verdict counts, and they are the slowest: each answer runs to
//       its token budget.

import { CollapseWatch, LESSON_CRITERIA, type CollapseWatchState } from '../metrics/lessonVerdict';

import type { EarlyStopSettings } from './config';

/** The run's `earlyStop` section: its fields, their meaning and defaults are declared in config/schema.ts. */
export type EarlyStopConfig = EarlyStopSettings;

export type EarlyStopReason =
  'empty_after_filter' | 'reward_variance_collapse' | 'validation_collapse' | 'success_collapse';

export interface EarlyStopDecision {
  stop: boolean;
  reason?: EarlyStopReason;
  /** Human-readable explanation, for the log. */
  detail?: string;
}

/** Everything needed to resume: plain JSON. */
export interface EarlyStopState {
  config: EarlyStopConfig;
  consecutiveEmpty: number;
  baselineValues: number[];
  baseline: number | null;
  consecutiveLowVariance: number;
  consecutiveLowValidation: Record<string, number>;
  stopped: EarlyStopReason | null;
  /** Rule (d)'s view of the training success (absent in checkpoints written before rule (d) existed: start fresh). */
  collapseWatch?: CollapseWatchState;
}

function checkConfig(c: EarlyStopConfig): void {
  const counts: (keyof EarlyStopConfig)[] = [
    'emptyStopSteps',
    'varianceBaselineSteps',
    'varianceCollapseSteps',
    'valCollapseValidations',
  ];
  for (const k of counts) {
    const v = c[k] as number;
    if (!Number.isInteger(v) || v < 0) throw new Error(`early stop: ${k} must be an integer >= 0, got ${v}`);
  }
  if (!(c.varianceCollapseRatio >= 0))
    throw new Error(`early stop: varianceCollapseRatio must be >= 0, got ${c.varianceCollapseRatio}`);
  if (!(c.valSuccessThreshold >= 0))
    throw new Error(`early stop: valSuccessThreshold must be >= 0, got ${c.valSuccessThreshold}`);
}

export class EarlyStopper {
  private s: EarlyStopState;
  private watch = new CollapseWatch();

  /** `stopAfterCollapse`: rule (d)'s K (`trainer.stopAfterCollapse`), 0 = off. */
  constructor(
    config: EarlyStopConfig,
    private readonly stopAfterCollapse = 0,
  ) {
    checkConfig(config);
    if (!Number.isInteger(stopAfterCollapse) || stopAfterCollapse < 0) {
      throw new Error(`early stop: stopAfterCollapse must be an integer >= 0, got ${stopAfterCollapse}`);
    }
    this.s = {
      config: { ...config },
      consecutiveEmpty: 0,
      baselineValues: [],
      baseline: null,
      consecutiveLowVariance: 0,
      consecutiveLowValidation: {},
      stopped: null,
    };
  }

  static fromState(state: EarlyStopState, stopAfterCollapse = 0): EarlyStopper {
    const stopper = new EarlyStopper(state.config, stopAfterCollapse);
    stopper.s = structuredClone(state);
    if (state.collapseWatch) stopper.watch = CollapseWatch.fromState(state.collapseWatch);
    return stopper;
  }

  /** A deep copy of the counters, safe to JSON.stringify into a checkpoint. */
  state(): EarlyStopState {
    return structuredClone({ ...this.s, collapseWatch: this.watch.state() });
  }

  /** The reason the run was stopped, or null. */
  get stoppedBy(): EarlyStopReason | null {
    return this.s.stopped;
  }

  /** The reward-std baseline of rule (b), once the baseline window is complete. */
  get varianceBaseline(): number | null {
    return this.s.baseline;
  }

  /** `early_stopped/<reason>` = 1 for the rule that fired (empty object while running). */
  metrics(): Record<string, number> {
    return this.s.stopped ? { [`early_stopped/${this.s.stopped}`]: 1 } : {};
  }

  private decide(reason: EarlyStopReason, detail: string): EarlyStopDecision {
    if (!this.s.config.enabled) return { stop: false };
    this.s.stopped = reason;
    return { stop: true, reason, detail };
  }

  /**
   * Rules (a), (b) and (d); call once per training step. `trainSuccess` is the step's training success
   * (`train/<Tag>/success` of the run's first train env); rule (d) needs it and `step`.
   */
  observeStep(step: {
    emptyAfterFilter: boolean;
    inGroupRewardStd: number;
    step?: number;
    trainSuccess?: number;
  }): EarlyStopDecision {
    const c = this.s.config;
    if (!Number.isFinite(step.inGroupRewardStd)) {
      throw new Error(`early stop: in-group reward std is ${step.inGroupRewardStd}: expected a finite number`);
    }
    this.s.consecutiveEmpty = step.emptyAfterFilter ? this.s.consecutiveEmpty + 1 : 0;

    if (c.varianceBaselineSteps > 0) {
      if (this.s.baseline === null) {
        this.s.baselineValues.push(step.inGroupRewardStd);
        if (this.s.baselineValues.length === c.varianceBaselineSteps) {
          this.s.baseline = this.s.baselineValues.reduce((a, b) => a + b, 0) / c.varianceBaselineSteps;
        }
      } else {
        const low = step.inGroupRewardStd < c.varianceCollapseRatio * this.s.baseline;
        this.s.consecutiveLowVariance = low ? this.s.consecutiveLowVariance + 1 : 0;
      }
    }

    const fell =
      step.step !== undefined && step.trainSuccess !== undefined
        ? this.watch.observe(step.step, step.trainSuccess)
        : this.watch.collapse;
    if (
      this.stopAfterCollapse > 0 &&
      fell &&
      step.step !== undefined &&
      step.step >= fell.step + this.stopAfterCollapse
    ) {
      // Rule (d) is asked for by its own setting, so `earlyStop.enabled` does not gate it.
      this.s.stopped = 'success_collapse';
      return {
        stop: true,
        reason: 'success_collapse',
        detail:
          `the training success collapsed at step ${fell.step} (its ${LESSON_CRITERIA.window}-step mean fell to ` +
          `${LESSON_CRITERIA.collapseFraction} of its best, ${fell.peak.toFixed(2)} at step ${fell.peakStep}, or less); ` +
          `${this.stopAfterCollapse} steps after it`,
      };
    }
    if (c.emptyStopSteps > 0 && this.s.consecutiveEmpty >= c.emptyStopSteps) {
      return this.decide(
        'empty_after_filter',
        `the filter kept no group for ${this.s.consecutiveEmpty} consecutive steps`,
      );
    }
    if (
      c.varianceCollapseSteps > 0 &&
      this.s.baseline !== null &&
      this.s.consecutiveLowVariance >= c.varianceCollapseSteps
    ) {
      return this.decide(
        'reward_variance_collapse',
        `in-group reward std stayed below ${c.varianceCollapseRatio} x baseline ${this.s.baseline} for ` +
          `${this.s.consecutiveLowVariance} consecutive steps`,
      );
    }
    return { stop: false };
  }

  /** Rule (c); call after each validation with the success rate (0..1) per env tag. */
  observeValidation(successByEnv: Record<string, number>): EarlyStopDecision {
    const c = this.s.config;
    let fired: { env: string; n: number } | null = null;
    for (const [env, success] of Object.entries(successByEnv)) {
      if (!Number.isFinite(success)) throw new Error(`early stop: validation success of ${env} is ${success}`);
      const n = success < c.valSuccessThreshold ? (this.s.consecutiveLowValidation[env] ?? 0) + 1 : 0;
      this.s.consecutiveLowValidation[env] = n;
      if (!fired && c.valCollapseValidations > 0 && n >= c.valCollapseValidations) fired = { env, n };
    }
    if (fired) {
      return this.decide(
        'validation_collapse',
        `validation success of ${fired.env} stayed below ${c.valSuccessThreshold} for ${fired.n} consecutive validations`,
      );
    }
    return { stop: false };
  }
}
