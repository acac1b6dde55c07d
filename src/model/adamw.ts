// AdamW exactly as PyTorch's torch.optim.AdamW computes it (decoupled weight decay, bias correction, eps added
// outside the square root), and global-norm gradient clipping as torch.nn.utils.clip_grad_norm_.
//   param *= 1 - lr * weightDecay
//   m = b1 m + (1 - b1) g;   v = b2 v + (1 - b2) g^2
//   param -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
import * as tf from '@tensorflow/tfjs';
import { adamWInPlace, sumOfSquares, type AdamWAttrs } from './kernels/index';

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
  // The moments of all variables live in two flat buffers, in `names` order, and a step updates every parameter
  // with one chain of element-wise ops over the concatenation, then splits the result back. The maths is the
  // per-parameter update's; what changes is the kernel count: ~14 ops per parameter tensor became ~14 in all plus
  // a concat and a split. On WebGPU each op is a dispatch with a fixed cost (BENCHMARKS.md), so this matters there.
  private readonly names: string[];
  private readonly sizes: number[];
  private readonly m: tf.Variable;
  private readonly v: tf.Variable;

  constructor(private readonly vars: Record<string, tf.Variable>, opts: AdamWOptions) {
    this.lr = opts.lr;
    this.betas = opts.betas ?? [0.9, 0.999];
    this.eps = opts.eps ?? 1e-8;
    this.weightDecay = opts.weightDecay ?? 0.01;
    if (!(this.lr >= 0)) throw new Error(`AdamW: lr must be >= 0, got ${opts.lr}`);
    for (const b of this.betas) if (!(b >= 0 && b < 1)) throw new Error(`AdamW: betas must be in [0, 1), got ${this.betas}`);
    if (!(this.eps > 0)) throw new Error(`AdamW: eps must be > 0, got ${this.eps}`);
    if (!(this.weightDecay >= 0)) throw new Error(`AdamW: weightDecay must be >= 0, got ${this.weightDecay}`);
    this.names = Object.keys(vars);
    this.sizes = this.names.map((n) => vars[n].size);
    const total = this.sizes.reduce((a, b) => a + b, 0);
    // tidy disposes the zeros tensors; the variables keep their own reference to the data.
    this.m = tf.tidy(() => tf.variable(tf.zeros([total]), false));
    this.v = tf.tidy(() => tf.variable(tf.zeros([total]), false));
  }

  /** Steps taken so far. */
  get stepsTaken(): number { return this.stepCount; }

  /**
   * Global-norm clipping (clip_grad_norm_: coef = min(1, maxNorm / (norm + 1e-6))) then one update, RAGEN's
   * optimizer step. Nothing is written when the norm is not finite, or when any updated weight or moment would not
   * be (stepIfFinite): `applied` says which. With every variable's gradient given and the fused kernels registered (cpu, wasm),
   * this is two kernels (src/model/kernels: sum of squares, AdamW in place) instead of a few per parameter tensor,
   * with the same float32 arithmetic as step(). Does not dispose the gradients.
   */
  async stepClipped(grads: Record<string, tf.Tensor>, maxNorm: number): Promise<{ norm: number; applied: boolean }> {
    if (!(maxNorm > 0)) throw new Error(`clipGradNorm: maxNorm must be > 0, got ${maxNorm}`);
    const list = this.names.map((n) => grads[n]);
    const sumSq = list.every(Boolean) ? sumOfSquares(list) : null;
    if (sumSq) {
      const norm = Math.fround(Math.sqrt((await sumSq.data())[0]));
      sumSq.dispose();
      if (!Number.isFinite(norm)) return { norm, applied: false };
      const f = Math.fround;
      const coef = Math.min(f(f(maxNorm) / f(norm + f(1e-6))), 1);   // float32, as clipGradNormOnDevice computes it
      const applied = await adamWInPlace(this.names.map((n) => this.vars[n]), list, this.m, this.v, this.attrs(this.stepCount + 1, coef));
      if (applied !== null) {
        if (applied) this.stepCount++;
        return { norm, applied };
      }
    }
    const clipped = await clipGradNormAsync(grads, maxNorm);
    try {
      const applied = Number.isFinite(clipped.norm) && (await this.stepIfFinite(clipped.grads));
      return { norm: clipped.norm, applied };
    } finally {
      tf.dispose(Object.values(clipped.grads));
    }
  }

  /** The scalars of update number `t` (1-based) with gradients scaled by `coef`. */
  private attrs(t: number, coef: number): AdamWAttrs {
    const [b1, b2] = this.betas;
    return {
      coef, decay: 1 - this.lr * this.weightDecay, b1, omb1: 1 - b1, b2, omb2: 1 - b2,
      stepSize: this.lr / (1 - b1 ** t), bc2: Math.sqrt(1 - b2 ** t), eps: this.eps,
    };
  }

  /** One update from `grads` (by variable name; variables without a gradient are left alone, as PyTorch does for
   *  parameters whose .grad is None). Does not dispose the gradients. */
  step(grads: Record<string, tf.Tensor>): void {
    this.checkGrads(grads);
    this.stepCount++;
    tf.tidy(() => this.commit(this.update(grads, this.stepCount)));
  }

  /**
   * step(), but nothing is written unless every updated parameter and moment is finite: a finite gradient can still
   * produce Inf/NaN weights (a huge learning rate or weight decay), and once written they poison every later step.
   * The update is computed into temporaries, checked on the device (one read-back) and committed only when finite;
   * otherwise weights, moments and the step count stay as they were. Returns whether the update was applied.
   */
  async stepIfFinite(grads: Record<string, tf.Tensor>): Promise<boolean> {
    this.checkGrads(grads);
    const next = tf.tidy(() => {
      const u = this.update(grads, this.stepCount + 1);
      const finite = (t: tf.Tensor) => tf.all(tf.isFinite(t));
      return { ...u, ok: tf.logicalAnd(tf.logicalAnd(finite(u.param), finite(u.m)), finite(u.v)) };
    });
    try {
      const ok = (await next.ok.data())[0] === 1;
      if (ok) {
        this.stepCount++;
        tf.tidy(() => this.commit(next));
      }
      return ok;
    } finally {
      tf.dispose([next.param, next.m, next.v, next.ok]);
    }
  }

  private checkGrads(grads: Record<string, tf.Tensor>): void {
    for (const [name, g] of Object.entries(grads)) {
      const variable = this.vars[name];
      if (!variable) throw new Error(`AdamW.step: gradient for unknown variable '${name}'`);
      if (g.shape.join(',') !== variable.shape.join(',')) {
        throw new Error(`AdamW.step: gradient '${name}' has shape [${g.shape}], variable has [${variable.shape}]`);
      }
    }
  }

  /** The flat parameters and moments after update number `t` (call inside a tidy; nothing is written). */
  private update(grads: Record<string, tf.Tensor>, t: number): { param: tf.Tensor; m: tf.Tensor; v: tf.Tensor } {
    const [b1, b2] = this.betas;
    const stepSize = this.lr / (1 - b1 ** t);
    const bias2Sqrt = Math.sqrt(1 - b2 ** t);
    const all = this.names.every((n) => grads[n] !== undefined);
    // A variable without a gradient keeps its value and moments: its slots get a zero gradient and a mask of 0.
    const flat = (ts: tf.Tensor[]) => (ts.length === 1 ? ts[0].reshape([-1]) : tf.concat(ts.map((x) => x.reshape([-1]))));
    const g = flat(this.names.map((n) => grads[n] ?? tf.zerosLike(this.vars[n])));
    const param = flat(this.names.map((n) => this.vars[n]));
    const keep = all ? null : flat(this.names.map((n) => (grads[n] ? tf.onesLike(this.vars[n]) : tf.zerosLike(this.vars[n]))));
    const decayed = this.weightDecay ? param.mul(1 - this.lr * this.weightDecay) : param;
    let newM = this.m.mul(b1).add(g.mul(1 - b1));
    let newV = this.v.mul(b2).add(g.square().mul(1 - b2));
    const denom = newV.sqrt().div(bias2Sqrt).add(this.eps);
    let newParam = decayed.sub(newM.div(denom).mul(stepSize));
    if (keep) {
      const old = (before: tf.Tensor, after: tf.Tensor) => after.mul(keep).add(before.mul(tf.sub(1, keep)));
      newParam = old(param, newParam);
      newM = old(this.m, newM);
      newV = old(this.v, newV);
    }
    return { param: newParam, m: newM, v: newV };
  }

  /** Writes an update from update() into the variables and moments (call inside a tidy). */
  private commit(u: { param: tf.Tensor; m: tf.Tensor; v: tf.Tensor }): void {
    const parts = this.names.length === 1 ? [u.param] : tf.split(u.param, this.sizes);
    this.names.forEach((n, i) => this.vars[n].assign(parts[i].reshape(this.vars[n].shape)));
    this.m.assign(u.m);
    this.v.assign(u.v);
  }

  getState(): AdamWState {
    const byName = (flat: tf.Variable) => tf.tidy(() => {
      const parts = this.names.length === 1 ? [flat.clone()] : tf.split(flat, this.sizes);
      return Object.fromEntries(this.names.map((n, i) => [n, tf.keep(parts[i].reshape(this.vars[n].shape))]));
    }) as Record<string, tf.Tensor>;
    return { step: this.stepCount, m: byName(this.m), v: byName(this.v) };
  }

  setState(state: AdamWState): void {
    if (!Number.isInteger(state.step) || state.step < 0) throw new Error(`AdamW.setState: bad step ${state.step}`);
    for (const [which, moments] of [['m', state.m], ['v', state.v]] as const) {
      for (const name of this.names) {
        const t = moments[name];
        if (!t) throw new Error(`AdamW.setState: ${which} is missing '${name}'`);
        if (t.shape.join(',') !== this.vars[name].shape.join(',')) {
          throw new Error(`AdamW.setState: ${which}['${name}'] has shape [${t.shape}], expected [${this.vars[name].shape}]`);
        }
      }
    }
    tf.tidy(() => {
      this.m.assign(tf.concat(this.names.map((n) => state.m[n].reshape([-1]))));
      this.v.assign(tf.concat(this.names.map((n) => state.v[n].reshape([-1]))));
    });
    this.stepCount = state.step;
  }

  dispose(): void {
    this.m.dispose();
    this.v.dispose();
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
