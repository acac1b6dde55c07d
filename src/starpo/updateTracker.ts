// The bookkeeping of one step's update (steps 5-7 of trainer.ts), kept out of the algorithm: how far the scoring
// and the optimizer steps are (reported through the Trainer's onProgress), and each optimizer step run through
// miniBatchUpdate, its stats, skips and seconds logged per model. The Trainer decides what is scored and updated;
// this only counts it and logs it.
import type * as tf from '@tensorflow/tfjs';
import type { AdamW } from '../model/adamw';
import type { Qwen2Model } from '../model/qwen2';
import type { StepPhase } from './trainerOptions';
import { chunks, type TokenizedTrajectory } from './batch';
import type { RunConfig } from './config';
import { criticWorkHere, type CriticWork, type HelperLink, type UpdateLog } from './parallel';
import { stepWithinTrustRegion, type StepProbe, type StepTrustRegionOptions } from './stepTrustRegion';
import { miniBatchUpdate, type MicroBatchLoss, type MiniBatchUpdateOptions, type UpdateRows } from './update';

const now = () => (typeof performance !== 'undefined' ? performance.now() : Date.now()) / 1000;

/** What one step's update does, as far as counting it goes. */
export interface UpdatePlan {
  seqs: readonly TokenizedTrajectory[];
  miniBatches: number;
  epochs: number;
  microBatchSize: number;
  /** The scoring passes over the batch before the update: old log-probs, reference log-probs, critic values. */
  scores: { actor: boolean; ref: boolean; critic: boolean };
  /** Whether a critic is updated too (an optimizer step of its own per mini-batch). */
  trainsCritic: boolean;
}

export interface UpdateTrackerHooks {
  progress: (phase: StepPhase, done: number, total: number) => Promise<void>;
  /** Called before every optimizer step: from the first one on, the step's weights change. */
  weightsChange: () => void;
  updateOptions: (kind: 'actor' | 'critic') => MiniBatchUpdateOptions;
  /** The trust region every actor step is taken in (actor.maxStepKl or actor.maxSuccessLogProbDrop > 0), or null. */
  actorTrustRegion: StepTrustRegionOptions | null;
}

export class UpdateTracker {
  /** Each model's update log (the critic's is replaced by the helper's when the critic trains there). */
  readonly log: Record<'actor' | 'critic', UpdateLog> = {
    actor: { stats: {}, skipped: 0, seconds: 0 },
    critic: { stats: {}, skipped: 0, seconds: 0 },
  };
  /** Actor steps undone by the trust region (stepTrustRegion.ts). */
  undone = 0;
  /** The trust region's probe scored under the actor's current weights (only actor steps change them). */
  private probeScores: Float32Array[] | undefined;
  /** Whether actor steps are taken in a trust region at all. */
  get hasTrustRegion(): boolean {
    return this.hooks.actorTrustRegion !== null;
  }
  /** Micro-batches scored before the update, over all scoring passes. */
  private readonly scoringTotal: number;
  /** Optimizer steps of the update, the actor's and the critic's. */
  private readonly optimizerSteps: number;
  private scored = 0;
  private stepped = 0;

  constructor(
    private readonly plan: UpdatePlan,
    private readonly hooks: UpdateTrackerHooks,
  ) {
    const s = plan.scores;
    const scoringPasses = (s.actor ? 1 : 0) + (s.ref ? 1 : 0) + (s.critic ? 1 : 0);
    this.scoringTotal =
      scoringPasses *
      chunks(
        plan.seqs.map((_, i) => i),
        plan.microBatchSize,
      ).length;
    this.optimizerSteps = plan.miniBatches * plan.epochs * (plan.trainsCritic ? 2 : 1);
  }

  /** Reports the scoring as started, when there is any. */
  async startScoring(): Promise<void> {
    if (this.scoringTotal > 0) await this.hooks.progress('scoring', 0, this.scoringTotal);
  }

  /** One more micro-batch scored (any pass). */
  readonly scoredOne = (): Promise<void> => this.hooks.progress('scoring', ++this.scored, this.scoringTotal);

  /** One optimizer step of `kind` on mini-batch `mini`, logged; returns the rows its forward pass computed. */
  async run(kind: 'actor' | 'critic', mini: readonly number[], lossOf: MicroBatchLoss): Promise<UpdateRows> {
    if (this.stepped === 0) await this.hooks.progress('update', 0, this.optimizerSteps);
    this.hooks.weightsChange();
    const t0 = now();
    const update = () => miniBatchUpdate(this.hooks.updateOptions(kind), this.plan.seqs, mini, lossOf);
    const trust = kind === 'actor' ? this.hooks.actorTrustRegion : null;
    const log = this.log[kind];
    let r: Awaited<ReturnType<typeof update>>;
    if (trust) {
      const guarded = await stepWithinTrustRegion(trust, update, this.probeScores);
      this.probeScores = guarded.current;
      r = guarded.result;
      if (Number.isFinite(guarded.kl)) (log.stats['actor/step_kl'] ??= []).push(guarded.kl);
      if (Number.isFinite(guarded.successChange))
        (log.stats['actor/success_logprob_change'] ??= []).push(guarded.successChange);
      if (guarded.undone) this.undone++;
    } else {
      r = await update();
    }
    if (!r.applied) log.skipped++;
    for (const [k, v] of Object.entries(r.stats)) (log.stats[k] ??= []).push(v);
    log.seconds += now() - t0;
    await this.hooks.progress('update', ++this.stepped, this.optimizerSteps);
    return r.rows;
  }

  /** The lines that say which optimizer steps were skipped (a non-finite loss, gradient norm or weights). */
  skippedLines(step: number): string[] {
    const undone = this.undone
      ? [
          `step ${step}: undid ${this.undone} actor update(s) that moved the policy past its trust region ` +
            '(actor.maxStepKl / actor.maxSuccessLogProbDrop)',
        ]
      : [];
    return (['actor', 'critic'] as const)
      .filter((kind) => this.log[kind].skipped)
      .map(
        (kind) =>
          `step ${step}: skipped ${this.log[kind].skipped} ${kind} update(s) with a non-finite loss, gradient norm or updated weights`,
      )
      .concat(undone);
  }
}

/** What one step's update bookkeeping needs of the Trainer: its models, optimizers, helper and hooks. */
export interface UpdateParts {
  config: RunConfig;
  actor: Qwen2Model;
  critic: Qwen2Model | null;
  ref: Qwen2Model | null;
  actorOptim: AdamW;
  criticOptim: AdamW | null;
  helper: HelperLink | null;
  padId: number;
  /** Every rollout of this step, filtered out or kept: what the actor's trust region scores. */
  rollouts: StepProbe;
  /** TrainerOptions.lossHook of this step. */
  lossHook?: (kind: 'actor' | 'critic', loss: tf.Scalar) => tf.Scalar;
  progress: UpdateTrackerHooks['progress'];
  weightsChange: UpdateTrackerHooks['weightsChange'];
}

/**
 * The tracker of one step's update over `seqs` (its progress counts and optimizer-step logs), and the critic's work
 * (PPO): on the helper, or here as optimizer steps of the tracker; null without a critic.
 */
export function updateTracking(
  parts: UpdateParts,
  seqs: TokenizedTrajectory[],
  miniBatches: number,
  reuse: boolean,
): { tracker: UpdateTracker; critic: CriticWork | null } {
  const c = parts.config;
  const withCritic = c.algorithm.advEstimator === 'gae';
  const plan = {
    seqs,
    miniBatches,
    epochs: c.actor.ppoEpochs,
    microBatchSize: c.actor.ppoMicroBatchSize,
    scores: { actor: !reuse, ref: parts.ref !== null, critic: withCritic && !reuse },
    trainsCritic: parts.critic !== null,
  };
  const tracker = new UpdateTracker(plan, {
    progress: parts.progress,
    weightsChange: parts.weightsChange,
    updateOptions: (kind) => updateOptions(parts, kind),
    actorTrustRegion:
      c.actor.maxStepKl > 0 || c.actor.maxSuccessLogProbDrop > 0
        ? {
            model: parts.actor,
            optimizer: parts.actorOptim,
            maxKl: c.actor.maxStepKl,
            maxSuccessDrop: c.actor.maxSuccessLogProbDrop,
            microBatchSize: c.actor.ppoMicroBatchSize,
            padId: parts.padId,
            temperature: c.rollout.temperature,
            probe: parts.rollouts,
          }
        : null,
  });
  return { tracker, critic: criticWork(parts, tracker) };
}

function criticWork(parts: UpdateParts, tracker: UpdateTracker): CriticWork | null {
  const { critic, criticOptim, helper, config: c } = parts;
  if (critic === null) return null;
  if (helper?.runsCritic) return helper.criticWork(critic, criticOptim!);
  return criticWorkHere({
    critic,
    lossConfig: { cliprangeValue: c.critic.cliprangeValue, lossAggMode: c.actor.lossAggMode },
    microBatchSize: c.actor.ppoMicroBatchSize,
    padId: parts.padId,
    afterScoring: tracker.scoredOne,
    run: (mini, lossOf) => tracker.run('critic', mini, lossOf),
    log: tracker.log.critic,
  });
}

/** How miniBatchUpdate steps the actor or the critic. */
function updateOptions(parts: UpdateParts, kind: 'actor' | 'critic'): MiniBatchUpdateOptions {
  const c = parts.config;
  const hook = parts.lossHook;
  return {
    model: kind === 'actor' ? parts.actor : parts.critic!,
    optimizer: kind === 'actor' ? parts.actorOptim : parts.criticOptim!,
    microBatchSize: c.actor.ppoMicroBatchSize,
    gradClip: kind === 'actor' ? c.actor.gradClip : c.critic.gradClip,
    padId: parts.padId,
    gradNormKey: `${kind}/grad_norm`,
    ...(hook ? { lossHook: (loss: tf.Scalar) => hook(kind, loss) } : {}),
  };
}
