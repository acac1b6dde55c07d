// A trust region on each optimizer step of the actor (`actor.maxStepKl`, not a RAGEN key). PPO's clip bounds how far
// the importance ratio may pull the loss, but not how far one AdamW step moves the policy: on the tiny echo-trap model
// a single step on a single kept group can break the answer format on every prompt (docs/lab/echo-trap-probes.md).
// So all of the step's rollouts, the groups the filter dropped included, are scored before and after the step, and a
// step whose KL between the two policies on them exceeds the bound is undone: the weights and AdamW's moments and
// step count go back to what they were, as if the step had never been taken. The dropped groups matter: the kept
// group's own tokens are the ones the step means to move, the others are the ones it should leave alone.
import * as tf from '@tensorflow/tfjs';
import type { AdamW } from '../model/adamw';
import type { Qwen2Model } from '../model/qwen2';
import { chunks, scoreLogProbs, type TokenizedTrajectory } from './batch';

export interface StepTrustRegionOptions {
  model: Qwen2Model;
  optimizer: AdamW;
  /** The bound on the step's KL (actor.maxStepKl, > 0). */
  maxKl: number;
  /** The trajectories the KL is measured on: every rollout of the step. */
  probe: readonly TokenizedTrajectory[];
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
 * Runs `step` (one optimizer step of the actor) inside the trust region: returns the step's own result, the KL it
 * moved the policy by (NaN when it wrote nothing), and whether it was undone.
 */
export async function stepWithinKl<R extends { applied: boolean }>(
  o: StepTrustRegionOptions,
  step: () => Promise<R>,
): Promise<{ result: R; kl: number; undone: boolean }> {
  const micro = chunks(
    o.probe.map((_, i) => i),
    o.microBatchSize,
  );
  const score = async () => (await scoreLogProbs(o.model, o.probe, micro, o.padId, undefined, o.temperature)).logProbs;
  const before = await score();
  const vars = o.model.trainableVariables;
  const weights = Object.fromEntries(Object.entries(vars).map(([name, v]) => [name, tf.clone(v)]));
  const moments = o.optimizer.getState();
  try {
    const result = await step();
    if (!result.applied) return { result, kl: NaN, undone: false };
    const kl = stepKl(
      before,
      await score(),
      o.probe.map((x) => x.lossMask),
    );
    const undone = !(kl <= o.maxKl); // a non-finite KL is undone too
    if (undone) {
      for (const [name, v] of Object.entries(vars)) v.assign(weights[name]);
      o.optimizer.setState(moments);
    }
    return { result, kl, undone };
  } finally {
    tf.dispose([...Object.values(weights), ...Object.values(moments.m), ...Object.values(moments.v)]);
  }
}
