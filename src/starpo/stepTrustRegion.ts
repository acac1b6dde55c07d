// A trust region on each optimizer step of the actor (not a RAGEN feature; off by default). PPO's clip bounds how far
// the importance ratio may pull the loss, but not how far one AdamW step moves the policy: on the tiny echo-trap model
// a single step on a single kept group can break the answer format on every prompt (docs/lab/echo-trap-probes.md).
// So all of the step's rollouts, the groups the filter dropped included, are scored before and after the step, and
// the step is undone (weights, AdamW's moments and step count back to what they were, as if it had never been taken)
// when it moved the policy too far by either measure that is switched on:
// - actor.maxStepKl: the mean per-token KL between the two policies on the rollouts' loss tokens;
// - actor.maxSuccessLogProbDrop: how much less likely, in nats per rollout, the step made the rollouts that
//   succeeded. An update is meant to make successes more likely; one that makes them all much less likely has broken
//   something they share, such as the answer format, whatever its mean KL (a format break moves one token in thirty).
import * as tf from '@tensorflow/tfjs';
import type { AdamW } from '../model/adamw';
import type { Qwen2Model } from '../model/qwen2';
import { chunks, scoreLogProbs, type TokenizedTrajectory } from './batch';

/** The rollouts a step is measured on: every rollout of the step, and whether each succeeded. */
export interface StepProbe {
  seqs: readonly TokenizedTrajectory[];
  success: readonly boolean[];
}

export interface StepTrustRegionOptions {
  model: Qwen2Model;
  optimizer: AdamW;
  /** The bound on the step's KL (actor.maxStepKl); 0 = not checked. */
  maxKl: number;
  /** The bound on the drop of the successes' log-likelihood, nats per rollout (actor.maxSuccessLogProbDrop); 0 = not checked. */
  maxSuccessDrop: number;
  probe: StepProbe;
  microBatchSize: number;
  padId: number;
  /** The rollout temperature the actor is scored at (as its loss scores it). */
  temperature: number;
}

/**
 * The mean over loss tokens of KL(before ‖ after), estimated per token on the rollouts' own tokens with veRL's
 * low-variance form k3 = r − 1 − log r, r = π_after / π_before (never negative, 0 when nothing moved).
 */
export function stepKl(
  before: readonly Float32Array[],
  after: readonly Float32Array[],
  masks: readonly Uint8Array[],
): number {
  let sum = 0;
  let count = 0;
  before.forEach((row, i) => {
    for (let j = 0; j < row.length; j++) {
      if (!masks[i][j]) continue;
      const logRatio = after[i][j] - row[j];
      sum += Math.expm1(logRatio) - logRatio;
      count++;
    }
  });
  return count ? sum / count : 0;
}

/**
 * The change of the successful rollouts' log-likelihood, in nats per rollout (the sum over its loss tokens of
 * log π_after − log π_before, averaged over the rollouts that succeeded); NaN when none did.
 */
export function successLogProbChange(
  before: readonly Float32Array[],
  after: readonly Float32Array[],
  masks: readonly Uint8Array[],
  success: readonly boolean[],
): number {
  let sum = 0;
  let count = 0;
  before.forEach((row, i) => {
    if (!success[i]) return;
    for (let j = 0; j < row.length; j++) if (masks[i][j]) sum += after[i][j] - row[j];
    count++;
  });
  return count ? sum / count : NaN;
}

/** What one guarded step did: its own result, how far it moved the policy (NaN when it wrote nothing), and whether it was undone. */
export interface GuardedStep<R> {
  result: R;
  kl: number;
  successChange: number;
  undone: boolean;
  /** The probe's log-probs under the weights the model has now (after the step, or before it when it was undone). */
  current: Float32Array[];
}

/**
 * Runs `step` (one optimizer step of the actor) inside the trust region. `before`: the probe's log-probs under the
 * model's current weights when the caller has them (the previous guarded step's `current`), so that consecutive
 * steps score the probe once each instead of twice.
 */
export async function stepWithinTrustRegion<R extends { applied: boolean }>(
  o: StepTrustRegionOptions,
  step: () => Promise<R>,
  before?: Float32Array[],
): Promise<GuardedStep<R>> {
  const { seqs, success } = o.probe;
  const micro = chunks(
    seqs.map((_, i) => i),
    o.microBatchSize,
  );
  const score = async () => (await scoreLogProbs(o.model, seqs, micro, o.padId, undefined, o.temperature)).logProbs;
  before ??= await score();
  const vars = o.model.trainableVariables;
  const weights = Object.fromEntries(Object.entries(vars).map(([name, v]) => [name, tf.clone(v)]));
  const moments = o.optimizer.getState();
  try {
    const result = await step();
    if (!result.applied) return { result, kl: NaN, successChange: NaN, undone: false, current: before };
    const after = await score();
    const masks = seqs.map((x) => x.lossMask);
    const kl = stepKl(before, after, masks);
    const successChange = successLogProbChange(before, after, masks, success);
    // A non-finite KL is undone too; a step with no success to measure passes that measure.
    const undone = (o.maxKl > 0 && !(kl <= o.maxKl)) || (o.maxSuccessDrop > 0 && successChange < -o.maxSuccessDrop);
    if (undone) {
      for (const [name, v] of Object.entries(vars)) v.assign(weights[name]);
      o.optimizer.setState(moments);
    }
    return { result, kl, successChange, undone, current: undone ? before : after };
  } finally {
    tf.dispose([...Object.values(weights), ...Object.values(moments.m), ...Object.values(moments.v)]);
  }
}
