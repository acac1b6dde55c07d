// One PPO optimizer step over a mini-batch, and the losses it minimises: the critic's, shared by the Trainer and by
// the helper worker (helper.ts), which runs the critic's updates on a second core with exactly this code, and the
// actor's.
import * as tf from '@tensorflow/tfjs';
import type { AdamW } from '../model/adamw';
import type { Qwen2Model } from '../model/qwen2';
import { accumulateGrads, namedVariableGrads, stopGradient, tokenLogProbs } from '../model/scoring';
import {
  chunks,
  disposeBatch,
  padBatch,
  padRows,
  unpadRows,
  type PaddedBatch,
  type TokenizedTrajectory,
} from './batch';
import type { ActorConfig, LossAggMode, RunConfig } from './config';
import { klLoss } from './kl';
import { actorLoss, entropyLoss, policyLoss, valueLoss } from './losses';

/**
 * A loss over one micro-batch: the scalar to minimise, the named scalars to log (each averaged over the
 * micro-batches of a mini-batch) and, optionally, per-token rows [micro, T-1] to read back (the values or log-probs
 * the forward pass computed anyway). Called inside the gradient computation.
 */
export type MicroBatchLoss = (
  batch: PaddedBatch,
  micro: readonly number[],
) => { loss: tf.Scalar; stats: Record<string, tf.Scalar>; rows?: Record<string, tf.Tensor2D> };

/** Rows a mini-batch update read back, by name, one Float32Array per trajectory of the mini-batch (in its order). */
export type UpdateRows = Record<string, Float32Array[]>;

export interface MiniBatchUpdateOptions {
  model: Qwen2Model;
  optimizer: AdamW;
  /** Trajectories per micro-batch (gradient accumulation). */
  microBatchSize: number;
  /** Global grad-norm clip. */
  gradClip: number;
  padId: number;
  /** Name of the grad-norm metric, e.g. 'actor/grad_norm'. */
  gradNormKey: string;
  /** Test hook: may replace the loss before it is differentiated (TrainerOptions.lossHook). */
  lossHook?: (loss: tf.Scalar) => tf.Scalar;
}

/**
 * One optimizer step over a mini-batch, gradients accumulated over its micro-batches (each micro-batch's loss
 * divided by their number, veRL's gradient accumulation); the logged parts of the loss are averaged over the
 * micro-batches. Clipped to the global grad norm, and skipped (nothing written) when the loss, the grad norm or any
 * updated weight or moment is not finite (a huge lr or weight decay can do that to finite gradients).
 */
export async function miniBatchUpdate(
  o: MiniBatchUpdateOptions,
  seqs: readonly TokenizedTrajectory[],
  mini: readonly number[],
  lossOf: MicroBatchLoss,
): Promise<{ applied: boolean; stats: Record<string, number>; rows: UpdateRows }> {
  const micros = chunks(mini, o.microBatchSize);
  let grads: Record<string, tf.Tensor> | null = null;
  let lossSum = 0;
  const parts: Record<string, number[]> = {};
  const rowsRead: UpdateRows = {};
  try {
    for (const micro of micros) {
      const batch = padBatch(
        micro.map((i) => seqs[i]),
        o.padId,
      );
      // Filled inside the gradient computation: the names of the logged parts, and their values with the loss
      // stacked into one tensor (one read-back per micro-batch), and any rows to read back, kept past the
      // gradient's tidy.
      const log: { names: string[]; readout?: tf.Tensor; rows: Record<string, tf.Tensor2D> } = { names: [], rows: {} };
      try {
        const { value, grads: g } = namedVariableGrads(o.model.trainableVariables, () => {
          const { loss: raw, stats, rows } = lossOf(batch, micro);
          const loss = o.lossHook ? o.lossHook(raw) : raw;
          log.names = Object.keys(stats);
          log.readout = tf.keep(tf.stack([...log.names.map((n) => stats[n]), loss]));
          for (const [name, t] of Object.entries(rows ?? {})) log.rows[name] = tf.keep(t);
          return tf.div(loss, micros.length) as tf.Scalar;
        });
        value.dispose();
        grads = accumulateGrads(grads, g);
        const values = Array.from(await log.readout!.data());
        log.names.forEach((name, k) => (parts[name] ??= []).push(values[k]));
        lossSum += values[log.names.length];
        const lengths = micro.map((i) => seqs[i].ids.length - 1);
        for (const [name, t] of Object.entries(log.rows))
          (rowsRead[name] ??= []).push(...(await unpadRows(t, lengths)));
      } finally {
        tf.dispose([...(log.readout ? [log.readout] : []), ...Object.values(log.rows)]);
        disposeBatch(batch);
      }
    }
    const stats: Record<string, number> = {};
    for (const [k, v] of Object.entries(parts)) stats[k] = v.reduce((a, b) => a + b, 0) / v.length;
    if (!Number.isFinite(lossSum)) {
      stats[o.gradNormKey] = NaN;
      return { applied: false, stats, rows: rowsRead };
    }
    const { norm, applied } = await o.optimizer.stepClipped(grads!, o.gradClip);
    stats[o.gradNormKey] = norm;
    return { applied, stats, rows: rowsRead };
  } finally {
    if (grads) tf.dispose(Object.values(grads));
  }
}

/**
 * The critic's clipped value loss on a micro-batch, with its clip fraction and mean prediction for the log. With
 * `oldValues` null the old values are the forward pass's own (updateForwardReusable), detached and read back
 * as rows 'values'.
 */
export function criticLoss(
  critic: Qwen2Model,
  cfg: { cliprangeValue: number; lossAggMode: LossAggMode },
  oldValues: readonly Float32Array[] | null,
  returns: readonly Float32Array[],
): MicroBatchLoss {
  return (batch, micro) => {
    const width = batch.length - 1;
    const values = (critic.forward(batch.ids, batch.attention, batch.sharedPrefix) as tf.Tensor2D).slice(
      [0, 0],
      [micro.length, width],
    );
    const vf = valueLoss({
      values,
      oldValues: oldValues
        ? padRows(
            micro.map((i) => oldValues[i]),
            width,
          )
        : stopGradient(values),
      returns: padRows(
        micro.map((i) => returns[i]),
        width,
      ),
      mask: batch.lossMask,
      clipRange: cfg.cliprangeValue,
      aggMode: cfg.lossAggMode,
    });
    const vpred = tf.div(tf.sum(tf.mul(values, batch.lossMask)), tf.maximum(tf.sum(batch.lossMask), 1)) as tf.Scalar;
    return {
      loss: vf.loss,
      stats: { 'critic/vf_loss': vf.loss, 'critic/vf_clipfrac': vf.clipfrac, 'critic/vpred_mean': vpred },
      ...(oldValues ? {} : { rows: { values } }),
    };
  };
}

/**
 * Whether a step's update over `trajectories` can take the old log-probs and the critic's values from its own
 * forward pass instead of scoring the batch first: one epoch over one mini-batch (StarPO-S's kept 25 % = one
 * mini-batch) starts from the very weights that would score it, so the first forward computes exactly what scoring
 * would (the ratio is 1 either way). It also needs returns that do not depend on values or old log-probs (GAE with
 * gamma = lambda = 1, no KL folded into the reward). The Trainer adds what the config does not say: no reference
 * model, and no critic on a helper (scoring and updating side by side beat reusing the forward pass there).
 */
export function updateForwardReusable(c: RunConfig, trajectories: number): boolean {
  const gaeOk = c.algorithm.advEstimator !== 'gae' || (c.algorithm.gamma === 1 && c.algorithm.lambda === 1);
  return c.actor.ppoEpochs === 1 && trajectories <= c.actor.ppoMiniBatchSize && gaeOk;
}

/** Whether the actor's loss has a KL term: switched on, with a coefficient, and a reference to measure it against. */
export function usesKlLoss(a: ActorConfig, refLogProbs: readonly Float32Array[] | null): boolean {
  return a.useKlLoss && a.klLossCoef > 0 && refLogProbs !== null;
}

/**
 * The actor's loss on a micro-batch: clipped surrogate - entropy bonus [+ KL loss], with its parts for the log, the
 * actor scored at the rollout `temperature` (as veRL). With `oldLogProbs` null the old policy is the current one
 * (updateForwardReusable): the forward pass's own log-probs, detached, which are also read back as rows
 * 'logProbs' and 'entropy'.
 */
export function actorUpdateLoss(
  actor: Qwen2Model,
  cfg: { actor: ActorConfig; temperature: number },
  oldLogProbs: readonly Float32Array[] | null,
  advantages: readonly Float32Array[],
  refLogProbs: readonly Float32Array[] | null,
): MicroBatchLoss {
  const a = cfg.actor;
  const useKlLoss = usesKlLoss(a, refLogProbs);
  return (batch, micro) => {
    const width = batch.length - 1;
    const { logProbs, entropy } = tokenLogProbs(actor, batch.ids, batch.attention, cfg.temperature, {
      fromTarget: batch.firstLossTarget,
      sharedPrefix: batch.sharedPrefix,
    });
    const pg = policyLoss({
      logProbs,
      oldLogProbs: oldLogProbs
        ? padRows(
            micro.map((i) => oldLogProbs[i]),
            width,
          )
        : stopGradient(logProbs),
      advantages: padRows(
        micro.map((i) => advantages[i]),
        width,
      ),
      mask: batch.lossMask,
      clipLow: a.clipRatioLow,
      clipHigh: a.clipRatioHigh,
      clipRatioC: a.clipRatioC,
      aggMode: a.lossAggMode,
    });
    const ent = entropyLoss(entropy, batch.lossMask, a.lossAggMode);
    const kl = useKlLoss
      ? klLoss(
          logProbs,
          padRows(
            micro.map((i) => refLogProbs![i]),
            width,
          ),
          batch.lossMask,
          a.klLossType,
          a.lossAggMode,
        )
      : undefined;
    return {
      loss: actorLoss({
        pgLoss: pg.loss,
        entropyLoss: ent,
        entropyCoeff: a.entropyCoeff,
        klLoss: kl,
        klCoef: a.klLossCoef,
      }),
      stats: {
        'actor/pg_loss': pg.loss,
        'actor/pg_clipfrac': pg.clipfrac,
        'actor/pg_clipfrac_lower': pg.clipfracLower,
        'actor/ppo_kl': pg.ppoKl,
        'actor/entropy_loss': ent,
        ...(kl ? { 'actor/kl_loss': kl } : {}),
      },
      ...(oldLogProbs ? {} : { rows: { logProbs, entropy } }),
    };
  };
}
