// Fused operations of the Qwen2 policy, as tfjs kernels with gradients.
//
// Each op below is ONE kernel call where its kernel is registered for the active backend (cpu: cpu.ts, the
// reference; wasm: wasm.ts, C + SIMD; webgpu: webgpu.ts, WGSL), and otherwise the same math composed from stock tfjs
// ops (`unfused.*`, also what the tests compare every fused kernel against). Why fuse: a stock composition of RMSNorm
// is 6 kernels, RoPE 7, attention ~12, and a small kernel costs ~30 us on wasm and ~0.3 ms per dispatch on WebGPU,
// while tfjs-wasm's batched matmul (attention) runs on a scalar loop.
//
// Shapes: activations are 2-D [rows, width] with rows = batch x time, so no reshape or transpose sits between ops.
// Attention reads a packed projection `qkv` [B*T, (nH + 2 nKV) hd]: query heads, then key heads, then value heads.
// Masks are float [B, S] with 1 = a real key. The causal rule: query i (at key slot `slot + i`) sees keys
// s <= slot + i whose mask is 1; a query that sees no key (left padding) outputs zeros.
import * as tf from '@tensorflow/tfjs';

export const K = {
  rmsNorm: 'RagenRmsNorm',
  rmsNormGrad: 'RagenRmsNormGrad',
  rope: 'RagenRope',
  swiGlu: 'RagenSwiGlu',
  swiGluGrad: 'RagenSwiGluGrad',
  attention: 'RagenAttention',
  attentionGrad: 'RagenAttentionGrad',
  cachedAttention: 'RagenCachedAttention',
  // wasm only: a whole decoder layer of generation (rmsnorm, qkv, rope, cached attention, o, rmsnorm, gate|up,
  // swiglu, down) in one kernel.
  decodeLayer: 'RagenDecodeLayer',
  logProbs: 'RagenTokenLogProbs',
  logProbsGrad: 'RagenTokenLogProbsGrad',
  embed: 'RagenEmbed',
  embedGrad: 'RagenEmbedGrad',
  sample: 'RagenSample',
  sumSquares: 'RagenSumSquares',
  adamW: 'RagenAdamW',
  // AdamW's per-variable layout (webgpu): check the whole update for finiteness, then write it in place.
  adamWCheck: 'RagenAdamWCheck',
  adamWWrite: 'RagenAdamWWrite',
  // webgpu only: the tiled matmul (webgpuMatmul.ts) that the model's matmuls run in on a GPU (webgpuMatMulRoute.ts) and
  // `ragen bench --only matmul` times against tfjs's own, and its f16 packing.
  tiledMatMul: 'RagenTiledMatMul',
  packHalf: 'RagenPackHalf',
} as const;

/**
 * Registers a backend's table of fused kernels, keyed by the short names of `K` (`{ embed, rmsNorm, ... }`: each
 * backend names its kernel functions after them); kernels already there stay.
 */
export function registerKernelTable(
  backendName: string,
  table: Partial<Record<keyof typeof K, (args: never) => unknown>>,
): void {
  for (const [name, fn] of Object.entries(table)) {
    const kernelName = K[name as keyof typeof K];
    if (tf.getKernel(kernelName, backendName)) continue;
    tf.registerKernel({ kernelName, backendName, kernelFunc: fn as unknown as tf.KernelFunc });
  }
}

/**
 * One AdamW step over many parameters (attrs of RagenAdamW; the scalars exactly as AdamW.step uses them):
 *   g = grad coef;  p = p decay;  m = b1 m + omb1 g;  v = b2 v + omb2 g^2;  p = p - stepSize (m / (sqrt(v) / bc2 + eps))
 */
export interface AdamWAttrs {
  coef: number; // gradient scale (global-norm clipping)
  decay: number; // 1 - lr weightDecay
  b1: number;
  omb1: number;
  b2: number;
  omb2: number;
  stepSize: number; // lr / (1 - b1^t)
  bc2: number; // sqrt(1 - b2^t)
  eps: number;
}

/** Head layout of a packed qkv row (attrs of the attention and RoPE kernels). */
export interface HeadAttrs {
  numHeads: number; // nH, query heads
  numKvHeads: number; // nKV, key/value heads (nH is a multiple)
  headDim: number; // hd (even; a multiple of 4 for the SIMD kernels)
}

const has = (name: string) => tf.getKernel(name, tf.getBackend()) !== undefined;
const run = <T extends tf.Tensor | tf.Tensor[]>(name: string, inputs: tf.NamedTensorMap, attrs: object) =>
  tf.engine().runKernel(name, inputs, attrs as unknown as tf.NamedAttrMap) as unknown as T;

// ---------------------------------------------------------------------------------------------------------------
// The stock-tfjs compositions (the pre-fusion model code). Fallback and test reference.

export const unfused = {
  /**
   * Embedding lookup table[ids]. tf.gather's own gradient needs UnsortedSegmentSum, which the wasm backend lacks,
   * so the gradient is written as a scatter-add of the output gradient into the table's rows (ScatterNd sums rows
   * of repeated ids, and exists on cpu, wasm and webgpu).
   */
  embed(table: tf.Tensor2D, ids: tf.Tensor1D): tf.Tensor2D {
    const [vocab, hidden] = table.shape;
    // customGrad passes its inputs and the save function as one variadic list.
    const lookup = tf.customGrad((...args: Array<tf.Tensor | tf.GradSaveFunc>) => {
      const [tbl, flatIds, save] = args as [tf.Tensor, tf.Tensor, tf.GradSaveFunc];
      save([flatIds]);
      return {
        value: tf.gather(tbl, flatIds),
        gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => [
          tf.scatterND(saved[0].expandDims(1), dy, [vocab, hidden]),
          tf.zeros(saved[0].shape), // ids are integers: no gradient, but customGrad wants one per input
        ],
      };
    });
    return lookup(table, ids) as tf.Tensor2D;
  },

  /**
   * One token per row by inverse CDF: the first whose cumulative probability under softmax(logits / temperature)
   * reaches uniforms[r] times the total (at most V - 1). int32 [B].
   */
  sample(logits: tf.Tensor2D, uniforms: tf.Tensor1D, temperature: number): tf.Tensor1D {
    return tf.tidy(() => {
      const [rows, vocab] = logits.shape;
      const cdf = tf.cumsum(tf.softmax(logits.div(temperature)), 1);
      const total = cdf.slice([0, vocab - 1], [rows, 1]); // ~1, but use it so rounding cannot overshoot
      const below = tf
        .less(cdf, uniforms.reshape([rows, 1]).mul(total))
        .toInt()
        .sum(1);
      return tf.minimum(below, tf.scalar(vocab - 1, 'int32')) as tf.Tensor1D;
    });
  },

  rmsNorm(x: tf.Tensor2D, weight: tf.Tensor1D, eps: number): tf.Tensor2D {
    return tf.tidy(() => x.mul(tf.rsqrt(tf.mean(tf.square(x), -1, true).add(eps))).mul(weight) as tf.Tensor2D);
  },

  /** Rotates the first `rotatedHeads` heads of each row by its position; the rest of the row passes through. */
  rope(
    x: tf.Tensor2D,
    positions: tf.Tensor1D,
    cos: tf.Tensor2D,
    sin: tf.Tensor2D,
    rotatedHeads: number,
    headDim: number,
  ): tf.Tensor2D {
    return tf.tidy(() => {
      const [rows, width] = x.shape;
      const rot = rotatedHeads * headDim,
        half = headDim / 2;
      const heads = x.slice([0, 0], [rows, rot]).reshape([rows, rotatedHeads, headDim]);
      const c = tf.gather(cos, positions).reshape([rows, 1, headDim]);
      const s = tf.gather(sin, positions).reshape([rows, 1, headDim]);
      const [x1, x2] = tf.split(heads, [half, half], 2);
      const rotated = heads
        .mul(c)
        .add(tf.concat([tf.neg(x2), x1], 2).mul(s))
        .reshape([rows, rot]);
      return (rot === width ? rotated : tf.concat([rotated, x.slice([0, rot], [rows, width - rot])], 1)) as tf.Tensor2D;
    });
  },

  swiGlu(gu: tf.Tensor2D): tf.Tensor2D {
    return tf.tidy(() => {
      const [gate, up] = tf.split(gu, 2, 1);
      return gate.mul(tf.sigmoid(gate)).mul(up) as tf.Tensor2D;
    });
  },

  /** Causal grouped-query attention over packed qkv [B*T, W]; mask [B, T]. Returns [B*T, nH*hd]. */
  attention(qkv: tf.Tensor2D, mask: tf.Tensor2D, a: HeadAttrs): tf.Tensor2D {
    return tf.tidy(() => {
      const [b, t] = mask.shape;
      const { q, k, v } = splitHeads(qkv, b, t, a);
      const causal = tf.linalg.bandPart(tf.ones([t, t]), -1, 0).reshape([1, 1, t, t]);
      return attend(q, k, v, causal.mul(mask.reshape([b, 1, 1, t])) as tf.Tensor4D, a);
    });
  },

  /**
   * Attention for generation: writes the keys and values of qkv [B*T, W] into cache slots slot..slot+T-1 (as new
   * tensors), then attends over the whole cache [B, C, nKV*hd] with mask [B, C]. Returns [out, newK, newV].
   */
  cachedAttention(
    qkv: tf.Tensor2D,
    cacheK: tf.Tensor3D,
    cacheV: tf.Tensor3D,
    mask: tf.Tensor2D,
    slot: number,
    a: HeadAttrs,
  ): [tf.Tensor2D, tf.Tensor3D, tf.Tensor3D] {
    return tf.tidy(() => {
      const [b, c] = mask.shape;
      const t = qkv.shape[0] / b;
      const kw = a.numKvHeads * a.headDim,
        qw = a.numHeads * a.headDim;
      const place = (cache: tf.Tensor3D, fresh: tf.Tensor2D) => {
        const padded = tf.pad(fresh.reshape([b, t, kw]), [
          [0, 0],
          [slot, c - slot - t],
          [0, 0],
        ]);
        const inSlots = tf.pad(tf.ones([1, t, 1]), [
          [0, 0],
          [slot, c - slot - t],
          [0, 0],
        ]);
        return cache.mul(tf.sub(1, inSlots)).add(padded) as tf.Tensor3D;
      };
      const newK = place(cacheK, qkv.slice([0, qw], [b * t, kw]));
      const newV = place(cacheV, qkv.slice([0, qw + kw], [b * t, kw]));
      const heads = (x: tf.Tensor, n: number, len: number) =>
        x.reshape([b, len, n, a.headDim]).transpose([0, 2, 1, 3]) as tf.Tensor4D;
      const q = heads(qkv.slice([0, 0], [b * t, qw]), a.numHeads, t);
      const visible = tf.linalg
        .bandPart(tf.ones([t, c]), -1, slot)
        .reshape([1, 1, t, c])
        .mul(mask.reshape([b, 1, 1, c]));
      const out = attend(q, heads(newK, a.numKvHeads, c), heads(newV, a.numKvHeads, c), visible as tf.Tensor4D, a);
      return [out, newK, newV] as [tf.Tensor2D, tf.Tensor3D, tf.Tensor3D];
    });
  },

  /** Log-prob of each row's target (0 where target < 0) and the entropy of softmax(logits / temperature). */
  tokenLogProbs(logits: tf.Tensor2D, targets: tf.Tensor1D, temperature: number): [tf.Tensor1D, tf.Tensor1D] {
    return tf.tidy(() => {
      const logp = tf.logSoftmax(temperature === 1 ? logits : logits.div(temperature));
      // A one-hot product, not tf.gather: gather's gradient needs UnsortedSegmentSum, which wasm lacks. (oneHot's
      // dtype argument is broken on wasm 4.22; cast instead.) A negative target gives an all-zero row.
      const picked = logp.mul(tf.oneHot(targets, logits.shape[1]).toFloat()).sum(-1) as tf.Tensor1D;
      const entropy = tf.neg(tf.exp(logp).mul(logp).sum(-1)) as tf.Tensor1D;
      return [picked, entropy];
    });
  },
};

function splitHeads(qkv: tf.Tensor2D, b: number, t: number, a: HeadAttrs) {
  const { numHeads: nH, numKvHeads: nKV, headDim: hd } = a;
  const heads = (x: tf.Tensor, n: number) => x.reshape([b, t, n, hd]).transpose([0, 2, 1, 3]) as tf.Tensor4D;
  return {
    q: heads(qkv.slice([0, 0], [b * t, nH * hd]), nH),
    k: heads(qkv.slice([0, nH * hd], [b * t, nKV * hd]), nKV),
    v: heads(qkv.slice([0, (nH + nKV) * hd], [b * t, nKV * hd]), nKV),
  };
}

/** Softmax attention of q [B, nH, T, hd] over k, v [B, nKV, S, hd]; visible [B, 1, T, S] is 1/0. */
function attend(q: tf.Tensor4D, k: tf.Tensor4D, v: tf.Tensor4D, visible: tf.Tensor4D, a: HeadAttrs): tf.Tensor2D {
  const [b, nH, t, hd] = q.shape;
  const group = nH / a.numKvHeads;
  // Heads of one KV group sit side by side along the query axis: each K/V head serves its group in one matmul.
  const groupedQ = q.reshape([b, a.numKvHeads, group * t, hd]);
  const groupedVisible = group > 1 ? tf.concat(new Array<tf.Tensor4D>(group).fill(visible), 2) : visible;
  const scores = tf
    .matMul(groupedQ, k, false, true)
    .mul(1 / Math.sqrt(hd))
    .add(tf.sub(1, groupedVisible).mul(-1e9));
  const anyVisible = groupedVisible.max(-1, true); // a query that sees no key outputs zeros
  const out = tf.matMul(tf.softmax(scores, -1), v).mul(anyVisible);
  return out
    .reshape([b, nH, t, hd])
    .transpose([0, 2, 1, 3])
    .reshape([b * t, nH * hd]) as tf.Tensor2D;
}

// ---------------------------------------------------------------------------------------------------------------
// The fused ops.

export function embed(table: tf.Tensor2D, ids: tf.Tensor1D): tf.Tensor2D {
  return has(K.embed) ? run(K.embed, { table, ids }, {}) : unfused.embed(table, ids);
}

export function sample(logits: tf.Tensor2D, uniforms: tf.Tensor1D, temperature: number): tf.Tensor1D {
  return has(K.sample)
    ? run(K.sample, { logits, uniforms }, { temperature })
    : unfused.sample(logits, uniforms, temperature);
}

/**
 * The sum of squares of every element of `tensors` (a squared global norm), or null without a fused kernel.
 * `segments` (flat triples: tensor index, first element, element count; together every element once) give the order
 * of the summation on cpu and wasm, whose sums are sequential: the model's stacked q/k/v weights summed in the order
 * of HF's separate tensors give the same float bits as they did (AdamW's sumOrder). webgpu's reduction is a tree over
 * workgroups in any case: it sums the tensors whole.
 */
export function sumOfSquares(tensors: readonly tf.Tensor[], segments?: readonly number[]): tf.Scalar | null {
  if (!has(K.sumSquares)) return null;
  return run<tf.Scalar>(
    K.sumSquares,
    Object.fromEntries(tensors.map((t, i) => [`t${i}`, t])),
    segments ? { n: tensors.length, segments: [...segments] } : { n: tensors.length },
  );
}

/** Whether the active backend has the fused in-place AdamW kernel over the flat moments (cpu and wasm do; webgpu has the per-variable one). */
export function hasFusedAdamW(): boolean {
  return has(K.adamW);
}

/**
 * AdamW over `params` IN PLACE (their data, and the flat moments m and v, are overwritten), unless some new value
 * would be non-finite: then nothing changes. Returns whether it applied, or null without a fused kernel.
 */
export async function adamWInPlace(
  params: readonly tf.Variable[],
  grads: readonly tf.Tensor[],
  m: tf.Variable,
  v: tf.Variable,
  attrs: AdamWAttrs,
): Promise<boolean | null> {
  if (!has(K.adamW)) return null;
  const inputs: tf.NamedTensorMap = { m, v };
  params.forEach((p, i) => {
    inputs[`p${i}`] = p;
    inputs[`g${i}`] = grads[i];
  });
  const flag = run<tf.Tensor>(K.adamW, inputs, { ...attrs, n: params.length });
  try {
    return (await flag.data())[0] === 1;
  } finally {
    flag.dispose();
  }
}

/** Whether the active backend has the in-place kernels of AdamW's per-variable layout (webgpu does). */
export function hasPerVariableAdamW(): boolean {
  return has(K.adamWCheck) && has(K.adamWWrite);
}

/**
 * AdamW over `params` IN PLACE, each with its own moments ms[i], vs[i] (AdamW's per-variable layout), unless some
 * new value would be non-finite: then nothing changes. Returns whether it applied. Needs the kernels
 * (hasPerVariableAdamW); no other tensor may share the data of a weight or moment (see ownData).
 */
export async function adamWPerVariableInPlace(
  params: readonly tf.Variable[],
  grads: readonly tf.Tensor[],
  ms: readonly tf.Variable[],
  vs: readonly tf.Variable[],
  attrs: AdamWAttrs,
): Promise<boolean> {
  if (!hasPerVariableAdamW())
    throw new Error(
      `adamWPerVariableInPlace: the ${tf.getBackend()} backend has no per-variable AdamW kernels (webgpu only)`,
    );
  const inputs: tf.NamedTensorMap = {};
  params.forEach((p, i) =>
    Object.assign(inputs, { [`p${i}`]: p, [`g${i}`]: grads[i], [`m${i}`]: ms[i], [`v${i}`]: vs[i] }),
  );
  const all = { ...attrs, n: params.length };
  const flag = run<tf.Tensor>(K.adamWCheck, inputs, all);
  try {
    const finite = (await flag.data())[0] === 1;
    if (finite) run<tf.Tensor>(K.adamWWrite, { ...inputs, flag }, all).dispose();
    return finite;
  } finally {
    flag.dispose();
  }
}

/**
 * Gives variable `v` data of its own when another tensor shares it (tfjs shares data between a variable and the
 * tensor it was made from or assigned, and between a tensor and its clone), so that an in-place kernel writing into
 * `v` changes nothing else. A copy costs one kernel and happens at most once per sharing.
 */
export function ownData(v: tf.Variable): void {
  const backend = tf.engine().backend as unknown as { refCount?(dataId: object): number };
  if ((backend.refCount?.(v.dataId) ?? 1) <= 1) return;
  tf.tidy(() => v.assign(tf.mul(v, tf.scalar(1, v.dtype)))); // x 1 keeps -0 and NaN bits, + 0 would not
}

export function rmsNorm(x: tf.Tensor2D, weight: tf.Tensor1D, eps: number): tf.Tensor2D {
  return has(K.rmsNorm) ? run(K.rmsNorm, { x, weight }, { eps }) : unfused.rmsNorm(x, weight, eps);
}

export function rope(
  x: tf.Tensor2D,
  positions: tf.Tensor1D,
  cos: tf.Tensor2D,
  sin: tf.Tensor2D,
  rotatedHeads: number,
  headDim: number,
): tf.Tensor2D {
  return has(K.rope)
    ? run(K.rope, { x, positions, cos, sin }, { rotatedHeads, headDim, inverse: false })
    : unfused.rope(x, positions, cos, sin, rotatedHeads, headDim);
}

export function swiGlu(gu: tf.Tensor2D): tf.Tensor2D {
  return has(K.swiGlu) ? run(K.swiGlu, { gu }, {}) : unfused.swiGlu(gu);
}

// The SIMD kernels step through a head 4 floats at a time (every Qwen2 size so far: hd 16, 32, 64, 128).
const simdHeads = (a: HeadAttrs) => a.headDim % 4 === 0;

export function attention(qkv: tf.Tensor2D, mask: tf.Tensor2D, a: HeadAttrs): tf.Tensor2D {
  if (!has(K.attention) || !simdHeads(a)) return unfused.attention(qkv, mask, a);
  const [out, lse] = run<tf.Tensor[]>(K.attention, { qkv, mask }, { ...a });
  lse.dispose(); // kept by the engine for the gradient when one is being recorded
  return out as tf.Tensor2D;
}

export function cachedAttention(
  qkv: tf.Tensor2D,
  cacheK: tf.Tensor3D,
  cacheV: tf.Tensor3D,
  mask: tf.Tensor2D,
  slot: number,
  a: HeadAttrs,
): [tf.Tensor2D, tf.Tensor3D, tf.Tensor3D] {
  if (!has(K.cachedAttention) || !simdHeads(a)) return unfused.cachedAttention(qkv, cacheK, cacheV, mask, slot, a);
  return run<tf.Tensor[]>(K.cachedAttention, { qkv, cacheK, cacheV, mask }, { ...a, slot }) as [
    tf.Tensor2D,
    tf.Tensor3D,
    tf.Tensor3D,
  ];
}

/** The weights of one decoder layer as generation holds them (Qwen2Model.inferenceWeights: projections [in, out]). */
export interface DecodeLayerWeights {
  inputNorm: tf.Tensor1D;
  qkv: tf.Tensor2D;
  qkvBias?: tf.Tensor1D;
  o: tf.Tensor2D;
  postNorm: tf.Tensor1D;
  gateUp: tf.Tensor2D;
  down: tf.Tensor2D;
}

/** Whether decodeLayer() runs here (a backend with the kernel: wasm). */
export function hasDecodeLayer(a: HeadAttrs): boolean {
  return has(K.decodeLayer) && simdHeads(a);
}

/**
 * One decoder layer of generation in one kernel: x [B*T, H] -> the layer's output, with the new keys and values
 * written into the cache at `slot` (the returned cache shares the given one's memory, as cachedAttention's does).
 * `shared`: the cache's leading slots that hold the same bits in every row (wasmCacheSharedPrefix), read from row 0
 * (default 0). Only where hasDecodeLayer().
 */
export function decodeLayer(
  x: tf.Tensor2D,
  w: DecodeLayerWeights,
  rope: { positions: tf.Tensor1D; cos: tf.Tensor2D; sin: tf.Tensor2D },
  cache: { k: tf.Tensor3D; v: tf.Tensor3D; mask: tf.Tensor2D; slot: number; shared?: number },
  a: HeadAttrs & { eps: number },
): [tf.Tensor2D, tf.Tensor3D, tf.Tensor3D] {
  const { qkvBias, ...weights } = w;
  const inputs = {
    x,
    ...weights,
    ...(qkvBias ? { qkvBias } : {}),
    ...rope,
    cacheK: cache.k,
    cacheV: cache.v,
    mask: cache.mask,
  };
  const attrs = { ...a, slot: cache.slot, shared: cache.shared ?? 0 };
  return run<tf.Tensor[]>(K.decodeLayer, inputs, attrs) as [tf.Tensor2D, tf.Tensor3D, tf.Tensor3D];
}

export function tokenLogProbs(logits: tf.Tensor2D, targets: tf.Tensor1D, temperature = 1): [tf.Tensor1D, tf.Tensor1D] {
  if (!has(K.logProbs)) return unfused.tokenLogProbs(logits, targets, temperature);
  return run<tf.Tensor[]>(K.logProbs, { logits, targets }, { temperature }) as [tf.Tensor1D, tf.Tensor1D];
}

/** The gradient of tokenLogProbs with respect to its logits, or null where the backend has no fused kernel for it. */
export function tokenLogProbsGrad(
  dLogProbs: tf.Tensor1D,
  dEntropy: tf.Tensor1D,
  logits: tf.Tensor2D,
  targets: tf.Tensor1D,
  temperature: number,
): tf.Tensor2D | null {
  if (!has(K.logProbs) || !has(K.logProbsGrad)) return null;
  return run<tf.Tensor2D>(K.logProbsGrad, { dLogProbs, dEntropy, logits, targets }, { temperature });
}

// ---------------------------------------------------------------------------------------------------------------
// Opt-in matmul kernels (webgpu only; no gradient, no fallback): not used by the model, timed by `ragen bench
// --only matmul` next to tf.matMul (webgpuMatmul.ts describes the shader).

/** Whether the active backend has the tiled matmul kernels (webgpu). */
export function hasTiledMatMul(): boolean {
  return has(K.tiledMatMul) && has(K.packHalf);
}

/** How tiledMatMul computes (webgpuMatmul.ts's TiledMatMulAttrs; every field optional here). */
export interface TiledMatMulOptions {
  transposeA?: boolean;
  transposeB?: boolean;
  /** Output rows per workgroup tile: 64 (default) or 128. */
  tileRows?: 64 | 128;
  /** Output columns per workgroup tile: 64 (default) or 128. */
  tileCols?: 64 | 128;
  /** K ranges summed after (1: none; default 0: webgpuMatmul.ts's autoSplitK, for outputs too small to fill a GPU). */
  splitK?: number;
  /** Added in the kernel's own output pass: N values to every row of the product, or M x N values (a residual)
   *  element by element. */
  bias?: tf.Tensor1D | tf.Tensor2D;
}

/**
 * C = op(a) op(b) (op: transpose where asked) by the tiled WGSL kernel. a and b are both float32 (f32 storage), or
 * both packed by packHalf (f16 storage; then their logical last axis is twice the stored one). f32 accumulation
 * either way.
 */
export function tiledMatMul(a: tf.Tensor2D, b: tf.Tensor2D, o: TiledMatMulOptions = {}): tf.Tensor2D {
  if (!has(K.tiledMatMul))
    throw new Error(`tiledMatMul: the ${tf.getBackend()} backend has no tiled matmul kernel (webgpu only)`);
  const { transposeA = false, transposeB = false, tileRows = 64, tileCols = 64, splitK = 0, bias } = o;
  return run<tf.Tensor2D>(K.tiledMatMul, bias ? { a, b, bias } : { a, b }, {
    transposeA,
    transposeB,
    tileRows,
    tileCols,
    splitK,
  });
}

/** x float32 [R, C] (C a multiple of 4) rounded to f16, two to an int32 word: int32 [R, C / 2], for tiledMatMul. */
export function packHalf(x: tf.Tensor2D): tf.Tensor2D {
  if (!has(K.packHalf))
    throw new Error(`packHalf: the ${tf.getBackend()} backend has no f16 packing kernel (webgpu only)`);
  return run<tf.Tensor2D>(K.packHalf, { x }, {});
}

// ---------------------------------------------------------------------------------------------------------------
// Gradients (backend-independent: each calls the backward kernel of the active backend).

let gradientsRegistered = false;

/** Registers the gradients of the fused kernels (idempotent). */
export function registerFusedGradients(): void {
  if (gradientsRegistered) return;
  gradientsRegistered = true;
  tf.registerGradient({
    kernelName: K.embed,
    inputsToSave: ['table', 'ids'],
    gradFunc: (dy, saved) => {
      const [table, ids] = saved;
      return {
        table: () => run(K.embedGrad, { dy: dy as tf.Tensor, ids }, { vocabSize: table.shape[0] }),
        ids: () => tf.zerosLike(ids),
      };
    },
  });
  tf.registerGradient({
    kernelName: K.rmsNorm,
    inputsToSave: ['x', 'weight'],
    gradFunc: (dy, saved, attrs) => {
      const [x, weight] = saved;
      const [dx, dw] = run<tf.Tensor[]>(K.rmsNormGrad, { dy: dy as tf.Tensor, x, weight }, attrs);
      return { x: () => dx, weight: () => dw };
    },
  });
  tf.registerGradient({
    kernelName: K.rope,
    inputsToSave: ['positions', 'cos', 'sin'],
    gradFunc: (dy, saved, attrs) => {
      const [positions, cos, sin] = saved;
      const a = attrs as unknown as { rotatedHeads: number; headDim: number };
      return {
        x: () => run(K.rope, { x: dy as tf.Tensor, positions, cos, sin }, { ...a, inverse: true }),
        positions: () => tf.zerosLike(positions),
        cos: () => tf.zerosLike(cos),
        sin: () => tf.zerosLike(sin),
      };
    },
  });
  tf.registerGradient({
    kernelName: K.swiGlu,
    inputsToSave: ['gu'],
    gradFunc: (dy, saved) => ({ gu: () => run(K.swiGluGrad, { dy: dy as tf.Tensor, gu: saved[0] }, {}) }),
  });
  tf.registerGradient({
    kernelName: K.attention,
    inputsToSave: ['qkv', 'mask'],
    outputsToSave: [true, true],
    gradFunc: (dys, saved, attrs) => {
      const [qkv, mask, out, lse] = saved;
      const dOut = (dys as tf.Tensor[])[0];
      return {
        qkv: () => run(K.attentionGrad, { dOut, qkv, mask, out, lse }, attrs),
        mask: () => tf.zerosLike(mask),
      };
    },
  });
  tf.registerGradient({
    kernelName: K.logProbs,
    inputsToSave: ['logits', 'targets'],
    gradFunc: (dys, saved, attrs) => {
      const [logits, targets] = saved;
      const [dLogProbs, dEntropy] = dys as tf.Tensor[];
      return {
        logits: () => run(K.logProbsGrad, { dLogProbs, dEntropy, logits, targets }, attrs),
        targets: () => tf.zerosLike(targets),
      };
    },
  });
}
