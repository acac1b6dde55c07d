// The model side of RAGEN-2's collapse diagnostics (src/metrics/collapse.ts): Σ_t log p(z_t | x, z_<t) of many
// (prompt x, continuation z) pairs by teacher forcing, without gradients.
//
// The cross-scored matrix scores every sampled reasoning under every prompt of the sample: few distinct prompts, each
// paired with many reasonings. So the pairs are grouped by prompt, and a micro-batch holds pairs of ONE prompt: its
// rows are x ++ z_i, right-padded to a bucketed length (batch.ts's buckets, so shapes stay few), and the reasoning
// tokens of every row sit at the same positions |x| .. |x| + |z_i| − 1. The LM head and the fused log-softmax kernel
// then run on those positions only (not on the prompt), which bounds memory by microBatchSize × longest z × vocab.
import * as tf from '@tensorflow/tfjs';
import { tokenLogProbs as fusedTokenLogProbs } from '../model/kernels/index';
import type { Qwen2Model } from '../model/qwen2';
import { bucketLength, chunks } from './batch';

export interface ContinuationPair {
  prompt: readonly number[];
  continuation: readonly number[];
}

export interface ContinuationScoringOptions {
  /** Pairs per forward pass (all of one prompt). */
  microBatchSize: number;
  /** Fills the rows past their end (masked out of attention and of the sum). */
  padId: number;
  /** Called after each micro-batch with the micro-batches done and their total; awaited (a throw stops the scoring). */
  onProgress?: (done: number, total: number) => void | Promise<void>;
}

/**
 * Σ log p(continuation | prompt) of each pair, in the order given (float64 sums of float32 log-probs). Every prompt
 * and continuation needs at least one token.
 */
export async function continuationLogProbSums(model: Qwen2Model, pairs: readonly ContinuationPair[], opts: ContinuationScoringOptions): Promise<Float64Array> {
  if (model.hasValueHead) throw new Error('continuationLogProbSums: this model has a value head, not an LM head');
  const out = new Float64Array(pairs.length);
  // Group by prompt; within a prompt, similar continuation lengths share a micro-batch (less padding).
  const byPrompt = new Map<string, number[]>();
  pairs.forEach((p, i) => {
    if (p.prompt.length === 0 || p.continuation.length === 0) throw new Error(`continuationLogProbSums: pair ${i} has an empty prompt or continuation`);
    const key = p.prompt.join(',');
    const list = byPrompt.get(key);
    if (list) list.push(i);
    else byPrompt.set(key, [i]);
  });
  const microBatches: number[][] = [];
  for (const indices of byPrompt.values()) {
    indices.sort((a, b) => pairs[a].continuation.length - pairs[b].continuation.length || a - b);
    microBatches.push(...chunks(indices, opts.microBatchSize));
  }
  let done = 0;
  for (const micro of microBatches) {
    const sums = await scoreOnePrompt(model, micro.map((i) => pairs[i]), opts.padId);
    micro.forEach((i, r) => (out[i] = sums[r]));
    await opts.onProgress?.(++done, microBatches.length);
  }
  return out;
}

/** One micro-batch: pairs that share their prompt. */
async function scoreOnePrompt(model: Qwen2Model, pairs: readonly ContinuationPair[], padId: number): Promise<Float64Array> {
  const prompt = pairs[0].prompt;
  const rows = pairs.length;
  const promptLength = prompt.length;
  const longest = Math.max(...pairs.map((p) => p.continuation.length));
  const length = bucketLength(promptLength + longest);
  const ids = new Int32Array(rows * length).fill(padId);
  const attention = new Float32Array(rows * length);
  // Target t of a row is the token at position promptLength + t, predicted from position promptLength - 1 + t.
  const targets = new Int32Array(rows * longest).fill(padId);
  const targetMask = new Float32Array(rows * longest);
  pairs.forEach((p, r) => {
    const row = r * length;
    prompt.forEach((id, j) => (ids[row + j] = id));
    p.continuation.forEach((id, t) => {
      ids[row + promptLength + t] = id;
      targets[r * longest + t] = id;
      targetMask[r * longest + t] = 1;
    });
    attention.fill(1, row, row + promptLength + p.continuation.length);
  });
  const idsT = tf.tensor2d(ids, [rows, length], 'int32');
  const maskT = tf.tensor2d(attention, [rows, length]);
  const sums = tf.tidy(() => {
    const h = model.config.hidden_size;
    const hidden = model.hidden(idsT, maskT).reshape([rows, length, h]);
    const predicting = hidden.slice([0, promptLength - 1, 0], [rows, longest, h]).reshape([rows * longest, h]) as tf.Tensor2D;
    const [logProbs] = fusedTokenLogProbs(model.head(predicting) as tf.Tensor2D, tf.tensor1d(targets, 'int32'), 1);
    return logProbs.reshape([rows, longest]).mul(tf.tensor2d(targetMask, [rows, longest])) as tf.Tensor2D;
  });
  try {
    const data = (await sums.data()) as Float32Array;
    const result = new Float64Array(rows);
    for (let r = 0; r < rows; r++) {
      let s = 0;
      for (let t = 0; t < longest; t++) s += data[r * longest + t];
      result[r] = s;
    }
    return result;
  } finally {
    tf.dispose([sums, idsT, maskT]);
  }
}
