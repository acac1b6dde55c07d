// The bookkeeping of one step's update (steps 5-7 of trainer.ts), kept out of the algorithm: how far the scoring
// and the optimizer steps are (reported through the Trainer's onProgress), and each optimizer step run through
// miniBatchUpdate, its stats, skips and seconds logged per model. The Trainer decides what is scored and updated;
// this only counts it and logs it.
import type { StepPhase } from './trainerOptions';
import { chunks, type TokenizedTrajectory } from './batch';
import type { UpdateLog } from './parallel';
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
}

export class UpdateTracker {
  /** Each model's update log (the critic's is replaced by the helper's when the critic trains there). */
  readonly log: Record<'actor' | 'critic', UpdateLog> = {
    actor: { stats: {}, skipped: 0, seconds: 0 },
    critic: { stats: {}, skipped: 0, seconds: 0 },
  };
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
    const r = await miniBatchUpdate(this.hooks.updateOptions(kind), this.plan.seqs, mini, lossOf);
    const log = this.log[kind];
    if (!r.applied) log.skipped++;
    for (const [k, v] of Object.entries(r.stats)) (log.stats[k] ??= []).push(v);
    log.seconds += now() - t0;
    await this.hooks.progress('update', ++this.stepped, this.optimizerSteps);
    return r.rows;
  }

  /** The lines that say which optimizer steps were skipped (a non-finite loss, gradient norm or weights). */
  skippedLines(step: number): string[] {
    return (['actor', 'critic'] as const)
      .filter((kind) => this.log[kind].skipped)
      .map(
        (kind) =>
          `step ${step}: skipped ${this.log[kind].skipped} ${kind} update(s) with a non-finite loss, gradient norm or updated weights`,
      );
  }
}
