// From rendered trajectories to the token rows the trainer scores and updates on (spec §3.4, §10.4).
//
// A trajectory in training mode is a list of segments (system, user, assistant, reward-user, ...), each starting
// with `<|im_start|>`, a special token, so tokenizing segment by segment gives the same ids as tokenizing the
// whole text. A token in a trainable segment is a POSITION whose next token is trained on; shifting by one
// (`targetMaskFromPositionMask`) turns that into a mask over prediction targets, aligned with the model's
// log-probs, which score ids[1..]. So every per-token row here (loss mask, log-probs, values, advantages) has
// length ids.length - 1: index t is the prediction of ids[t + 1].
//
// Padding: rows are right-padded, on WebGPU to a few fixed lengths (buckets) so that it compiles few shaders and its
// buffer pools stay bounded (PLATFORM.md); on wasm and cpu, which compile nothing, to a multiple of 8 only. Padding is
// masked out of attention and of the loss, and a real token never attends to a padded one, so the padded length
// changes no real row's numbers (the same weights bit for bit on wasm: BENCHMARKS.md).
import * as tf from '@tensorflow/tfjs';
import { targetMaskFromPositionMask, type RenderedPrompt } from '../agent/index';
import type { Qwen2Model } from '../model/qwen2';
import { tokenLogProbs } from '../model/scoring';
import type { Tokenizer } from '../model/tokenizer';

/** One trajectory as token ids plus its loss mask over prediction targets (length ids.length - 1, 0/1). */
export interface TokenizedTrajectory {
  ids: number[];
  lossMask: Uint8Array;
}

/** Tokenizes a training-mode rendering and builds RAGEN's loss mask (trainable segments, shifted by one). */
export function tokenizeTrajectory(tokenizer: Tokenizer, rendered: RenderedPrompt): TokenizedTrajectory {
  const ids: number[] = [];
  const positionMask: boolean[] = [];
  for (const segment of rendered.segments) {
    const segmentIds = tokenizer.encode(segment.text);
    for (const id of segmentIds) {
      ids.push(id);
      positionMask.push(segment.trainable);
    }
  }
  if (ids.length < 2)
    throw new Error(`tokenizeTrajectory: a training sequence needs at least 2 tokens, got ${ids.length}`);
  const lossMask = Uint8Array.from(targetMaskFromPositionMask(positionMask), (on) => (on ? 1 : 0));
  return { ids, lossMask };
}

/** A trajectory's first loss target (its first trained prediction), or -1 when it has none. */
export function firstLossTarget(t: TokenizedTrajectory): number {
  return t.lossMask.indexOf(1);
}

/** Number of loss tokens of a trajectory (RAGEN's `response_length`: the trained tokens). */
export function lossTokenCount(t: TokenizedTrajectory): number {
  let n = 0;
  for (const m of t.lossMask) n += m;
  return n;
}

/** Backends that compile a program per tensor shape, and so want few padded lengths. */
const SHAPE_COMPILING_BACKENDS = new Set(['webgpu', 'webgl']);

/**
 * The padded length for a sequence of `n` tokens. Bucketed (`buckets` true, the default on webgpu and webgl): a
 * multiple of 32 up to 256, then of 128, so short sequences (tiny presets) waste little and long ones (Qwen presets,
 * thousands of tokens) still get few shapes. Otherwise a multiple of 8: a tiny preset's rows were 13 % padding at
 * 32, every padded position a query that attention and every matmul compute for nothing.
 */
export function bucketLength(n: number, buckets = SHAPE_COMPILING_BACKENDS.has(tf.getBackend())): number {
  if (!Number.isInteger(n) || n < 1) throw new Error(`bucketLength: expected a positive integer length, got ${n}`);
  if (!buckets) return Math.ceil(n / 8) * 8;
  return n <= 256 ? Math.ceil(n / 32) * 32 : Math.ceil(n / 128) * 128;
}

/** A padded batch as tensors. The caller disposes them (`disposeBatch`). */
export interface PaddedBatch {
  /** [B, T] int32 token ids, right-padded with the pad token. */
  ids: tf.Tensor2D;
  /** [B, T] float32: 1 on real tokens, 0 on padding (attention mask). */
  attention: tf.Tensor2D;
  /** [B, T - 1] float32 loss mask over prediction targets. */
  lossMask: tf.Tensor2D;
  /** T, the padded length (bucketLength). */
  length: number;
  /**
   * The first loss target of any row (0 when no row has one): scoring starts its LM head there
   * (`tokenLogProbs`' fromTarget), since nothing before it is read. In RAGEN's rows that is after the first prompt.
   */
  firstLossTarget: number;
  /**
   * How many leading tokens every row has in common (0 for a single row): the system prompt and whatever else the
   * rows repeat, which a model with sharePrefix runs through its layers once (Qwen2Model.hidden). Always below the
   * shortest row's length, so the shared tokens are real tokens in every row.
   */
  sharedPrefix: number;
}

/** The length of the longest token prefix all `items` share, below the shortest one's length; 0 for one item. */
export function sharedPrefixLength(items: readonly TokenizedTrajectory[]): number {
  if (items.length < 2) return 0;
  const first = items[0].ids;
  const limit = Math.min(...items.map((t) => t.ids.length)) - 1;
  let n = 0;
  while (n < limit && items.every((t) => t.ids[n] === first[n])) n++;
  return n;
}

/** Pads trajectories into one batch of the padded length of the longest (bucketLength; `buckets` as there). */
export function padBatch(items: readonly TokenizedTrajectory[], padTokenId: number, buckets?: boolean): PaddedBatch {
  if (items.length === 0) throw new Error('padBatch: no trajectories');
  const length = bucketLength(Math.max(...items.map((t) => t.ids.length)), buckets);
  const rows = items.length;
  const ids = new Int32Array(rows * length).fill(padTokenId);
  const attention = new Float32Array(rows * length);
  const lossMask = new Float32Array(rows * (length - 1));
  items.forEach((t, r) => {
    t.ids.forEach((id, j) => {
      ids[r * length + j] = id;
      attention[r * length + j] = 1;
    });
    t.lossMask.forEach((m, j) => {
      lossMask[r * (length - 1) + j] = m;
    });
  });
  const firsts = items.map(firstLossTarget).filter((j) => j >= 0);
  return {
    ids: tf.tensor2d(ids, [rows, length], 'int32'),
    attention: tf.tensor2d(attention, [rows, length]),
    lossMask: tf.tensor2d(lossMask, [rows, length - 1]),
    length,
    firstLossTarget: firsts.length > 0 ? Math.min(...firsts) : 0,
    sharedPrefix: sharedPrefixLength(items),
  };
}

export function disposeBatch(batch: PaddedBatch): void {
  tf.dispose([batch.ids, batch.attention, batch.lossMask]);
}

/**
 * Stacks per-trajectory rows (each of its own length, ids.length - 1) into a [B, width] float32 tensor, padding
 * with zeros. Used for old log-probs, reference log-probs, values, advantages and returns of a micro-batch.
 */
export function padRows(rows: readonly ArrayLike<number>[], width: number): tf.Tensor2D {
  const out = new Float32Array(rows.length * width);
  rows.forEach((row, r) => {
    if (row.length > width)
      throw new Error(`padRows: row ${r} has ${row.length} entries, more than the width ${width}`);
    for (let j = 0; j < row.length; j++) out[r * width + j] = row[j];
  });
  return tf.tensor2d(out, [rows.length, width]);
}

/** Reads a [B, width] tensor back as one row per trajectory, each cut to that trajectory's own length. */
export async function unpadRows(t: tf.Tensor, lengths: readonly number[]): Promise<Float32Array[]> {
  const [rows, width] = t.shape;
  if (rows !== lengths.length)
    throw new Error(`unpadRows: tensor has ${rows} rows but ${lengths.length} lengths were given`);
  const data = (await t.data()) as Float32Array;
  return lengths.map((n, r) => {
    if (n > (width as number)) throw new Error(`unpadRows: row ${r} wants ${n} entries, the tensor is ${width} wide`);
    return data.slice(r * (width as number), r * (width as number) + n);
  });
}

/** Splits [0, n) into consecutive chunks of at most `size` indices (mini-batches, micro-batches). */
export function chunks(indices: readonly number[], size: number): number[][] {
  if (!Number.isInteger(size) || size < 1) throw new Error(`chunks: size must be a positive integer, got ${size}`);
  const out: number[][] = [];
  for (let i = 0; i < indices.length; i += size) out.push(indices.slice(i, i + size));
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// Scoring without gradients, micro-batch by micro-batch, read back as rows

/**
 * Per-token log-probs of `model` on every trajectory of `microBatches` (0 before the micro-batch's first loss target,
 * which no loss reads), and each one's mean loss-token entropy.
 */
export async function scoreLogProbs(
  model: Qwen2Model,
  seqs: readonly TokenizedTrajectory[],
  microBatches: readonly (readonly number[])[],
  padId: number,
  /** Awaited after each micro-batch (progress; a throw stops the scoring with nothing held). */
  afterEach?: () => void | Promise<void>,
  /** Logits are divided by it before the softmax: the rollout temperature, as veRL scores. */
  temperature = 1,
): Promise<{ logProbs: Float32Array[]; entropyMeans: number[] }> {
  const logProbs: Float32Array[] = [];
  const entropyMeans: number[] = [];
  for (const part of microBatches) {
    const items = part.map((i) => seqs[i]);
    const batch = padBatch(items, padId);
    const lengths = items.map((x) => x.ids.length - 1);
    const out = tf.tidy(() =>
      tokenLogProbs(model, batch.ids, batch.attention, temperature, {
        fromTarget: batch.firstLossTarget,
        sharedPrefix: batch.sharedPrefix,
      }),
    );
    try {
      logProbs.push(...(await unpadRows(out.logProbs, lengths)));
      const ent = await unpadRows(out.entropy, lengths);
      ent.forEach((row, r) => {
        const mask = items[r].lossMask;
        let s = 0,
          n = 0;
        for (let j = 0; j < row.length; j++)
          if (mask[j]) {
            s += row[j];
            n++;
          }
        entropyMeans.push(n ? s / n : 0);
      });
    } finally {
      tf.dispose([out.logProbs, out.entropy]);
      disposeBatch(batch);
    }
    await afterEach?.();
  }
  return { logProbs, entropyMeans };
}

/** The critic's value at every target position of every trajectory of `microBatches`, 0 outside the loss mask. */
export async function scoreValues(
  critic: Qwen2Model,
  seqs: readonly TokenizedTrajectory[],
  microBatches: readonly (readonly number[])[],
  padId: number,
  /** Awaited after each micro-batch (progress; a throw stops the scoring with nothing held). */
  afterEach?: () => void | Promise<void>,
): Promise<Float32Array[]> {
  const values: Float32Array[] = [];
  for (const part of microBatches) {
    const items = part.map((i) => seqs[i]);
    const batch = padBatch(items, padId);
    const out = tf.tidy(() => {
      const v = critic.forward(batch.ids, batch.attention, batch.sharedPrefix) as tf.Tensor2D;
      return v.slice([0, 0], [items.length, batch.length - 1]);
    });
    try {
      const rows = await unpadRows(
        out,
        items.map((x) => x.ids.length - 1),
      );
      rows.forEach((row, r) => {
        for (let j = 0; j < row.length; j++) if (!items[r].lossMask[j]) row[j] = 0;
      });
      values.push(...rows);
    } finally {
      out.dispose();
      disposeBatch(batch);
    }
    await afterEach?.();
  }
  return values;
}
