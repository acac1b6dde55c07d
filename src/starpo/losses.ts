// StarPO's actor and critic losses as differentiable tfjs functions (spec §4.4).
//
// How the trainer uses this file, once per mini-batch (or micro-batch), inside the closure it differentiates:
//   actor:  const pg  = policyLoss({ logProbs, oldLogProbs, advantages, mask, clipLow: 0.2, clipHigh: 0.28,
//                                    clipRatioC: 3, aggMode: 'token-mean' });
//           const ent = entropyLoss(entropy, mask, 'token-mean');
//           loss = actorLoss({ pgLoss: pg.loss, entropyLoss: ent, entropyCoeff: 0.001,
//                              klLoss /* kl.ts, GRPO only */, klCoef });
//   critic: const vf  = valueLoss({ values, oldValues, returns, mask, clipRange: 0.5 });
// then global-norm gradient clipping (1.0) and AdamW. With micro-batches the trainer divides each micro-batch's loss
// by the number of micro-batches (veRL's gradient accumulation); that scaling is the trainer's, not done here.
//
// Shapes: every per-token input is a [B, T] float32 tensor (B trajectories, T positions of the shifted sequence)
// and `mask` is the [B, T] loss mask of 0/1. `logProbs` and `entropy`/`values` come from the current model and carry
// gradients; `oldLogProbs`, `advantages`, `oldValues` and `returns` are constants from the rollout.
//
// Outputs: the loss is a differentiable scalar tensor. Metrics (clip fractions, ppo_kl) are scalar tensors too, so
// nothing is read back inside the hot path: read them once per step with `await t.data()` (inside a tf.tidy or
// a tf.variableGrads closure, `tf.keep` the ones to read after it ends, and dispose them after reading).
// Each function runs in its own tf.tidy: it leaves behind exactly the tensors it returns.
//
// Masked positions never influence a loss, a metric or a gradient: per-token terms are selected with the mask
// (tf.where, not a multiplication, so even a huge value there cannot turn into Inf * 0 = NaN) and the log-ratio is
// clamped before exp(). The mask must hold only 0 and 1 (not checked: that would need a read-back).

import * as tf from '@tensorflow/tfjs';
import { LOSS_AGG_MODES, type LossAggMode } from './config';

export { LOSS_AGG_MODES, type LossAggMode };

/*
 * How per-token losses become one scalar (veRL's `loss_agg_mode`, listed in config/schema.ts LOSS_AGG_MODES):
 * - 'token-mean' (RAGEN default): sum over all loss tokens of the batch / number of loss tokens.
 * - 'seq-mean-token-mean' (RAGEN-2's GRPO): per trajectory, mean over its loss tokens; then mean over trajectories.
 * - 'seq-mean-token-sum' (Dr.GRPO): per trajectory, sum over its loss tokens; then mean over trajectories.
 * - 'seq-mean-token-sum-norm': sum over all loss tokens / a constant (default T, the padded length; veRL says the
 *   divisor "should ideally be constant throughout training", so pass `normDivisor` when T varies with bucketing).
 * Trajectories without any loss token (padding rows) are left out of the seq-mean modes' averages (veRL would give
 * NaN for 'seq-mean-token-mean'). A batch with no loss token at all aggregates to 0 (and a zero gradient).
 */

function check2d(name: string, t: tf.Tensor, shape: readonly number[]): void {
  if (t.rank !== 2 || t.shape[0] !== shape[0] || t.shape[1] !== shape[1]) {
    throw new Error(
      `${name} has shape [${t.shape.join(', ')}], expected [${shape.join(', ')}] (the loss mask's [B, T])`,
    );
  }
}

function checkMask(mask: tf.Tensor): void {
  if (mask.rank !== 2) throw new Error(`loss mask must be a [B, T] tensor, got shape [${mask.shape.join(', ')}]`);
}

/** x on loss tokens, exactly 0 elsewhere (and a zero gradient there). */
function onLossTokens(x: tf.Tensor, mask: tf.Tensor): tf.Tensor {
  return tf.where(tf.greater(mask, 0), x, tf.zerosLike(x));
}

/** sum(x on loss tokens) / max(sum(mask), 1): the masked mean over all positions (veRL's `masked_mean`). */
export function maskedMean(x: tf.Tensor, mask: tf.Tensor): tf.Scalar {
  checkMask(mask);
  check2d('masked mean input', x, mask.shape);
  return tf.tidy(() => {
    const count = tf.maximum(tf.sum(mask), 1);
    return tf.div(tf.sum(onLossTokens(x, mask)), count) as tf.Scalar;
  });
}

/** Aggregates a [B, T] matrix of per-token losses over the loss mask; see `LossAggMode`. */
export function aggregateLoss(lossMat: tf.Tensor, mask: tf.Tensor, mode: LossAggMode, normDivisor?: number): tf.Scalar {
  checkMask(mask);
  check2d('per-token loss', lossMat, mask.shape);
  if (!(LOSS_AGG_MODES as readonly string[]).includes(mode)) {
    throw new Error(`unknown loss aggregation mode '${mode as string}' (expected ${LOSS_AGG_MODES.join(', ')})`);
  }
  if (normDivisor !== undefined && !(normDivisor > 0)) {
    throw new Error(`seq-mean-token-sum-norm divisor must be > 0, got ${normDivisor}`);
  }
  return tf.tidy(() => {
    const masked = onLossTokens(lossMat, mask);
    if (mode === 'token-mean') return tf.div(tf.sum(masked), tf.maximum(tf.sum(mask), 1)) as tf.Scalar;
    if (mode === 'seq-mean-token-sum-norm') {
      return tf.div(tf.sum(masked), normDivisor ?? (mask.shape[1] as number)) as tf.Scalar;
    }
    const tokensPerSeq = tf.sum(mask, 1); // [B]
    const seqHasTokens = tf.cast(tf.greater(tokensPerSeq, 0), 'float32');
    let seqLoss = tf.sum(masked, 1); // [B] token sums
    if (mode === 'seq-mean-token-mean') seqLoss = tf.div(seqLoss, tf.maximum(tokensPerSeq, 1));
    return tf.div(tf.sum(tf.mul(seqLoss, seqHasTokens)), tf.maximum(tf.sum(seqHasTokens), 1)) as tf.Scalar;
  });
}

export interface PolicyLossArgs {
  /** log pi_theta(token) under the current policy, [B, T], differentiable. */
  logProbs: tf.Tensor;
  /** log pi_old(token), recomputed by the trainer on the re-tokenised sequence (spec §10.4), [B, T]. */
  oldLogProbs: tf.Tensor;
  /** Per-token advantages (whitened GAE, or broadcast GRPO scalars), [B, T]. */
  advantages: tf.Tensor;
  /** Loss mask, [B, T]. */
  mask: tf.Tensor;
  /** epsilon_low: the ratio is clipped below at 1 - clipLow. RAGEN: 0.2. */
  clipLow: number;
  /** epsilon_high: the ratio is clipped above at 1 + clipHigh. StarPO-S "clip-higher": 0.28; vanilla: 0.2. */
  clipHigh: number;
  /** Dual-clip constant c (> 1): for A < 0 the per-token loss is capped at -A * c. RAGEN: 3. */
  clipRatioC: number;
  /** Aggregation of per-token losses; default 'token-mean'. Clip fractions and ppo_kl are always token means. */
  aggMode?: LossAggMode;
  /** Divisor for 'seq-mean-token-sum-norm' (default T). */
  normDivisor?: number;
}

export interface PolicyLossResult {
  /** `actor/pg_loss`: the aggregated clipped surrogate loss (to minimise). */
  loss: tf.Scalar;
  /** `actor/pg_clipfrac`: fraction of loss tokens where the clipped term was the larger (active) one. */
  clipfrac: tf.Scalar;
  /** `actor/pg_clipfrac_lower`: fraction of loss tokens with A < 0 where the dual clip -A * c was active. */
  clipfracLower: tf.Scalar;
  /** `actor/ppo_kl`: masked mean of (log pi_old - log pi_theta). */
  ppoKl: tf.Scalar;
}

/** The log-ratio is clamped to this range before exp() so that exp never overflows (as veRL does). */
const LOG_RATIO_LIMIT = 20;

/**
 * PPO clipped surrogate with decoupled clip range (clip-higher) and dual clip, per token (spec §4.4):
 *   rho  = exp(logp - logp_old)
 *   L1   = max(-A * rho, -A * clip(rho, 1 - eps_low, 1 + eps_high))
 *   loss = A < 0 ? min(L1, -A * c) : L1
 * then aggregated over the loss mask by `aggMode`.
 */
export function policyLoss(args: PolicyLossArgs): PolicyLossResult {
  const { logProbs, oldLogProbs, advantages, mask, clipLow, clipHigh, clipRatioC } = args;
  const aggMode = args.aggMode ?? 'token-mean';
  checkMask(mask);
  check2d('logProbs', logProbs, mask.shape);
  check2d('oldLogProbs', oldLogProbs, mask.shape);
  check2d('advantages', advantages, mask.shape);
  if (!(clipLow >= 0 && clipLow < 1)) throw new Error(`clipLow (epsilon_low) must be in [0, 1), got ${clipLow}`);
  if (!(clipHigh >= 0 && Number.isFinite(clipHigh)))
    throw new Error(`clipHigh (epsilon_high) must be >= 0, got ${clipHigh}`);
  if (!(clipRatioC > 1 && Number.isFinite(clipRatioC))) {
    throw new Error(`clipRatioC (dual-clip c) must be a finite number > 1, got ${clipRatioC}`);
  }
  return tf.tidy(() => {
    const logRatio = tf.clipByValue(tf.sub(logProbs, oldLogProbs), -LOG_RATIO_LIMIT, LOG_RATIO_LIMIT);
    const ratio = tf.exp(logRatio);
    const negA = tf.neg(advantages);
    const unclipped = tf.mul(negA, ratio);
    const clipped = tf.mul(negA, tf.clipByValue(ratio, 1 - clipLow, 1 + clipHigh));
    const clipLoss = tf.maximum(unclipped, clipped);
    const dualCap = tf.mul(negA, clipRatioC);
    const negative = tf.less(advantages, 0);
    const perToken = tf.where(negative, tf.minimum(clipLoss, dualCap), clipLoss);

    const loss = aggregateLoss(perToken, mask, aggMode, args.normDivisor);
    const clipfrac = maskedMean(tf.cast(tf.greater(clipped, unclipped), 'float32'), mask);
    const lowerActive = tf.logicalAnd(tf.greater(clipLoss, dualCap), negative);
    const clipfracLower = maskedMean(tf.cast(lowerActive, 'float32'), mask);
    const ppoKl = maskedMean(tf.neg(logRatio), mask);
    return { loss, clipfrac, clipfracLower, ppoKl };
  });
}

/**
 * `actor/entropy_loss`: the per-token entropy of the full softmax (computed by the model) aggregated like the
 * policy loss. It is a quantity to MAXIMISE: the actor loss subtracts entropyCoeff times it (see `actorLoss`).
 */
export function entropyLoss(
  entropy: tf.Tensor,
  mask: tf.Tensor,
  aggMode: LossAggMode = 'token-mean',
  normDivisor?: number,
): tf.Scalar {
  return aggregateLoss(entropy, mask, aggMode, normDivisor);
}

/** Actor objective: pg_loss - entropyCoeff * entropy_loss (+ klCoef * kl_loss for GRPO with `use_kl_loss`). */
export function actorLoss(args: {
  pgLoss: tf.Scalar;
  entropyLoss: tf.Scalar;
  /** `entropy_coeff`, RAGEN: 0.001. */
  entropyCoeff: number;
  /** From kl.ts `klLoss`, only when the KL is a loss term (GRPO); omit otherwise. */
  klLoss?: tf.Scalar;
  /** `kl_loss_coef`: vanilla GRPO 0.001, StarPO-S 0. */
  klCoef?: number;
}): tf.Scalar {
  return tf.tidy(() => {
    let loss = tf.sub(args.pgLoss, tf.mul(args.entropyLoss, args.entropyCoeff));
    if (args.klLoss && args.klCoef) loss = tf.add(loss, tf.mul(args.klLoss, args.klCoef));
    return loss as tf.Scalar;
  });
}

export interface ValueLossArgs {
  /** Current critic predictions, [B, T], differentiable. */
  values: tf.Tensor;
  /** Critic predictions at rollout time (the ones GAE used), [B, T]. */
  oldValues: tf.Tensor;
  /** GAE returns (A + V), [B, T]. */
  returns: tf.Tensor;
  mask: tf.Tensor;
  /** `cliprange_value`: predictions are clipped to oldValues +/- clipRange. RAGEN: 0.5. */
  clipRange: number;
  /** Default 'token-mean' (RAGEN's critic). */
  aggMode?: LossAggMode;
  normDivisor?: number;
}

/**
 * Clipped value loss (spec §4.4): 0.5 * agg(max((V - R)^2, (clip(V, V_old - c, V_old + c) - R)^2)).
 * `clipfrac` (`critic/vf_clipfrac`) = token fraction where the clipped error was the larger one.
 */
export function valueLoss(args: ValueLossArgs): { loss: tf.Scalar; clipfrac: tf.Scalar } {
  const { values, oldValues, returns, mask, clipRange } = args;
  checkMask(mask);
  check2d('values', values, mask.shape);
  check2d('oldValues', oldValues, mask.shape);
  check2d('returns', returns, mask.shape);
  if (!(clipRange > 0 && Number.isFinite(clipRange)))
    throw new Error(`value clipRange must be a finite number > 0, got ${clipRange}`);
  return tf.tidy(() => {
    const clippedValues = tf.minimum(tf.maximum(values, tf.sub(oldValues, clipRange)), tf.add(oldValues, clipRange));
    const err = tf.square(tf.sub(values, returns));
    const errClipped = tf.square(tf.sub(clippedValues, returns));
    const perToken = tf.maximum(err, errClipped);
    const loss = tf.mul(
      aggregateLoss(perToken, mask, args.aggMode ?? 'token-mean', args.normDivisor),
      0.5,
    ) as tf.Scalar;
    const clipfrac = maskedMean(tf.cast(tf.greater(errClipped, err), 'float32'), mask);
    return { loss, clipfrac };
  });
}
