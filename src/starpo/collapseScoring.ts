// The model side of RAGEN-2's collapse diagnostics (src/metrics/collapse.ts): Σ_t log p(z_t | x, z_<t) of many
// (prompt x, continuation z) pairs by teacher forcing, without gradients, and the diagnostics of one training step
// (collapseDiagnostics, called by the Trainer).
//
// The cross-scored matrix scores every sampled reasoning under every prompt of the sample: few distinct prompts, each
// paired with many short reasonings (a multi-turn prompt is hundreds of tokens, a reasoning a few dozen). So the
// pairs are grouped by prompt, and each prompt is run through the model once: its first |x| − 1 tokens fill a KV cache
// (generate.ts's cache and cached-attention kernel), which every micro-batch of that prompt's continuations then
// extends with [x_last, z_0 .. z_{L−2}], whose outputs predict z_0 .. z_{L−1}. Rows are right-padded to the longest
// continuation of the micro-batch; padding is hidden from attention (key mask) and from the sums. The LM head and the
// fused log-softmax kernel run on the continuation positions only, so memory is bounded by microBatchSize × (|x| + L)
// cache slots per layer and microBatchSize × L × vocab logits.
import * as tf from '@tensorflow/tfjs';
import type { Trajectory } from '../agent/index';
import {
  FIRST_TURN_PREFIX,
  collapseTrajectories,
  computeCollapseMetrics,
  shouldComputeCollapse,
  type CollapseResult,
  type CollapseState,
} from '../metrics/collapse';
import { headDim } from '../model/config';
import { embed, tokenLogProbs as fusedTokenLogProbs } from '../model/kernels/index';
import { disposeInferenceWeights, type InferenceWeights, type KvCache, type Qwen2Model } from '../model/qwen2';
import { mixSeed, seededUniform } from '../model/seeded';
import type { Tokenizer } from '../model/tokenizer';
import { bucketLength, chunks } from './batch';
import type { RunConfig } from './config';

/** Mixed into the seed of the collapse diagnostics' sampling, so it never repeats another random stream. */
const COLLAPSE_STREAM = 0xc011a95e;
const now = () => (typeof performance !== 'undefined' ? performance.now() : Date.now()) / 1000;

/** Whether RAGEN-2's collapse diagnostics run at training step `step`: on, with reasoning to diagnose, and on schedule. */
export function collapseDue(config: RunConfig, step: number): boolean {
  const c = config.collapse;
  return (
    c.enabled && config.model.enableThink && (c.firstTurn || c.trajectory) && shouldComputeCollapse(step, c.computeFreq)
  );
}

/**
 * The cross-scored MI metrics of one step's trajectories, teacher-forcing on the actor, from the moving averages of
 * `state` (the returned state replaces it once the step completes). The pairs are drawn from a stream seeded by
 * (trainer seed, step, strategy): a resumed run draws the same pairs.
 */
export async function collapseDiagnostics(
  actor: Qwen2Model,
  tokenizer: Tokenizer,
  trajectories: readonly Trajectory[],
  o: {
    config: RunConfig;
    step: number;
    padId: number;
    state: CollapseState;
    log: (line: string) => void;
    onProgress: (done: number, total: number) => void | Promise<void>;
  },
): Promise<CollapseResult> {
  const c = o.config.collapse;
  const start = now();
  const microBatchSize = c.microBatchSize ?? o.config.actor.ppoMicroBatchSize;
  const result = await computeCollapseMetrics(
    collapseTrajectories(trajectories, (text) => tokenizer.encode(text)),
    (pairs) => continuationLogProbSums(actor, pairs, { microBatchSize, padId: o.padId, onProgress: o.onProgress }),
    (prefix) =>
      seededUniform(mixSeed(o.config.trainer.seed, o.step, COLLAPSE_STREAM, prefix === FIRST_TURN_PREFIX ? 1 : 2)),
    c,
    o.state,
    now,
  );
  for (const note of result.notes) o.log(`step ${o.step}: collapse diagnostics: ${note}`);
  result.metrics['timing_s/collapse_metrics'] = now() - start;
  return result;
}

export interface ContinuationPair {
  prompt: readonly number[];
  continuation: readonly number[];
}

export interface ContinuationScoringOptions {
  /** Continuations per forward pass (all of one prompt). */
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
export async function continuationLogProbSums(
  model: Qwen2Model,
  pairs: readonly ContinuationPair[],
  opts: ContinuationScoringOptions,
): Promise<Float64Array> {
  if (model.hasValueHead) throw new Error('continuationLogProbSums: this model has a value head, not an LM head');
  const out = new Float64Array(pairs.length);
  // Group by prompt; within a prompt, similar continuation lengths share a micro-batch (less padding).
  const byPrompt = new Map<string, number[]>();
  pairs.forEach((p, i) => {
    if (p.prompt.length === 0 || p.continuation.length === 0)
      throw new Error(`continuationLogProbSums: pair ${i} has an empty prompt or continuation`);
    const key = p.prompt.join(',');
    const list = byPrompt.get(key);
    if (list) list.push(i);
    else byPrompt.set(key, [i]);
  });
  const groups = [...byPrompt.values()].map((indices) => {
    indices.sort((a, b) => pairs[a].continuation.length - pairs[b].continuation.length || a - b);
    return chunks(indices, opts.microBatchSize);
  });
  const total = groups.reduce((n, g) => n + g.length, 0);
  const weights = model.inferenceWeights();
  let done = 0;
  try {
    for (const microBatches of groups) {
      const prompt = pairs[microBatches[0][0]].prompt;
      const longest = Math.max(...microBatches.flat().map((i) => pairs[i].continuation.length));
      const prefix = prefillPrompt(model, weights, prompt, bucketLength(prompt.length - 1 + longest));
      try {
        for (const micro of microBatches) {
          const sums = await scoreContinuations(
            model,
            weights,
            prefix,
            micro.map((i) => pairs[i].continuation),
            opts.padId,
          );
          micro.forEach((i, r) => (out[i] = sums[r]));
          await opts.onProgress?.(++done, total);
        }
      } finally {
        disposeCache(prefix.cache);
      }
    }
  } finally {
    disposeInferenceWeights(weights);
  }
  return out;
}

/** A one-row KV cache holding a prompt's first |x| − 1 tokens (slots 0 .. |x| − 2), and its last token. */
interface PromptPrefix {
  cache: KvCache;
  capacity: number;
  /** Cache slots in use: |x| − 1. */
  filled: number;
  lastToken: number;
}

function prefillPrompt(
  model: Qwen2Model,
  weights: InferenceWeights,
  prompt: readonly number[],
  capacity: number,
): PromptPrefix {
  const c = model.config;
  const width = c.num_key_value_heads * headDim(c);
  let cache: KvCache = { k: [], v: [] };
  for (let l = 0; l < c.num_hidden_layers; l++) {
    cache.k.push(tf.zeros([1, capacity, width]));
    cache.v.push(tf.zeros([1, capacity, width]));
  }
  const filled = prompt.length - 1;
  if (filled > 0) {
    const ids = tf.tensor2d(prompt.slice(0, filled) as number[], [1, filled], 'int32');
    const positions = tf.range(0, filled, 1, 'int32') as tf.Tensor1D;
    const keyMask = tf.tensor2d(
      Float32Array.from({ length: capacity }, (_, s) => (s < filled ? 1 : 0)),
      [1, capacity],
    );
    try {
      const out = model.hiddenWithCache(ids, positions, filled - 1, keyMask, 0, cache, weights);
      out.hidden.dispose();
      disposeCache(cache);
      cache = out.cache;
    } finally {
      tf.dispose([ids, positions, keyMask]);
    }
  }
  return { cache, capacity, filled, lastToken: prompt[prompt.length - 1] };
}

/** One micro-batch: continuations of the prefilled prompt. */
async function scoreContinuations(
  model: Qwen2Model,
  weights: InferenceWeights,
  prefix: PromptPrefix,
  continuations: readonly (readonly number[])[],
  padId: number,
): Promise<Float64Array> {
  const rows = continuations.length;
  const longest = Math.max(...continuations.map((z) => z.length));
  const { capacity, filled } = prefix;
  // Row r feeds [x_last, z_0 .. z_{n−2}] at slots filled .. filled + n − 1; output t predicts z_t.
  const ids = new Int32Array(rows * longest).fill(padId);
  const targets = new Int32Array(rows * longest).fill(padId);
  const targetMask = new Float32Array(rows * longest);
  const keyMask = new Float32Array(rows * capacity);
  continuations.forEach((z, r) => {
    ids[r * longest] = prefix.lastToken;
    z.forEach((id, t) => {
      if (t + 1 < z.length) ids[r * longest + t + 1] = id;
      targets[r * longest + t] = id;
      targetMask[r * longest + t] = 1;
    });
    keyMask.fill(1, r * capacity, r * capacity + filled + z.length);
  });
  const positions = Int32Array.from({ length: rows * longest }, (_, i) => filled + (i % longest));
  const idsT = tf.tensor2d(ids, [rows, longest], 'int32');
  const positionsT = tf.tensor1d(positions, 'int32');
  const keyMaskT = tf.tensor2d(keyMask, [rows, capacity]);
  // Every row continues the same prompt: its cache, copied per row (with the embedding-lookup kernel, as generate.ts
  // gathers cache rows: tfjs-wasm's Tile and GatherV2 are an order of magnitude slower).
  const rowsCache: KvCache = tf.tidy(() => {
    const index = tf.zeros([rows], 'int32') as tf.Tensor1D;
    const copy = (t: tf.Tensor3D) =>
      embed(t.reshape([1, t.shape[1] * t.shape[2]]), index).reshape([rows, t.shape[1], t.shape[2]]) as tf.Tensor3D;
    return { k: prefix.cache.k.map(copy), v: prefix.cache.v.map(copy) };
  });
  let sums: tf.Tensor2D | null = null;
  try {
    const out = model.hiddenWithCache(idsT, positionsT, filled + longest - 1, keyMaskT, filled, rowsCache, weights);
    disposeCache(out.cache);
    sums = tf.tidy(() => {
      const [logProbs] = fusedTokenLogProbs(
        model.head(out.hidden, weights) as tf.Tensor2D,
        tf.tensor1d(targets, 'int32'),
        1,
      );
      out.hidden.dispose();
      return logProbs.reshape([rows, longest]).mul(tf.tensor2d(targetMask, [rows, longest])) as tf.Tensor2D;
    });
    const data = (await sums.data()) as Float32Array;
    const result = new Float64Array(rows);
    for (let r = 0; r < rows; r++) {
      let s = 0;
      for (let t = 0; t < longest; t++) s += data[r * longest + t];
      result[r] = s;
    }
    return result;
  } finally {
    disposeCache(rowsCache);
    tf.dispose([idsT, positionsT, keyMaskT]);
    sums?.dispose();
  }
}

function disposeCache(cache: KvCache): void {
  tf.dispose([...cache.k, ...cache.v]);
}
