// Scoring for training: per-token log-probs and entropy of given sequences, differentiable (call it inside
// tf.variableGrads / tf.grad). Position t scores token t+1, so both outputs are [B, T-1]; the caller applies its
// loss mask (prompt and padding positions are scored too, and must be masked out).
import * as tf from '@tensorflow/tfjs';
import { tokenLogProbs as fusedTokenLogProbs } from './kernels/index';
import type { Qwen2Model } from './qwen2';

/**
 * logProbs[b, t] = log softmax(logits[b, t] / temperature)[ids[b, t+1]]
 * entropy[b, t]  = entropy of that full softmax (RAGEN's `actor/entropy_loss` is its masked mean)
 * veRL scores the actor and the reference at the rollout temperature (RAGEN's 1.0), so the trainer passes it on.
 */
export function tokenLogProbs(model: Qwen2Model, ids: tf.Tensor2D, mask?: tf.Tensor2D, temperature = 1):
    { logProbs: tf.Tensor2D; entropy: tf.Tensor2D } {
  if (model.hasValueHead) throw new Error('tokenLogProbs: this model has a value head, not an LM head');
  if (ids.dtype !== 'int32') throw new Error(`tokenLogProbs: ids must be int32, got ${ids.dtype}`);
  if (ids.shape[1] < 2) throw new Error(`tokenLogProbs: need at least 2 tokens per sequence, got ${ids.shape[1]}`);
  if (!(temperature > 0)) throw new Error(`tokenLogProbs: temperature must be > 0, got ${temperature}`);
  return tf.tidy(() => {
    const [b, t] = ids.shape;
    const h = model.config.hidden_size;
    // The LM head only on positions that predict a token (all but each row's last), then one fused kernel for
    // log-softmax, the target's log-prob and the entropy (src/model/kernels).
    const hidden = model.hidden(ids, mask).reshape([b, t, h]).slice([0, 0, 0], [b, t - 1, h]).reshape([b * (t - 1), h]);
    const targets = ids.slice([0, 1], [b, t - 1]).reshape([b * (t - 1)]) as tf.Tensor1D;
    const [logProbs, entropy] = fusedTokenLogProbs(model.head(hidden as tf.Tensor2D) as tf.Tensor2D, targets, temperature);
    return { logProbs: logProbs.reshape([b, t - 1]) as tf.Tensor2D, entropy: entropy.reshape([b, t - 1]) as tf.Tensor2D };
  });
}

/**
 * tf.variableGrads keyed by our names (e.g. HF weight names) instead of tfjs's internal variable names.
 * f must return a scalar loss built from the variables; returns the loss and the gradients (caller disposes).
 */
/**
 * Gradient accumulation: adds `grads` into `acc` (null = nothing yet), disposing what is replaced. Returns the sums;
 * they, and nothing else, are left for the caller to dispose.
 */
export function accumulateGrads(acc: Record<string, tf.Tensor> | null, grads: Record<string, tf.Tensor>): Record<string, tf.Tensor> {
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

export function namedVariableGrads(vars: Record<string, tf.Variable>, f: () => tf.Scalar):
    { value: tf.Scalar; grads: Record<string, tf.Tensor> } {
  const entries = Object.entries(vars);
  const { value, grads } = tf.variableGrads(f, entries.map(([, v]) => v));
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
