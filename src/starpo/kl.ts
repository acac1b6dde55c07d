// KL to the reference policy: veRL's per-token estimators, used in two places depending on the algorithm (§4.4, §4.6).
//
// How the trainer uses this file:
//   - PPO with reward-KL (vanilla StarPO at paper time: beta = 0.001, estimator 'kl'; StarPO-S: beta = 0, i.e. skip):
//     once per step, on plain rows read back from the model, BEFORE GAE:
//         const { rewards, metrics } = applyKlInReward(rewards, oldLogProbs, refLogProbs, mask, beta, 'kl');
//     `metrics` holds `critic/kl` and `critic/kl_coeff`.
//   - GRPO with a KL loss (`use_kl_loss`, coef 0.001, estimator 'kl'): inside the differentiated closure,
//         const kl = klLoss(logProbs, refLogProbs, mask, 'kl', aggMode);   // `actor/kl_loss`
//     and pass it to losses.ts `actorLoss({ ..., klLoss: kl, klCoef })`.
//
// Estimators of KL(pi || pi_ref) per token, with d = logp - logref (veRL's `kl_penalty`):
//   'kl'         k1 = d                                 (unbiased, high variance, can be negative)
//   'abs'        |d|
//   'mse'        k2 = 0.5 * d^2
//   'low_var_kl' k3 = exp(-d) - (-d) - 1 = e^x - x - 1 with x = logref - logp; always >= 0; x is clamped to
//                [-20, 20] first (so exp stays finite, and so does its gradient) and k3 to [-10, 10] after.

import * as tf from '@tensorflow/tfjs';
import type { TokenRows } from './advantages';
import { KL_ESTIMATORS, type KlEstimator, type LossAggMode } from './config';
import { aggregateLoss } from './losses';

export { KL_ESTIMATORS, type KlEstimator };

const K3_INPUT_LIMIT = 20;
const K3_OUTPUT_LIMIT = 10;

function checkEstimator(estimator: KlEstimator): void {
  if (!(KL_ESTIMATORS as readonly string[]).includes(estimator)) {
    throw new Error(`unknown KL estimator '${estimator as string}' (expected ${KL_ESTIMATORS.join(', ')})`);
  }
}

/** One token's KL estimate from the two log-probs (plain numbers; float64). */
export function klEstimate(logProb: number, refLogProb: number, estimator: KlEstimator): number {
  checkEstimator(estimator);
  const d = logProb - refLogProb;
  switch (estimator) {
    case 'kl':
      return d;
    case 'abs':
      return Math.abs(d);
    case 'mse':
      return 0.5 * d * d;
    case 'low_var_kl': {
      const x = Math.min(K3_INPUT_LIMIT, Math.max(-K3_INPUT_LIMIT, -d));
      // expm1(x) - x instead of exp(x) - x - 1: the same value without cancellation when x is tiny.
      return Math.min(K3_OUTPUT_LIMIT, Math.max(-K3_OUTPUT_LIMIT, Math.expm1(x) - x));
    }
  }
}

/** Per-token KL estimate as a differentiable [B, T] tensor (gradient flows through `logProbs`). */
export function klPenalty(logProbs: tf.Tensor, refLogProbs: tf.Tensor, estimator: KlEstimator): tf.Tensor {
  checkEstimator(estimator);
  if (logProbs.shape.join(',') !== refLogProbs.shape.join(',')) {
    throw new Error(
      `KL: logProbs shape [${logProbs.shape.join(', ')}] differs from refLogProbs [${refLogProbs.shape.join(', ')}]`,
    );
  }
  return tf.tidy(() => {
    const d = tf.sub(logProbs, refLogProbs);
    if (estimator === 'kl') return d;
    if (estimator === 'abs') return tf.abs(d);
    if (estimator === 'mse') return tf.mul(tf.square(d), 0.5);
    const x = tf.clipByValue(tf.neg(d), -K3_INPUT_LIMIT, K3_INPUT_LIMIT);
    return tf.clipByValue(tf.sub(tf.expm1(x), x), -K3_OUTPUT_LIMIT, K3_OUTPUT_LIMIT);
  });
}

/**
 * `actor/kl_loss` for GRPO's KL-as-loss: the estimator aggregated over the loss mask like the policy loss
 * (default 'token-mean'). Multiply by `kl_loss_coef` in losses.ts `actorLoss`.
 */
export function klLoss(
  logProbs: tf.Tensor,
  refLogProbs: tf.Tensor,
  mask: tf.Tensor,
  estimator: KlEstimator,
  aggMode: LossAggMode = 'token-mean',
): tf.Scalar {
  return tf.tidy(() => aggregateLoss(klPenalty(logProbs, refLogProbs, estimator), mask, aggMode));
}

/**
 * KL folded into the reward (PPO, spec §4.6): r_t <- r_t - beta * KL_t(old, ref) on loss tokens, where KL_t is the
 * estimator applied to the rollout-time log-probs (pi_old, not the policy being trained) against pi_ref. Positions
 * outside the mask keep their reward unchanged (a zero KL there).
 *
 * Metrics: `critic/kl` = mean over trajectories of each trajectory's mean KL over its loss tokens (trajectories
 * without loss tokens are left out), `critic/kl_coeff` = beta. The controller is RAGEN's fixed one: beta is a
 * constant (`algorithm.kl_ctrl.kl_coef`).
 */
export function applyKlInReward(
  rewards: TokenRows,
  oldLogProbs: TokenRows,
  refLogProbs: TokenRows,
  mask: TokenRows,
  beta: number,
  estimator: KlEstimator = 'kl',
): { rewards: Float32Array[]; metrics: { 'critic/kl': number; 'critic/kl_coeff': number } } {
  checkEstimator(estimator);
  if (!(beta >= 0 && Number.isFinite(beta)))
    throw new Error(`reward-KL coefficient beta must be a finite number >= 0, got ${beta}`);
  for (const [name, rows] of [
    ['rewards', rewards],
    ['oldLogProbs', oldLogProbs],
    ['refLogProbs', refLogProbs],
  ] as const) {
    if (rows.length !== mask.length)
      throw new Error(`applyKlInReward: ${name} has ${rows.length} rows, the loss mask ${mask.length}`);
    rows.forEach((r, i) => {
      if (r.length !== mask[i].length) {
        throw new Error(
          `applyKlInReward: ${name} row ${i} has length ${r.length}, the loss mask row ${mask[i].length}`,
        );
      }
    });
  }
  let klSum = 0;
  let seqs = 0;
  const out = mask.map((m, i) => {
    const row = Float32Array.from(rewards[i]);
    let seqKl = 0;
    let n = 0;
    for (let t = 0; t < m.length; t++) {
      if (m[t] !== 1) {
        if (m[t] !== 0) throw new Error(`loss mask row ${i} position ${t} is ${m[t]}: a loss mask holds only 0 or 1`);
        continue;
      }
      const k = klEstimate(oldLogProbs[i][t], refLogProbs[i][t], estimator);
      if (!Number.isFinite(k)) throw new Error(`applyKlInReward: KL at row ${i} position ${t} is ${k}`);
      row[t] = rewards[i][t] - beta * k;
      seqKl += k;
      n++;
    }
    if (n > 0) {
      klSum += seqKl / n;
      seqs++;
    }
    return row;
  });
  return { rewards: out, metrics: { 'critic/kl': seqs > 0 ? klSum / seqs : 0, 'critic/kl_coeff': beta } };
}
