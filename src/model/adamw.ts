// AdamW exactly as PyTorch's torch.optim.AdamW computes it (decoupled weight decay, bias correction, eps added
// outside the square root), and global-norm gradient clipping as torch.nn.utils.clip_grad_norm_.
//   param *= 1 - lr * weightDecay
//   m = b1 m + (1 - b1) g;   v = b2 v + (1 - b2) g^2
//   param -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
import * as tf from '@tensorflow/tfjs';

export interface AdamWOptions {
  lr: number;                    // learning rate (RAGEN: actor 1e-6, critic 1e-5); may be changed between steps
  betas?: [number, number];      // moment decay rates; default [0.9, 0.999]
  eps?: number;                  // added to the bias-corrected sqrt(v); default 1e-8
  weightDecay?: number;          // decoupled weight decay; default 0.01 (PyTorch's and RAGEN's)
}

/** Optimizer state for checkpoints. getState returns copies the caller owns; setState copies what it is given. */
export interface AdamWState {
  step: number;                              // number of steps taken (bias correction uses it)
  m: Record<string, tf.Tensor>;              // first moments, by variable name
  v: Record<string, tf.Tensor>;              // second moments, by variable name
}

export class AdamW {
  lr: number;
  readonly betas: [number, number];
  readonly eps: number;
  readonly weightDecay: number;
  private stepCount = 0;
  private readonly m: Record<string, tf.Variable> = {};
  private readonly v: Record<string, tf.Variable> = {};

  constructor(private readonly vars: Record<string, tf.Variable>, opts: AdamWOptions) {
    this.lr = opts.lr;
    this.betas = opts.betas ?? [0.9, 0.999];
    this.eps = opts.eps ?? 1e-8;
    this.weightDecay = opts.weightDecay ?? 0.01;
    if (!(this.lr >= 0)) throw new Error(`AdamW: lr must be >= 0, got ${opts.lr}`);
    for (const b of this.betas) if (!(b >= 0 && b < 1)) throw new Error(`AdamW: betas must be in [0, 1), got ${this.betas}`);
    if (!(this.eps > 0)) throw new Error(`AdamW: eps must be > 0, got ${this.eps}`);
    if (!(this.weightDecay >= 0)) throw new Error(`AdamW: weightDecay must be >= 0, got ${this.weightDecay}`);
    for (const [name, variable] of Object.entries(vars)) {
      // tidy disposes the zeros tensors; the variables keep their own reference to the data.
      this.m[name] = tf.tidy(() => tf.variable(tf.zerosLike(variable), false));
      this.v[name] = tf.tidy(() => tf.variable(tf.zerosLike(variable), false));
    }
  }

  /** Steps taken so far. */
  get stepsTaken(): number { return this.stepCount; }

  /** One update from `grads` (by variable name; variables without a gradient are left alone, as PyTorch does for
   *  parameters whose .grad is None). Does not dispose the gradients. */
  step(grads: Record<string, tf.Tensor>): void {
    for (const [name, g] of Object.entries(grads)) {
      const variable = this.vars[name];
      if (!variable) throw new Error(`AdamW.step: gradient for unknown variable '${name}'`);
      if (g.shape.join(',') !== variable.shape.join(',')) {
        throw new Error(`AdamW.step: gradient '${name}' has shape [${g.shape}], variable has [${variable.shape}]`);
      }
    }
    this.stepCount++;
    const [b1, b2] = this.betas;
    const stepSize = this.lr / (1 - b1 ** this.stepCount);
    const bias2Sqrt = Math.sqrt(1 - b2 ** this.stepCount);
    tf.tidy(() => {
      for (const [name, g] of Object.entries(grads)) {
        const param = this.vars[name], m = this.m[name], v = this.v[name];
        const decayed = this.weightDecay ? param.mul(1 - this.lr * this.weightDecay) : param;
        const newM = m.mul(b1).add(g.mul(1 - b1));
        const newV = v.mul(b2).add(g.square().mul(1 - b2));
        const denom = newV.sqrt().div(bias2Sqrt).add(this.eps);
        param.assign(decayed.sub(newM.div(denom).mul(stepSize)));
        m.assign(newM);
        v.assign(newV);
      }
    });
  }

  getState(): AdamWState {
    const copy = (r: Record<string, tf.Variable>) =>
      Object.fromEntries(Object.entries(r).map(([k, t]) => [k, t.clone()])) as Record<string, tf.Tensor>;
    return { step: this.stepCount, m: copy(this.m), v: copy(this.v) };
  }

  setState(state: AdamWState): void {
    if (!Number.isInteger(state.step) || state.step < 0) throw new Error(`AdamW.setState: bad step ${state.step}`);
    for (const [which, moments] of [['m', state.m], ['v', state.v]] as const) {
      for (const name of Object.keys(this.vars)) {
        const t = moments[name];
        if (!t) throw new Error(`AdamW.setState: ${which} is missing '${name}'`);
        if (t.shape.join(',') !== this.vars[name].shape.join(',')) {
          throw new Error(`AdamW.setState: ${which}['${name}'] has shape [${t.shape}], expected [${this.vars[name].shape}]`);
        }
      }
    }
    for (const name of Object.keys(this.vars)) {
      this.m[name].assign(state.m[name]);
      this.v[name].assign(state.v[name]);
    }
    this.stepCount = state.step;
  }

  dispose(): void {
    for (const t of [...Object.values(this.m), ...Object.values(this.v)]) t.dispose();
  }
}

/** Scales gradients to a global L2 norm of at most maxNorm, on the device. Returns new tensors and the norm
 *  before clipping as a scalar tensor. Like PyTorch: coef = min(1, maxNorm / (norm + 1e-6)). */
export function clipGradNormOnDevice(grads: Record<string, tf.Tensor>, maxNorm: number):
    { grads: Record<string, tf.Tensor>; norm: tf.Scalar } {
  if (!(maxNorm > 0)) throw new Error(`clipGradNorm: maxNorm must be > 0, got ${maxNorm}`);
  const names = Object.keys(grads);
  if (!names.length) throw new Error('clipGradNorm: no gradients given');
  return tf.tidy(() => {
    // Summed pairwise, not with tf.addN: on webgpu addN binds one buffer per input and fails beyond the
    // 8 storage buffers a shader stage may have.
    let sumOfSquares = tf.scalar(0);
    for (const n of names) sumOfSquares = sumOfSquares.add(tf.sum(tf.square(grads[n])));
    const norm = tf.sqrt(sumOfSquares) as tf.Scalar;
    const coef = tf.minimum(tf.div(maxNorm, norm.add(1e-6)), 1);
    const clipped: Record<string, tf.Tensor> = {};
    for (const n of names) clipped[n] = grads[n].mul(coef);
    return { grads: clipped, norm };
  });
}

/**
 * clip_grad_norm_: returns clipped copies (the caller disposes them and the originals) and the norm before
 * clipping. A non-finite norm is returned as-is (the clipped grads are then non-finite too): the caller skips
 * the optimizer step, as RAGEN does. Reads the norm synchronously, which webgpu cannot do in Node: on webgpu use
 * clipGradNormAsync.
 */
export function clipGradNorm(grads: Record<string, tf.Tensor>, maxNorm: number):
    { grads: Record<string, tf.Tensor>; norm: number } {
  if (tf.getBackend() === 'webgpu') {
    throw new Error('clipGradNorm reads the norm synchronously, which the webgpu backend cannot do (in Node it ' +
      'crashes): use clipGradNormAsync');
  }
  const out = clipGradNormOnDevice(grads, maxNorm);
  const norm = out.norm.dataSync()[0];
  out.norm.dispose();
  return { grads: out.grads, norm };
}

/** clipGradNorm with an asynchronous read of the norm: works on every backend. */
export async function clipGradNormAsync(grads: Record<string, tf.Tensor>, maxNorm: number):
    Promise<{ grads: Record<string, tf.Tensor>; norm: number }> {
  const out = clipGradNormOnDevice(grads, maxNorm);
  const norm = (await out.norm.data())[0];
  out.norm.dispose();
  return { grads: out.grads, norm };
}
