// AdamW exactly as PyTorch's torch.optim.AdamW computes it (decoupled weight decay, bias correction, eps added
// outside the square root), and global-norm gradient clipping as torch.nn.utils.clip_grad_norm_.
//   param *= 1 - lr * weightDecay
//   m = b1 m + (1 - b1) g;   v = b2 v + (1 - b2) g^2
//   param -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
import * as tf from '@tensorflow/tfjs';
import {
  adamWInPlace,
  adamWPerVariableInPlace,
  hasFusedAdamW,
  hasPerVariableAdamW,
  ownData,
  sumOfSquares,
  type AdamWAttrs,
} from './kernels/index';
import { hfSumOrder } from './qwen2';

export interface AdamWOptions {
  lr: number; // learning rate (RAGEN: actor 1e-6, critic 1e-5); may be changed between steps
  betas?: [number, number]; // moment decay rates; default [0.9, 0.999]
  eps?: number; // added to the bias-corrected sqrt(v); default 1e-8
  weightDecay?: number; // decoupled weight decay; default 0.01 (PyTorch's and RAGEN's)
  /**
   * Keep the moments per variable and update one variable at a time (see the class comment). Default: exactly when
   * the active backend has no fused in-place AdamW kernel (webgpu), where the flat buffers would cost temporaries
   * of the whole model's size.
   */
  perVariable?: boolean;
}

/** Optimizer state for checkpoints. getState returns copies the caller owns; setState copies what it is given. */
export interface AdamWState {
  step: number; // number of steps taken (bias correction uses it)
  m: Record<string, tf.Tensor>; // first moments, by variable name
  v: Record<string, tf.Tensor>; // second moments, by variable name
}

export class AdamW {
  lr: number;
  readonly betas: [number, number];
  readonly eps: number;
  readonly weightDecay: number;
  private stepCount = 0;
  // The moments of all variables live in two flat buffers, in `names` order, and a step updates every parameter
  // with one chain of element-wise ops over the concatenation, then splits the result back. The maths is the
  // per-parameter update's; what differs is the kernel count: ~14 ops in all plus a concat and a split, instead of
  // ~14 per parameter tensor. On WebGPU each op is a dispatch with a fixed cost (BENCHMARKS.md), so this matters there.
  //
  // Without the fused in-place kernel (webgpu), that chain materialises several temporaries of the WHOLE model's
  // size at once (a concatenation of every gradient, of every weight, the new moments, ...: for Qwen2.5-0.5B about
  // 2 GiB each, 44.8 GiB at the peak of one update on an H100). There the moments live per variable instead
  // (`perVariable`) and a step walks the variables one by one, freeing each op's input as soon as the next op has
  // run, so no more than a few temporaries of ONE variable exist at any time. Per element it is the same float32
  // arithmetic in the same order, so both layouts give identical numbers. Where the backend has the per-variable
  // in-place kernels (webgpu: kernels/webgpuAdamW.ts), a step is those kernels, five dispatches per variable and no
  // temporaries; the op chain is the fallback (and step()'s reference path).
  private readonly names: string[];
  private readonly sizes: number[];
  /** The global norm's summation order when every gradient is given (hfSumOrder: a Qwen2Model's stacked q/k/v
   *  summed as HF's separate tensors were, so the norm keeps its bits), or null for the variables' own order. */
  private readonly sumOrder: number[] | null;
  private readonly m: tf.Variable | null; // flat layout
  private readonly v: tf.Variable | null;
  private readonly mOf: Record<string, tf.Variable> | null; // per-variable layout
  private readonly vOf: Record<string, tf.Variable> | null;

  constructor(
    private readonly vars: Record<string, tf.Variable>,
    opts: AdamWOptions,
  ) {
    this.lr = opts.lr;
    this.betas = opts.betas ?? [0.9, 0.999];
    this.eps = opts.eps ?? 1e-8;
    this.weightDecay = opts.weightDecay ?? 0.01;
    if (!(this.lr >= 0)) throw new Error(`AdamW: lr must be >= 0, got ${opts.lr}`);
    for (const b of this.betas)
      if (!(b >= 0 && b < 1)) throw new Error(`AdamW: betas must be in [0, 1), got ${this.betas}`);
    if (!(this.eps > 0)) throw new Error(`AdamW: eps must be > 0, got ${this.eps}`);
    if (!(this.weightDecay >= 0)) throw new Error(`AdamW: weightDecay must be >= 0, got ${this.weightDecay}`);
    this.names = Object.keys(vars);
    this.sizes = this.names.map((n) => vars[n].size);
    this.sumOrder = hfSumOrder(this.names, vars);
    const total = this.sizes.reduce((a, b) => a + b, 0);
    const perVariable = opts.perVariable ?? !hasFusedAdamW();
    // tidy disposes the zeros tensors; the variables keep their own reference to the data.
    const zeros = (shape: number[]) => tf.tidy(() => tf.variable(tf.zeros(shape), false));
    this.m = perVariable ? null : zeros([total]);
    this.v = perVariable ? null : zeros([total]);
    this.mOf = perVariable ? Object.fromEntries(this.names.map((n) => [n, zeros(vars[n].shape)])) : null;
    this.vOf = perVariable ? Object.fromEntries(this.names.map((n) => [n, zeros(vars[n].shape)])) : null;
  }

  /** Whether the moments are kept per variable (see the class comment). */
  get perVariable(): boolean {
    return this.mOf !== null;
  }

  /** Steps taken so far. */
  get stepsTaken(): number {
    return this.stepCount;
  }

  /**
   * Global-norm clipping (clip_grad_norm_: coef = min(1, maxNorm / (norm + 1e-6))) then one update, RAGEN's
   * optimizer step. Nothing is written when the norm is not finite, or when any updated weight or moment would not
   * be (stepIfFinite): `applied` says which. With every variable's gradient given and the fused kernels registered (cpu, wasm),
   * this is two kernels (src/model/kernels: sum of squares, AdamW in place) instead of a few per parameter tensor,
   * with the same float32 arithmetic as step(). Does not dispose the gradients.
   */
  async stepClipped(grads: Record<string, tf.Tensor>, maxNorm: number): Promise<{ norm: number; applied: boolean }> {
    if (!(maxNorm > 0)) throw new Error(`clipGradNorm: maxNorm must be > 0, got ${maxNorm}`);
    if (this.perVariable) return this.stepClippedPerVariable(grads, maxNorm);
    const list = this.names.map((n) => grads[n]);
    const sumSq = list.every(Boolean) ? sumOfSquares(list, this.sumOrder ?? undefined) : null;
    if (sumSq) {
      const norm = Math.fround(Math.sqrt((await sumSq.data())[0]));
      sumSq.dispose();
      if (!Number.isFinite(norm)) return { norm, applied: false };
      const f = Math.fround;
      const coef = Math.min(f(f(maxNorm) / f(norm + f(1e-6))), 1); // float32, as clipGradNormOnDevice computes it
      for (const x of [...this.names.map((n) => this.vars[n]), this.m!, this.v!]) ownData(x); // the kernel writes in place
      const applied = await adamWInPlace(
        this.names.map((n) => this.vars[n]),
        list,
        this.m!,
        this.v!,
        this.attrs(this.stepCount + 1, coef),
      );
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
      coef,
      decay: 1 - this.lr * this.weightDecay,
      b1,
      omb1: 1 - b1,
      b2,
      omb2: 1 - b2,
      stepSize: this.lr / (1 - b1 ** t),
      bc2: Math.sqrt(1 - b2 ** t),
      eps: this.eps,
    };
  }

  /** One update from `grads` (by variable name; variables without a gradient are left alone, as PyTorch does for
   *  parameters whose .grad is None). Does not dispose the gradients. */
  step(grads: Record<string, tf.Tensor>): void {
    this.checkGrads(grads);
    this.stepCount++;
    if (this.perVariable) {
      for (const n of this.names) if (grads[n]) this.commitOne(n, this.updateOne(n, grads[n], this.stepCount, 1));
      return;
    }
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
    if (this.perVariable) return this.stepPerVariable(grads, 1);
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

  /**
   * The per-variable layout's stepClipped: the global norm from one sum of squares per variable (one read-back),
   * then stepPerVariable with the clipping coefficient, computed in float32 as the fused kernels' path does.
   */
  private async stepClippedPerVariable(
    grads: Record<string, tf.Tensor>,
    maxNorm: number,
  ): Promise<{ norm: number; applied: boolean }> {
    this.checkGrads(grads);
    const present = this.names.filter((n) => grads[n]);
    if (!present.length) throw new Error('clipGradNorm: no gradients given');
    // One fused kernel where there is one (webgpu); else summed pairwise, not with tf.addN (webgpu binds one buffer
    // per addN input, at most 8).
    const all = present.length === this.names.length;
    let sumSq: tf.Tensor | null = sumOfSquares(
      present.map((n) => grads[n]),
      all ? (this.sumOrder ?? undefined) : undefined,
    );
    if (!sumSq) {
      sumSq = tf.scalar(0);
      for (const n of present) {
        const next: tf.Tensor = tf.tidy(() => sumSq!.add(tf.sum(tf.square(grads[n]))));
        sumSq.dispose();
        sumSq = next;
      }
    }
    const norm = Math.fround(Math.sqrt((await sumSq.data())[0]));
    sumSq.dispose();
    if (!Number.isFinite(norm)) return { norm, applied: false };
    const f = Math.fround;
    const coef = Math.min(f(f(maxNorm) / f(norm + f(1e-6))), 1);
    return { norm, applied: await this.stepPerVariable(grads, coef) };
  }

  /**
   * One update over the per-variable layout, gradients scaled by `coef`, applied only if every new weight and
   * moment is finite. Two passes, as the fused kernel does it: the first computes each variable's update and keeps
   * only whether it is finite (one read-back for all), the second computes it again and writes it.
   */
  private async stepPerVariable(grads: Record<string, tf.Tensor>, coef: number): Promise<boolean> {
    const t = this.stepCount + 1;
    const present = this.names.filter((n) => grads[n]);
    // The same two passes as in-place kernels (webgpu: five dispatches per variable instead of ~35), where they exist.
    if (hasPerVariableAdamW()) {
      const [params, ms, vs] = [this.vars, this.mOf!, this.vOf!].map((of) => present.map((n) => of[n]));
      for (const x of [...params, ...ms, ...vs]) ownData(x);
      const applied = await adamWPerVariableInPlace(
        params,
        present.map((n) => grads[n]),
        ms,
        vs,
        this.attrs(t, coef),
      );
      if (applied) this.stepCount = t;
      return applied;
    }
    let ok: tf.Tensor = tf.scalar(true, 'bool');
    for (const n of present) {
      const u = this.updateOne(n, grads[n], t, coef);
      const next = tf.tidy(() =>
        tf.logicalAnd(
          ok,
          tf.logicalAnd(
            tf.all(tf.isFinite(u.param)),
            tf.logicalAnd(tf.all(tf.isFinite(u.m)), tf.all(tf.isFinite(u.v))),
          ),
        ),
      );
      tf.dispose([ok, u.param, u.m, u.v]);
      ok = next;
    }
    const finite = (await ok.data())[0] === 1;
    ok.dispose();
    if (!finite) return false;
    for (const n of present) this.commitOne(n, this.updateOne(n, grads[n], t, coef));
    this.stepCount = t;
    return true;
  }

  /**
   * Variable `name`'s new value and moments after update number `t` with gradient `grad` x `coef`; nothing is
   * written. Each op's input is freed as soon as it is used, so at most about five tensors of this variable's size
   * are alive at once. The ops and their order are update()'s.
   */
  private updateOne(
    name: string,
    grad: tf.Tensor,
    t: number,
    coef: number,
  ): { param: tf.Tensor; m: tf.Tensor; v: tf.Tensor } {
    const [b1, b2] = this.betas;
    const param = this.vars[name],
      m = this.mOf![name],
      v = this.vOf![name];
    // then(x, f): f(x), freeing x unless it is one of the inputs (weights, moments, gradient).
    const inputs = new Set<tf.Tensor>([param, m, v, grad]);
    const then = <T extends tf.Tensor>(x: tf.Tensor, f: (x: tf.Tensor) => T): T => {
      const y = f(x);
      if (!inputs.has(x)) x.dispose();
      return y;
    };
    const both = (x: tf.Tensor, y: tf.Tensor, f: (x: tf.Tensor, y: tf.Tensor) => tf.Tensor) =>
      then(x, (a) => then(y, (b) => f(a, b)));
    const g = coef === 1 ? grad : grad.mul(coef);
    const newM = both(m.mul(b1), g.mul(1 - b1), (a, b) => a.add(b));
    const newV = both(
      v.mul(b2),
      then(
        then(g, (x) => x.square()),
        (x) => x.mul(1 - b2),
      ),
      (a, b) => a.add(b),
    );
    const denom = then(
      then(newV.sqrt(), (x) => x.div(Math.sqrt(1 - b2 ** t))),
      (x) => x.add(this.eps),
    );
    const step = then(newM.div(denom), (x) => x.mul(this.lr / (1 - b1 ** t)));
    denom.dispose();
    const decayed = this.weightDecay ? param.mul(1 - this.lr * this.weightDecay) : param;
    const newParam = both(decayed, step, (a, b) => a.sub(b));
    return { param: newParam, m: newM, v: newV };
  }

  /** Writes updateOne()'s result into variable `name` and its moments. */
  private commitOne(name: string, u: { param: tf.Tensor; m: tf.Tensor; v: tf.Tensor }): void {
    this.vars[name].assign(u.param);
    this.mOf![name].assign(u.m);
    this.vOf![name].assign(u.v);
    tf.dispose([u.param, u.m, u.v]);
  }

  /** The flat parameters and moments after update number `t` (call inside a tidy; nothing is written). */
  private update(grads: Record<string, tf.Tensor>, t: number): { param: tf.Tensor; m: tf.Tensor; v: tf.Tensor } {
    const [b1, b2] = this.betas;
    const stepSize = this.lr / (1 - b1 ** t);
    const bias2Sqrt = Math.sqrt(1 - b2 ** t);
    const all = this.names.every((n) => grads[n] !== undefined);
    // A variable without a gradient keeps its value and moments: its slots get a zero gradient and a mask of 0.
    const flat = (ts: tf.Tensor[]) =>
      ts.length === 1 ? ts[0].reshape([-1]) : tf.concat(ts.map((x) => x.reshape([-1])));
    const g = flat(this.names.map((n) => grads[n] ?? tf.zerosLike(this.vars[n])));
    const param = flat(this.names.map((n) => this.vars[n]));
    const keep = all
      ? null
      : flat(this.names.map((n) => (grads[n] ? tf.onesLike(this.vars[n]) : tf.zerosLike(this.vars[n]))));
    const decayed = this.weightDecay ? param.mul(1 - this.lr * this.weightDecay) : param;
    const m = this.m!,
      v = this.v!;
    let newM = m.mul(b1).add(g.mul(1 - b1));
    let newV = v.mul(b2).add(g.square().mul(1 - b2));
    const denom = newV.sqrt().div(bias2Sqrt).add(this.eps);
    let newParam = decayed.sub(newM.div(denom).mul(stepSize));
    if (keep) {
      const old = (before: tf.Tensor, after: tf.Tensor) => after.mul(keep).add(before.mul(tf.sub(1, keep)));
      newParam = old(param, newParam);
      newM = old(m, newM);
      newV = old(v, newV);
    }
    return { param: newParam, m: newM, v: newV };
  }

  /** Writes an update from update() into the variables and moments (call inside a tidy). */
  private commit(u: { param: tf.Tensor; m: tf.Tensor; v: tf.Tensor }): void {
    const parts = this.names.length === 1 ? [u.param] : tf.split(u.param, this.sizes);
    this.names.forEach((n, i) => this.vars[n].assign(parts[i].reshape(this.vars[n].shape)));
    this.m!.assign(u.m);
    this.v!.assign(u.v);
  }

  getState(): AdamWState {
    if (this.perVariable) {
      const copy = (of: Record<string, tf.Variable>) => Object.fromEntries(this.names.map((n) => [n, of[n].clone()]));
      return { step: this.stepCount, m: copy(this.mOf!), v: copy(this.vOf!) };
    }
    const byName = (flat: tf.Variable) =>
      tf.tidy(() => {
        const parts = this.names.length === 1 ? [flat.clone()] : tf.split(flat, this.sizes);
        return Object.fromEntries(this.names.map((n, i) => [n, tf.keep(parts[i].reshape(this.vars[n].shape))]));
      }) as Record<string, tf.Tensor>;
    return { step: this.stepCount, m: byName(this.m!), v: byName(this.v!) };
  }

  setState(state: AdamWState): void {
    if (!Number.isInteger(state.step) || state.step < 0) throw new Error(`AdamW.setState: bad step ${state.step}`);
    for (const [which, moments] of [
      ['m', state.m],
      ['v', state.v],
    ] as const) {
      for (const name of this.names) {
        const t = moments[name];
        if (!t) throw new Error(`AdamW.setState: ${which} is missing '${name}'`);
        if (t.shape.join(',') !== this.vars[name].shape.join(',')) {
          throw new Error(
            `AdamW.setState: ${which}['${name}'] has shape [${t.shape}], expected [${this.vars[name].shape}]`,
          );
        }
      }
    }
    tf.tidy(() => {
      if (this.perVariable) {
        for (const n of this.names) {
          this.mOf![n].assign(state.m[n].clone());
          this.vOf![n].assign(state.v[n].clone());
        }
        return;
      }
      this.m!.assign(tf.concat(this.names.map((n) => state.m[n].reshape([-1]))));
      this.v!.assign(tf.concat(this.names.map((n) => state.v[n].reshape([-1]))));
    });
    this.stepCount = state.step;
  }

  dispose(): void {
    tf.dispose(
      [this.m, this.v, ...Object.values(this.mOf ?? {}), ...Object.values(this.vOf ?? {})].filter(
        (x): x is tf.Variable => x !== null,
      ),
    );
  }
}

/** Scales gradients to a global L2 norm of at most maxNorm, on the device. Returns new tensors and the norm
 *  before clipping as a scalar tensor. Like PyTorch: coef = min(1, maxNorm / (norm + 1e-6)). */
export function clipGradNormOnDevice(
  grads: Record<string, tf.Tensor>,
  maxNorm: number,
): { grads: Record<string, tf.Tensor>; norm: tf.Scalar } {
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
export function clipGradNorm(
  grads: Record<string, tf.Tensor>,
  maxNorm: number,
): { grads: Record<string, tf.Tensor>; norm: number } {
  if (tf.getBackend() === 'webgpu') {
    throw new Error(
      'clipGradNorm reads the norm synchronously, which the webgpu backend cannot do (in Node it ' +
        'crashes): use clipGradNormAsync',
    );
  }
  const out = clipGradNormOnDevice(grads, maxNorm);
  const norm = out.norm.dataSync()[0];
  out.norm.dispose();
  return { grads: out.grads, norm };
}

/** clipGradNorm with an asynchronous read of the norm: works on every backend. */
export async function clipGradNormAsync(
  grads: Record<string, tf.Tensor>,
  maxNorm: number,
): Promise<{ grads: Record<string, tf.Tensor>; norm: number }> {
  const out = clipGradNormOnDevice(grads, maxNorm);
  const norm = (await out.norm.data())[0];
  out.norm.dispose();
  return { grads: out.grads, norm };
}
