// The StarPO / StarPO-S Trainer: one RAGEN training step, top to bottom (spec §4.2), in the spirit of CleanRL's
// single-file algorithms. The Node CLI (`ragen train`) and the browser worker build the same Trainer from the same
// RunConfig; this file imports no Node module: metrics go to an injected MetricSink, checkpoints come and go as
// in-memory files (`checkpointFiles()` / `resumeFiles`), and the caller picks the tfjs backend (initBackend).
// This file holds the algorithm only: how the actor, critic, reference and optimizers are built, and the checkpoint
// layout, are in trainerCheckpoint.ts; the env groups, each step's env seeds and the generate function in
// trainerRollouts.ts; what runs on a helper on a second core (half the rollouts, the critic) in parallel.ts, behind
// the same steps; the update's bookkeeping (progress counts, each optimizer step's log) in updateTracker.ts.
//
// One step:
//   1. rollout      P env groups x N rollouts through runRollouts, sampling with generate() (seeded: same seed +
//                   backend => same rollouts), stop at `</answer>` or `<|im_end|>`;
//   2. sequences    each trajectory's training rendering -> token ids + loss mask (batch.ts);
//   3. scores       total env reward + format penalty (on the last loss token, later), then RAGEN's optional
//                   reward normalisation per group (mean_std = GRPO, mean = Dr.GRPO);
//   4. filter       StarPO-S uncertainty filter on the RAW rewards (v1 ratio by default, v2 strategies by config);
//   5. old log-probs recomputed on the training sequences (never the sampler's: spec §10.4), reference
//                   log-probs when a KL term is on (ref = frozen copy of the initial actor; with LoRA the actor with
//                   its adapters off), critic values (PPO);
//   6. advantages   PPO: terminal reward (minus reward-KL) -> GAE -> whitening; GRPO: broadcast normalised scores;
//   7. update       ppoEpochs x mini-batches of ppoMiniBatchSize trajectories, each accumulated over micro-batches:
//                   critic (clipped value loss) then actor (clipped surrogate - entropy bonus [+ KL loss]), global
//                   grad-norm clipping and AdamW. A non-finite loss, grad norm or updated weight skips that optimizer
//                   step (logged as `actor/nan_skipped` / `critic/nan_skipped`), so it never reaches the weights;
//   8. validation   every testFreq steps and on the last step (and once before training: the row of step 0), on the
//                   fixed val env groups (seeds from seedVal = 123) at valTemperature 0.5;
//   9. metrics      RAGEN's keys into the sink, plus reasoning diversity, the echo-trap detector and early stopping.
//
// Validation metrics (`val-env/<Tag>/...`) appear only in the rows of steps that validated (RAGEN/W&B logs them
// the same way); other rows simply do not carry those keys. Step 0 holds the validation before training.
//
// What differs from RAGEN, on purpose: the reference model is only built when a KL term is on (RAGEN also computes
// it just to log `rollout/ref_log_prob`); mini-batches are taken in order, as veRL with shuffle off.
import {
  runRollouts,
  summarizeEnvMetrics,
  type AgentFormat,
  type EnvGroupManager,
  type GenerateFn,
} from '../agent/index';
import type { AdamW } from '../model/adamw';
import { assertNoGpuError } from '../model/backend';
import type { Qwen2Model } from '../model/qwen2';
import type { Tokenizer } from '../model/tokenizer';
import { checkCollapseState, initialCollapseState, type CollapseResult, type CollapseState } from '../metrics/collapse';
import { EchoTrapDetector } from '../metrics/echoTrap';
import { successByTag, trainSuccessKey } from '../metrics/keys';
import { trainTag } from '../metrics/lessonVerdict';
import { groundingMetrics, groundingTurnsOf } from '../metrics/grounding';
import { reasoningMetrics, reasoningSamplesFromTrajectories } from '../metrics/reasoning';
import type { MetricSink } from '../metrics/sink';
import {
  broadcastOverLossTokens,
  gae,
  lossTokenMean,
  normalizeScores,
  placeTerminalReward,
  trainingSamples,
  whiten,
} from './advantages';
import {
  chunks,
  firstLossTarget,
  lossTokenCount,
  scoreLogProbs,
  tokenizeTrajectory,
  type TokenizedTrajectory,
} from './batch';
import { collapseDiagnostics, collapseDue } from './collapseScoring';
import type { RunConfig } from './config';
import { EarlyStopper, type EarlyStopReason } from './earlyStop';
import { filterGroupsByConfig, filterLossScale, type FilterResult } from './filter';
import { applyKlInReward } from './kl';
import { HelperLink, type CriticLog } from './parallel';
import { actorUpdateLoss, updateForwardReusable, usesKlLoss } from './update';
import { updateTracking, type UpdateParts } from './updateTracker';
import {
  assembleTrainerModels,
  disposeTrainerModels,
  restoreOptimizers,
  trainerOptimizers,
  trainerCheckpointFiles,
} from './trainerCheckpoint';
import type { TrainerModels, TrainerState } from './trainerCheckpoint';
import { rolloutGenerateFn, trainerEnvGroups, trainSeedBase, writeSampleRollouts } from './trainerRollouts';
import type { WorkloadProbe } from './workloadProbe';
import { warmupLrFactor } from './lrSchedule';

export type { StepPhase, StepResult, TrainerOptions } from './trainerOptions';
import type { StepPhase, StepResult, TrainerOptions } from './trainerOptions';

const now = () => (typeof performance !== 'undefined' ? performance.now() : Date.now()) / 1000;
const mean = (xs: readonly number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN);

/** The step's training success of its first train env: the curve the lesson's collapse rule reads (metrics/lessonVerdict.ts). */
function firstTrainSuccess(metrics: Record<string, number>): number | undefined {
  const tag = trainTag([{ step: 0, ...metrics }]);
  return tag === null ? undefined : metrics[trainSuccessKey(tag)];
}

export class Trainer {
  readonly config: RunConfig;
  readonly tokenizer: Tokenizer;
  readonly actor: Qwen2Model;
  /** The value model (PPO / gae only). */
  readonly critic: Qwen2Model | null;
  /** Frozen copy of the initial actor, when a KL term is on (with LoRA: the actor's baseModel(), no copy). */
  readonly ref: Qwen2Model | null;
  private readonly actorOptim: AdamW;
  private readonly criticOptim: AdamW | null;
  /** How the agent talks in every rollout of the run. */
  private readonly format: AgentFormat;
  private readonly trainManager: EnvGroupManager;
  private readonly valManager: EnvGroupManager;
  private readonly sink: MetricSink;
  private readonly log: (line: string) => void;
  private readonly lossHook: TrainerOptions['lossHook'];
  private readonly reuseUpdateForward: boolean;
  /** The helper on a second core (parallel.ts), when the caller gave one. */
  private helper: HelperLink | null = null;
  private readonly onProgress: TrainerOptions['onProgress'];
  private readonly workloadProbe: WorkloadProbe | undefined;
  /** Set once the step in flight has changed something (weights, counters, the sink): it can no longer be abandoned. */
  private stepKeptSomething = false;
  private readonly padId: number;
  private readonly stopper: EarlyStopper;
  private readonly echoTrap: EchoTrapDetector;
  /** The collapse diagnostics' moving averages, as of the last completed step. */
  private collapseState: CollapseState = initialCollapseState();
  private stepCount = 0;
  private initialValidationDone = false;
  private stopped: EarlyStopReason | null = null;
  private lastValidation: Record<string, number> = {};
  private disposed = false;

  private constructor(
    config: RunConfig,
    models: TrainerModels,
    stopper: EarlyStopper,
    echoTrap: EchoTrapDetector,
    opts: TrainerOptions,
  ) {
    this.config = config;
    this.actor = models.actor;
    this.critic = models.critic;
    // Checkpointing only in the models that are trained: the reference model never runs a backward pass.
    for (const m of [models.actor, models.critic, models.ref]) if (m) m.sharePrefix = config.model.sharePrefix;
    for (const m of [models.actor, models.critic]) if (m) m.gradientCheckpointing = config.model.gradientCheckpointing;
    this.ref = models.ref;
    this.tokenizer = models.tokenizer;
    this.stopper = stopper;
    this.echoTrap = echoTrap;
    this.sink = opts.sink;
    this.log = opts.log ?? (() => {});
    this.lossHook = opts.lossHook;
    this.reuseUpdateForward = opts.reuseUpdateForward ?? true;
    this.onProgress = opts.onProgress;
    this.workloadProbe = opts.workloadProbe;
    const imEnd = models.tokenizer.tokenId('<|im_end|>');
    const pad = models.tokenizer.padTokenId;
    if (imEnd === undefined)
      throw new Error('Trainer: the tokenizer has no <|im_end|> token (the chat template needs it)');
    if (pad === undefined) throw new Error('Trainer: the tokenizer has no pad token (tokenizer_config.json pad_token)');
    this.padId = pad;
    ({ actor: this.actorOptim, critic: this.criticOptim } = trainerOptimizers(config, models));
    ({ format: this.format, train: this.trainManager, val: this.valManager } = trainerEnvGroups(config));
  }

  /**
   * Builds a trainer from where the run starts (trainerCheckpoint.ts assembles the actor, critic and reference).
   * Needs an initialised tfjs backend.
   */
  static async create(config: RunConfig, opts: TrainerOptions): Promise<Trainer> {
    const { models, state } = assembleTrainerModels(config, opts);
    try {
      const k = config.trainer.stopAfterCollapse;
      const stopper = state ? EarlyStopper.fromState(state.earlyStop, k) : new EarlyStopper(config.earlyStop, k);
      const echoTrap = state
        ? EchoTrapDetector.fromState(state.echoTrap, config.echoTrap)
        : new EchoTrapDetector(config.echoTrap);
      const trainer = new Trainer(config, models, stopper, echoTrap, opts);
      if (state) trainer.restore(state, opts.resumeFiles!);
      if (opts.helper) {
        const { actor, critic, tokenizer } = models;
        trainer.helper = await HelperLink.start(opts.helper, {
          config,
          actor,
          critic,
          tokenizer,
          padId: trainer.padId,
          criticStaysHere: !!opts.lossHook || !!critic?.lora,
        });
      }
      return trainer;
    } catch (err) {
      disposeTrainerModels(models, opts.model);
      throw err;
    }
  }

  /** Completed training steps. */
  get stepsDone(): number {
    return this.stepCount;
  }

  /** The early-stopping rule that ended the run, or null. */
  get stoppedBy(): EarlyStopReason | null {
    return this.stopped;
  }

  /** True when every configured step ran or early stopping fired. */
  get finished(): boolean {
    return this.stepCount >= this.config.trainer.totalSteps || this.stopped !== null;
  }

  /** The newest validation metrics (`val-env/...`), or {} before the first validation. */
  get latestValidation(): Record<string, number> {
    return { ...this.lastValidation };
  }

  /** Whether the caller should write a checkpoint after `step` (every saveFreq steps; the final one is the caller's). */
  shouldCheckpoint(step: number): boolean {
    const f = this.config.trainer.saveFreq;
    return f > 0 && step % f === 0;
  }

  // -------------------------------------------------------------------------------------------------------------
  // One training step

  /**
   * True until the step in flight changes anything (its first optimizer step): a throw from `onProgress` before then
   * leaves the Trainer as it was before `step()`.
   */
  get canAbandonStep(): boolean {
    return !this.stepKeptSomething;
  }

  private async progress(phase: StepPhase, done: number, total: number): Promise<void> {
    if (this.onProgress) await this.onProgress(phase, done, total);
  }

  async step(): Promise<StepResult> {
    this.checkAlive();
    this.stepKeptSomething = false;
    if (this.finished)
      throw new Error(
        `Trainer.step: the run is finished (${this.stopped ? `early stop: ${this.stopped}` : `${this.stepCount} steps done`})`,
      );
    const c = this.config;
    if (this.stepCount === 0 && c.trainer.valBeforeTrain && !this.initialValidationDone) {
      const val = await this.validate(0);
      await this.sink.write(0, val);
      this.initialValidationDone = true;
    }
    const step = this.stepCount + 1;
    const stepStart = now();
    const metrics: Record<string, number> = {};

    // 1. Rollout.
    const t = now();
    const rollout = await runRollouts(this.trainManager, await this.generateFn('train', step, c.rollout.temperature), {
      ...this.format,
      seed: trainSeedBase(c, step),
      onProgress: (done, total) => this.progress('rollout', done, total),
    });
    metrics['timing_s/gen'] = now() - t;
    assertNoGpuError(`while generating step ${step}'s rollouts`);
    const trajectories = rollout.trajectories;
    Object.assign(metrics, summarizeEnvMetrics(trajectories, 'train'));

    // RAGEN-2's collapse diagnostics, when due: on the whole rollout, before filtering, with the actor that sampled it
    // (as RAGEN-2). Their moving averages are kept only once the step completes (an abandoned step leaves no trace).
    let collapse: CollapseResult | null = null;
    if (collapseDue(c, step)) {
      collapse = await collapseDiagnostics(this.actor, this.tokenizer, trajectories, {
        config: c,
        step,
        padId: this.padId,
        state: this.collapseState,
        log: this.log,
        onProgress: (done, total) => this.progress('collapse', done, total),
      });
      Object.assign(metrics, collapse.metrics);
    }

    // 2. Training sequences.
    const sequences = trajectories.map((traj) => {
      if (!traj.training) throw new Error(`Trainer: trajectory ${traj.envId} played no turn`);
      return tokenizeTrajectory(this.tokenizer, traj.training);
    });

    // 3. Scores: env reward + format penalty, then optional group normalisation (RAGEN's context manager).
    const rawRewards = trajectories.map((x) => x.totalReward);
    const scores = normalizeScores(trajectories, c.algorithm.rewardNormalization);

    // 4. Uncertainty filter (on raw rewards; entropy / length metrics for RAGEN-2's variants).
    const filter = await this.filterGroups(rawRewards, sequences);
    Object.assign(metrics, filter.metrics);
    const kept = filter.keptTrajectories;
    metrics['train/batch_size'] = kept.length;
    metrics['critic/score/mean'] = mean(kept.map((i) => scores[i]));

    // 5-7. Advantages and the update (skipped when the filter kept nothing).
    if (kept.length > 0) {
      const {
        seqs: keptSeqs,
        scores: keptScores,
        metrics: sampleMetrics,
      } = trainingSamples(trajectories, sequences, kept, scores, {
        contextWindowMode: c.agent.contextWindowMode,
        stepAdvantage: c.algorithm.stepAdvantage,
        tokenize: (sample) => tokenizeTrajectory(this.tokenizer, sample),
      });
      Object.assign(metrics, sampleMetrics);
      const lossTokens = keptSeqs.map(lossTokenCount);
      metrics['response_length/mean'] = mean(lossTokens);
      metrics['response_length/max'] = Math.max(...lossTokens);
      const realTokens = keptSeqs.reduce((s, x) => s + x.ids.length, 0);
      this.workloadProbe?.trainBatch(
        keptSeqs.map((x) => x.ids.length),
        keptSeqs.map((x) => Math.max(0, firstLossTarget(x))),
      );
      metrics['perf/total_num_tokens'] = realTokens;
      const rollouts = { seqs: sequences, success: trajectories.map((x) => x.success) };
      Object.assign(metrics, await this.update(step, keptSeqs, keptScores, filter, rollouts));
      assertNoGpuError(`in step ${step}'s update`);
    } else {
      for (const k of [
        'response_length/mean',
        'actor/pg_loss',
        'actor/pg_clipfrac',
        'actor/ppo_kl',
        'actor/entropy_loss',
        'actor/grad_norm',
      ])
        metrics[k] = NaN;
      if (this.critic) metrics['critic/vf_loss'] = NaN;
      metrics['perf/total_num_tokens'] = 0;
      this.log(`step ${step}: the filter kept no env group; no update`);
    }

    // Reasoning: length in tokens, diversity, input dependence, and whether its claims are true of the board.
    Object.assign(
      metrics,
      reasoningMetrics(reasoningSamplesFromTrajectories(trajectories), {
        countTokens: (text) => this.tokenizer.encode(text).length,
      }),
      groundingMetrics(
        groundingTurnsOf(trajectories, (id) => this.trainManager.entries[id].env),
        step,
      ),
    );
    this.stepKeptSomething = true; // (also when the filter kept nothing and no update ran)
    await writeSampleRollouts(this.sink, c, step, 'train', trajectories);
    this.stepCount = step;
    if (collapse) this.collapseState = collapse.state;

    // 8. Validation.
    const validated = c.trainer.testFreq > 0 && (step % c.trainer.testFreq === 0 || step === c.trainer.totalSteps);
    if (validated) Object.assign(metrics, await this.validate(step));

    // 9. Collapse indicators and early stopping.
    metrics['timing_s/step'] = now() - stepStart;
    metrics['perf/throughput'] = metrics['perf/total_num_tokens'] / metrics['timing_s/step'];
    Object.assign(metrics, this.echoTrap.update(step, metrics));
    const decision = this.stopper.observeStep({
      emptyAfterFilter: kept.length === 0,
      inGroupRewardStd: metrics['rollout/in_group_reward_std'] ?? metrics['rollout/in_group_std'],
      step,
      trainSuccess: firstTrainSuccess(metrics),
    });
    if (decision.stop && !this.stopped) {
      this.stopped = decision.reason ?? null;
      this.log(`early stop at step ${step}: ${decision.detail}`);
    }
    if (this.stopped) Object.assign(metrics, this.stopper.metrics());
    const labels = this.echoTrap.labels();
    await this.sink.write(step, { ...metrics, ...labels });
    return { step, metrics: { step, ...metrics }, labels, validated, stoppedBy: this.stopped };
  }

  // -------------------------------------------------------------------------------------------------------------
  // Rollouts

  private generateFn(split: 'train' | 'val', step: number, temperature: number): Promise<GenerateFn> {
    const { config, actor, tokenizer, helper, workloadProbe } = this;
    return rolloutGenerateFn({ config, actor, tokenizer, helper, workloadProbe }, split, step, temperature);
  }

  /** Validation on the fixed val env groups; returns the `val-env/...` metrics and `timing_s/testing`. */
  async validate(step: number): Promise<Record<string, number>> {
    this.checkAlive();
    const c = this.config;
    const start = now();
    const temperature = c.rollout.valDoSample ? c.rollout.valTemperature : 0;
    const result = await runRollouts(this.valManager, await this.generateFn('val', step, temperature), {
      ...this.format,
      seed: c.agent.seedVal,
      onProgress: (done, total) => this.progress('validation', done, total),
    });
    const metrics = summarizeEnvMetrics(result.trajectories, 'val-env');
    metrics['timing_s/testing'] = now() - start;
    const decision = this.stopper.observeValidation(successByTag(metrics, 'val'));
    if (decision.stop && !this.stopped) {
      this.stopped = decision.reason ?? null;
      this.log(`early stop at step ${step}: ${decision.detail}`);
    }
    await writeSampleRollouts(this.sink, c, step, 'val', result.trajectories);
    this.lastValidation = { ...metrics };
    return metrics;
  }

  // -------------------------------------------------------------------------------------------------------------
  // Scores and filtering

  /** The run's filter on this step's trajectories; the v2 entropy metrics score the actor on them first. */
  private async filterGroups(rawRewards: number[], sequences: readonly TokenizedTrajectory[]): Promise<FilterResult> {
    const { envGroups, groupSize } = this.config.agent;
    const all = sequences.map((_, i) => i);
    return filterGroupsByConfig(this.config.filter, envGroups, groupSize, {
      rawRewards,
      lossTokens: () => sequences.map(lossTokenCount),
      entropyMeans: async () => (await this.scoreActor(sequences, all)).entropyMeans,
    });
  }

  // -------------------------------------------------------------------------------------------------------------
  // Scoring without gradients (old log-probs, reference log-probs, values)

  /**
   * Log-probs (and mean loss-token entropy) of the actor (or the reference) on `indices`, in the same micro-batches
   * the update uses, so the first update of a step sees exactly ratio 1 (identical shapes, identical arithmetic).
   */
  private scoreActor(
    seqs: readonly TokenizedTrajectory[],
    indices: readonly number[],
    model: Qwen2Model = this.actor,
    afterEach?: () => Promise<void>,
  ) {
    return scoreLogProbs(
      model,
      seqs,
      chunks(indices, this.config.actor.ppoMicroBatchSize),
      this.padId,
      afterEach,
      this.config.rollout.temperature,
    );
  }

  // -------------------------------------------------------------------------------------------------------------
  // Advantages and the PPO update

  /**
   * Steps 5-7 on the kept samples: old log-probs, reference log-probs and critic values (scored first, or taken from
   * the update's own forward pass: updateForwardReusable in update.ts), returns and the critic's update, advantages, then the actor's
   * update. The critic's work runs here or on the helper (CriticWork, parallel.ts); the steps are the same.
   */
  private async update(
    step: number,
    seqs: TokenizedTrajectory[],
    scores: number[],
    filter: FilterResult,
    rollouts: UpdateParts['rollouts'],
  ): Promise<Record<string, number>> {
    const c = this.config;
    const metrics: Record<string, number> = {};
    const masks = seqs.map((s) => s.lossMask);
    const all = seqs.map((_, i) => i);
    const withCritic = c.algorithm.advEstimator === 'gae';
    const reuse =
      this.reuseUpdateForward &&
      !this.helper?.runsCritic &&
      this.ref === null &&
      updateForwardReusable(this.config, seqs.length);

    // The PPO updates: epochs x mini-batches, in order (veRL with shuffle off); the critic's, then the actor's.
    const miniBatches = chunks(all, c.actor.ppoMiniBatchSize);
    metrics['train/num_mini_batches'] = miniBatches.length * c.actor.ppoEpochs;
    // The bookkeeping (progress counts, each optimizer step's log) is the tracker's; the critic's work runs here or
    // on the helper.
    const { tracker, critic } = updateTracking(this.updateParts(step, rollouts), seqs, miniBatches.length, reuse);
    await tracker.startScoring();

    // 5. Old log-probs, reference log-probs (KL), critic values (PPO), unless the update's forward pass gives them.
    let t = now();
    const valuesLater = critic && withCritic && !reuse ? await critic.values(seqs) : null;
    let oldLogProbs: Float32Array[] | null = null;
    if (!reuse) {
      const actorScores = await this.scoreActor(seqs, all, this.actor, tracker.scoredOne);
      oldLogProbs = actorScores.logProbs;
      metrics['rollout/old_log_prob'] = lossTokenMean(oldLogProbs, masks);
      metrics['rollout/old_entropy'] = mean(actorScores.entropyMeans);
      metrics['timing_s/old_log_prob'] = now() - t;
    }
    let refLogProbs: Float32Array[] | null = null;
    if (this.ref) {
      t = now();
      refLogProbs = (await this.scoreActor(seqs, all, this.ref, tracker.scoredOne)).logProbs;
      metrics['rollout/ref_log_prob'] = lossTokenMean(refLogProbs, masks);
      metrics['timing_s/ref'] = now() - t;
    }

    // 6. Returns, the critic's update (started here: a helper runs it while this thread updates the actor), and
    // advantages: PPO's GAE over the old values, whitened; GRPO's normalised scores over the loss tokens.
    t = now();
    let advantages: Float32Array[];
    let criticDone: Promise<CriticLog> | null = null;
    if (withCritic) {
      let oldValues = valuesLater ? await valuesLater() : null;
      let rewards = placeTerminalReward(scores, masks);
      if (c.algorithm.useKlInReward && refLogProbs) {
        const { klCoef, klEstimator } = c.algorithm;
        const withKl = applyKlInReward(rewards, oldLogProbs!, refLogProbs, masks, klCoef, klEstimator);
        rewards = withKl.rewards;
        Object.assign(metrics, withKl.metrics);
      }
      // Without old values (reused forward pass) gamma = lambda = 1: every return is the trajectory's score anyway.
      let g = gae(
        rewards,
        oldValues ?? masks.map((m) => new Float32Array(m.length)),
        masks,
        c.algorithm.gamma,
        c.algorithm.lambda,
      );
      criticDone = (await critic!.update(seqs, miniBatches, c.actor.ppoEpochs, oldValues, g.returns)).finished;
      if (!oldValues) {
        oldValues = (await criticDone).values!.map((row, i) => row.map((v, j) => (masks[i][j] ? v : 0))); // as veRL: 0 off the mask
        g = gae(rewards, oldValues, masks, c.algorithm.gamma, c.algorithm.lambda);
      }
      advantages = whiten(g.advantages, masks);
      metrics['critic/values/mean'] = lossTokenMean(oldValues, masks);
      metrics['critic/returns/mean'] = lossTokenMean(g.returns, masks);
    } else {
      advantages = broadcastOverLossTokens(scores, masks, c.algorithm.grpoLengthWeight);
    }
    if (c.filter.strategy !== 'ratio' && c.filter.lossScaling !== 'none') {
      const factor = filterLossScale(c.filter.lossScaling, filter.keptGroups.length / c.agent.envGroups);
      advantages = advantages.map((row) => row.map((a) => a * factor));
    }
    metrics['critic/advantages/mean'] = lossTokenMean(advantages, masks);
    metrics['timing_s/adv'] = now() - t - tracker.log.critic.seconds;

    // 7. The actor's update. Without old log-probs (reused forward pass) its own, detached, are the old ones.
    this.actorOptim.lr = c.actor.lr * warmupLrFactor(step, c.actor.lrWarmupStepsRatio, c.trainer.totalSteps);
    const actorLoss = actorUpdateLoss(
      this.actor,
      { actor: c.actor, temperature: c.rollout.temperature },
      oldLogProbs,
      advantages,
      refLogProbs,
    );
    for (let epoch = 0; epoch < c.actor.ppoEpochs; epoch++) {
      for (const mini of miniBatches) {
        const rows = await tracker.run('actor', mini, actorLoss);
        if (oldLogProbs) continue;
        metrics['rollout/old_log_prob'] = lossTokenMean(rows.logProbs, masks);
        metrics['rollout/old_entropy'] = mean(rows.entropy.map((row, i) => lossTokenMean([row], [masks[i]])));
      }
    }
    const log = tracker.log;
    if (criticDone) log.critic = await criticDone;
    this.helper?.actorChanged();
    for (const [k, v] of [...Object.entries(log.actor.stats), ...Object.entries(log.critic.stats)])
      metrics[k] = mean(v);
    if (usesKlLoss(c.actor, refLogProbs)) metrics['actor/kl_coef'] = c.actor.klLossCoef;
    metrics['actor/nan_skipped'] = log.actor.skipped;
    if (tracker.hasTrustRegion) metrics['actor/steps_undone'] = tracker.undone;
    metrics['actor/lr'] = this.actorOptim.lr;
    metrics['timing_s/update_actor'] = log.actor.seconds;
    if (this.critic) {
      metrics['critic/nan_skipped'] = log.critic.skipped;
      metrics['critic/lr'] = c.critic.lr;
      metrics['timing_s/update_critic'] = log.critic.seconds;
    }
    for (const line of tracker.skippedLines(step)) this.log(line);
    return metrics;
  }

  /** What step `step`'s update bookkeeping needs of this Trainer (updateTracking in updateTracker.ts). */
  private updateParts(step: number, rollouts: UpdateParts['rollouts']): UpdateParts {
    const { config, actor, critic, ref, actorOptim, criticOptim, helper, padId, lossHook } = this;
    return {
      config,
      actor,
      critic,
      ref,
      actorOptim,
      criticOptim,
      helper,
      padId,
      rollouts,
      lossHook: lossHook && ((kind, loss) => lossHook(kind, step, loss)),
      progress: (phase, done, total) => this.progress(phase, done, total),
      weightsChange: () => {
        this.stepKeptSomething = true; // from here on the weights change
      },
    };
  }

  // -------------------------------------------------------------------------------------------------------------
  // Checkpoints

  /**
   * Everything needed to continue this run, as files: the actor in Hugging Face Qwen2 format at the top level (the
   * directory loads in transformers), the critic, the reference, AdamW moments and trainer_state.json
   * (trainerCheckpoint.ts has the layout).
   */
  async checkpointFiles(): Promise<Record<string, Uint8Array>> {
    this.checkAlive();
    return trainerCheckpointFiles(
      this.models(),
      { actor: this.actorOptim, critic: this.criticOptim },
      {
        step: this.stepCount,
        initialValidationDone: this.initialValidationDone,
        stoppedBy: this.stopped,
        earlyStop: this.stopper.state(),
        echoTrap: this.echoTrap.toState(),
        collapse: this.collapseState,
        nextTrainSeed: trainSeedBase(this.config, this.stepCount + 1),
        lastValidation: this.lastValidation,
      },
    );
  }

  private restore(state: TrainerState, files: Record<string, Uint8Array>): void {
    restoreOptimizers(files, state, { actor: this.actorOptim, critic: this.criticOptim });
    this.stepCount = state.step;
    this.initialValidationDone = state.initialValidationDone;
    this.stopped = state.stoppedBy;
    this.lastValidation = { ...state.lastValidation };
    if (state.collapse !== undefined) this.collapseState = checkCollapseState(state.collapse);
  }

  private models(): TrainerModels {
    return { actor: this.actor, critic: this.critic, ref: this.ref, tokenizer: this.tokenizer };
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.actorOptim.dispose();
    this.criticOptim?.dispose();
    disposeTrainerModels(this.models());
  }

  private checkAlive(): void {
    if (this.disposed) throw new Error('Trainer: used after dispose()');
  }
}
