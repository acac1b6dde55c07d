// Scoring for training: per-token log-probs and entropy of given sequences, differentiable (call it inside
// tf.variableGrads / tf.grad). Position t scores token t+1, so both outputs are [B, T-1]; the caller applies its
// loss mask (prompt and padding positions are scored too, and must be masked out), or names with `fromTarget` the
// first position it reads, and the LM head skips the ones before it.
import * as tf from '@tensorflow/tfjs';
import {
  tokenLogProbs as fusedTokenLogProbs,
  tokenLogProbsGrad as fusedTokenLogProbsGrad,
  unfused,
} from './kernels/index';
import { withOwnTape, type Qwen2Model } from './qwen2';

/**
 * Above this many logits (rows x vocabulary) the LM head runs in chunks of rows (chunkedHeadLogProbs): 2^25 floats,
 * 128 MiB. Qwen2.5-0.5B's 151,936-token vocabulary reaches it at 221 scored tokens; the tiny models never do.
 */
export const HEAD_CHUNK_ELEMENTS = 2 ** 25;

/**
 * logProbs[b, t] = log softmax(logits[b, t] / temperature)[ids[b, t+1]]
 * entropy[b, t]  = entropy of that full softmax (RAGEN's `actor/entropy_loss` is its masked mean)
 * veRL scores the actor and the reference at the rollout temperature (RAGEN's 1.0), so the trainer passes it on.
 */
export function tokenLogProbs(
  model: Qwen2Model,
  ids: tf.Tensor2D,
  mask?: tf.Tensor2D,
  temperature = 1,
  opts: {
    chunkRows?: number;
    /**
     * The first prediction position the caller reads (a batch's first loss target,
     * `PaddedBatch.firstLossTarget`): the LM head runs from there on, and both outputs are
     * 0 before it. Why: RAGEN's first prompt is most of a trajectory's tokens, and for
     * Qwen's 151,936-token vocabulary the head is most of a short model's work. Default 0.
     */
    fromTarget?: number;
    /** The length of the token prefix every row shares (PaddedBatch's sharedPrefix; Qwen2Model.hidden). Default 0. */
    sharedPrefix?: number;
  } = {},
): { logProbs: tf.Tensor2D; entropy: tf.Tensor2D } {
  if (model.hasValueHead) throw new Error('tokenLogProbs: this model has a value head, not an LM head');
  if (ids.dtype !== 'int32') throw new Error(`tokenLogProbs: ids must be int32, got ${ids.dtype}`);
  if (ids.shape[1] < 2) throw new Error(`tokenLogProbs: need at least 2 tokens per sequence, got ${ids.shape[1]}`);
  if (!(temperature > 0)) throw new Error(`tokenLogProbs: temperature must be > 0, got ${temperature}`);
  return tf.tidy(() => {
    const [b, t] = ids.shape;
    const h = model.config.hidden_size;
    const from = opts.fromTarget ?? 0;
    if (!Number.isInteger(from) || from < 0 || from > t - 2)
      throw new Error(`tokenLogProbs: fromTarget must be an integer in [0, ${t - 2}], got ${from}`);
    const n = t - 1 - from;
    // The LM head only on positions that predict a token the caller reads (from `from` to each row's last but one),
    // then one fused kernel for log-softmax, the target's log-prob and the entropy (src/model/kernels).
    const hidden = model
      .hidden(ids, mask, opts.sharedPrefix ?? 0)
      .reshape([b, t, h])
      .slice([0, from, 0], [b, n, h])
      .reshape([b * n, h]);
    const targets = ids.slice([0, from + 1], [b, n]).reshape([b * n]) as tf.Tensor1D;
    const rows = b * n,
      vocab = model.config.vocab_size;
    const chunkRows =
      opts.chunkRows ??
      (rows * vocab > HEAD_CHUNK_ELEMENTS ? Math.max(1, Math.floor(HEAD_CHUNK_ELEMENTS / vocab)) : rows);
    let logProbs: tf.Tensor, entropy: tf.Tensor;
    if (chunkRows >= rows) {
      [logProbs, entropy] = fusedTokenLogProbs(model.head(hidden as tf.Tensor2D) as tf.Tensor2D, targets, temperature);
    } else {
      const head = model.variables[
        model.config.tie_word_embeddings ? 'model.embed_tokens.weight' : 'lm_head.weight'
      ] as tf.Tensor2D;
      // With LoRA the head is frozen: no gradient for it (a [V, H] tensor) is computed.
      [logProbs, entropy] = tf.unstack(
        chunkedHeadLogProbs(hidden as tf.Tensor2D, head, targets, temperature, chunkRows, {
          frozenWeight: model.lora !== null,
        }),
      );
    }
    const full = (x: tf.Tensor) =>
      (from === 0
        ? x.reshape([b, n])
        : x.reshape([b, n]).pad([
            [0, 0],
            [from, 0],
          ])) as tf.Tensor2D;
    return { logProbs: full(logProbs), entropy: full(entropy) };
  });
}

/**
 * The LM head and tokenLogProbs over `chunkRows` rows at a time, as one custom-gradient op: [2, N] (log-probs, then
 * entropies) from hidden [N, H] and the output projection [V, H]. Neither the full logits [N, V] nor their gradient
 * ever exist: the forward keeps only hidden and the weight, and the backward computes each chunk's logits again,
 * its logit gradient, and from that the chunk's share of d hidden and d weight (summed over the chunks). Why: for
 * Qwen2.5-0.5B a 1,536-token sequence has 0.93 GB of logits per copy, and a plain tape holds several.
 * Each chunk's logits are computed as (W h^T)^T, which transposes the small operand (tfjs-wasm's matmul transposes
 * a transposed operand before running, and the weight is 545 MB).
 */
export function chunkedHeadLogProbs(
  hidden: tf.Tensor2D,
  weight: tf.Tensor2D,
  targets: tf.Tensor1D,
  temperature: number,
  chunkRows: number,
  opts: { frozenWeight?: boolean } = {},
): tf.Tensor2D {
  const rows = hidden.shape[0];
  const starts: number[] = [];
  for (let r = 0; r < rows; r += chunkRows) starts.push(r);
  const size = (start: number) => Math.min(chunkRows, rows - start);
  const logitsOf = (h: tf.Tensor2D, w: tf.Tensor2D) => tf.matMul(w, h, false, true).transpose() as tf.Tensor2D;
  // `frozenWeight` (LoRA): the weight is not an input of the op, so the backward computes no gradient for it.
  const frozen = opts.frozenWeight ?? false;
  const op = tf.customGrad((...args: Array<tf.Tensor | tf.GradSaveFunc>) => {
    const [h, w, tg, save] = (frozen ? [args[0], weight, args[1], args[2]] : args) as [
      tf.Tensor2D,
      tf.Tensor2D,
      tf.Tensor1D,
      tf.GradSaveFunc,
    ];
    save(frozen ? [h, tg] : [h, w, tg]);
    const parts = starts.map((start) =>
      tf.tidy(() => {
        const logits = logitsOf(h.slice([start, 0], [size(start), -1]), w);
        return tf.stack(fusedTokenLogProbs(logits, tg.slice([start], [size(start)]), temperature));
      }),
    );
    return {
      value: parts.length === 1 ? parts[0] : tf.concat(parts, 1),
      gradFunc: (dy: tf.Tensor | tf.Tensor[], saved: tf.Tensor[]) => {
        const [hs, ws, tgs] = (frozen ? [saved[0], weight, saved[1]] : saved) as [
          tf.Tensor2D,
          tf.Tensor2D,
          tf.Tensor1D,
        ];
        const dh: tf.Tensor[] = [];
        let dw: tf.Tensor | null = null;
        for (const start of starts) {
          const part = tf.tidy(() => {
            const n = size(start);
            const h1 = hs.slice([start, 0], [n, -1]);
            const t1 = tgs.slice([start], [n]);
            const d = (dy as tf.Tensor).slice([0, start], [2, n]);
            const dLogits = logitsGrad(
              d.slice([0, 0], [1, n]).reshape([n]),
              d.slice([1, 0], [1, n]).reshape([n]),
              logitsOf(h1, ws),
              t1,
              temperature,
            );
            // Frozen (LoRA): d hidden as (W^T dLogits^T)^T, the same product with the [V, H] weight as the left operand:
            // tfjs-wasm's matmul packs its right operand into a copy, which for Qwen2.5-3B's 1.2 GB head overflows
            // the 4 GB heap. (The trainable path keeps its plain product: its results are pinned by other tests.)
            return frozen
              ? { dh: tf.matMul(ws, dLogits, true, true).transpose() }
              : { dh: tf.matMul(dLogits, ws), dw: tf.matMul(dLogits, h1, true, false) };
          }) as { dh: tf.Tensor; dw?: tf.Tensor };
          dh.push(part.dh);
          if (!part.dw) continue;
          if (dw) {
            const sum: tf.Tensor = tf.add(dw, part.dw);
            tf.dispose([dw, part.dw]);
            dw = sum;
          } else {
            dw = part.dw;
          }
        }
        const dHidden = dh.length === 1 ? dh[0] : tf.concat(dh, 0);
        if (dh.length > 1) tf.dispose(dh);
        return frozen ? [dHidden, tf.zerosLike(tgs)] : [dHidden, dw!, tf.zerosLike(tgs)];
      },
    };
  });
  return (frozen ? op(hidden, targets) : op(hidden, weight, targets)) as tf.Tensor2D;
}

/** d loss / d logits of tokenLogProbs: the fused kernel, or the stock ops' gradient where there is none. */
function logitsGrad(
  dLogProbs: tf.Tensor1D,
  dEntropy: tf.Tensor1D,
  logits: tf.Tensor2D,
  targets: tf.Tensor1D,
  temperature: number,
): tf.Tensor2D {
  const fused = fusedTokenLogProbsGrad(dLogProbs, dEntropy, logits, targets, temperature);
  if (fused) return fused;
  return withOwnTape(() =>
    tf.grad((lg: tf.Tensor) => {
      const [lp, ent] = unfused.tokenLogProbs(lg as tf.Tensor2D, targets, temperature);
      return lp.mul(dLogProbs).sum().add(ent.mul(dEntropy).sum());
    })(logits),
  ) as tf.Tensor2D;
}

/**
 * tf.variableGrads keyed by our names (e.g. HF weight names) instead of tfjs's internal variable names.
 * f must return a scalar loss built from the variables; returns the loss and the gradients (caller disposes).
 */
/**
 * Gradient accumulation: adds `grads` into `acc` (null = nothing yet), disposing what is replaced. Returns the sums;
 * they, and nothing else, are left for the caller to dispose.
 */
export function accumulateGrads(
  acc: Record<string, tf.Tensor> | null,
  grads: Record<string, tf.Tensor>,
): Record<string, tf.Tensor> {
  if (!acc) return grads;
  for (const [name, g] of Object.entries(grads)) {
    const prev = acc[name];
    if (prev) {
      acc[name] = tf.add(prev, g);
      prev.dispose();
      g.dispose();
    } else {
      acc[name] = g;
    }
  }
  return acc;
}

export function namedVariableGrads(
  vars: Record<string, tf.Variable>,
  f: () => tf.Scalar,
): { value: tf.Scalar; grads: Record<string, tf.Tensor> } {
  const entries = Object.entries(vars);
  const { value, grads } = tf.variableGrads(
    f,
    entries.map(([, v]) => v),
  );
  const named: Record<string, tf.Tensor> = {};
  // A variable the loss does not depend on gets no entry (as a PyTorch parameter whose .grad stays None).
  for (const [name, variable] of entries) if (grads[variable.name]) named[name] = grads[variable.name];
  return { value, grads: named };
}

/** x's value with no gradient flowing back through it (PyTorch's `detach`). */
export function stopGradient<T extends tf.Tensor>(x: T): T {
  const detach = tf.customGrad((...args: Array<tf.Tensor | tf.GradSaveFunc>) => {
    const input = args[0] as tf.Tensor;
    return { value: input.clone(), gradFunc: (dy: tf.Tensor) => [tf.zerosLike(dy)] };
  });
  return detach(x) as T;
}
