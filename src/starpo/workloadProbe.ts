// The benchmark hook of the Trainer (TrainerOptions.workloadProbe): `ragen bench --only step,torch`
// (src/bench/torchStep.ts) records what each measured training step did, so that the PyTorch side redoes the same work.
import type { GenerateFn } from '../agent/index';

/** What a training step did (TrainerOptions.workloadProbe). */
export interface WorkloadProbe {
  /** One generate call of a training rollout (one turn): each row's prompt and response text (kept as text, so that
   *  counting their tokens costs the timed rollout nothing). */
  rolloutTurn(prompts: readonly string[], responses: readonly string[]): void;
  /** The sequences the update trains on (after the filter): their lengths in tokens, and each one's first loss
   *  target (0 when it has none), from which the log-prob passes run the LM head (`PaddedBatch.firstLossTarget`). */
  trainBatch(sequenceTokens: number[], firstLossTargets: number[]): void;
}

/** The rollout policy `fn`, telling `probe` each turn's prompts and responses after it generated them. */
export function probedGeneration(fn: GenerateFn, probe: WorkloadProbe): GenerateFn {
  return async (prompts, context) => {
    const outputs = await fn(prompts, context);
    probe.rolloutTurn(prompts, outputs);
    return outputs;
  };
}
