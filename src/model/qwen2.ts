// The Qwen2 decoder in tfjs, readable top to bottom (in the spirit of nanoGPT's model.py).
//
//   ids -> embed_tokens -> N x [ x + attn(rmsnorm(x)); x + mlp(rmsnorm(x)) ] -> rmsnorm -> lm_head (logits)
//                                                                                      or score (critic values)
//
// Weight names and layouts are Hugging Face Qwen2's, so a Qwen2.5 checkpoint loads as-is and ours loads in
// `transformers`. HF Linear layers store W as [out, in] and compute y = x W^T + b.
//   model.embed_tokens.weight [V, H]
//   model.layers.{i}.input_layernorm.weight [H]
//   model.layers.{i}.self_attn.{q,k,v}_proj.weight [out, H] + .bias [out]   (q: nH*hd, k/v: nKV*hd)
//   model.layers.{i}.self_attn.o_proj.weight [H, nH*hd]                      (no bias)
//   model.layers.{i}.post_attention_layernorm.weight [H]
//   model.layers.{i}.mlp.{gate,up}_proj.weight [I, H];  mlp.down_proj.weight [H, I]
//   model.norm.weight [H]
//   lm_head.weight [V, H]                 only when tie_word_embeddings is false (else embed_tokens is reused)
//   score.weight [1, H] + score.bias [1]  the critic's value head (HF Qwen2ForTokenClassification, num_labels=1,
//                                          as veRL's critic); a value-head model has no lm_head.
//
// Everything is float32 (tfjs has no bf16). Tensors stay at rank <= 4 because several tfjs kernels fail or fall
// back to the CPU at rank 5 (PLATFORM.md); grouped-query attention is therefore done without a rank-5 K/V repeat.
import * as tf from '@tensorflow/tfjs';
import { headDim, type Qwen2Config } from './config';
import { RopeTables, applyRope } from './rope';
import { seededNormal } from './seeded';

export type WeightMap = Record<string, tf.Tensor>;

/** Added to attention scores of keys a query may not see. Finite (not -Infinity) so a row with no visible key
 *  (a padding query) gives a harmless uniform softmax instead of NaN. */
export const MASKED_SCORE = -1e9;

/**
 * Called in every layer with that layer's new keys and values ([B, nKV, T, hd], RoPE already applied); returns
 * the keys and values to attend over ([B, nKV, S, hd]). The KV cache of generate.ts plugs in here; a plain
 * forward pass attends over exactly the new ones.
 */
export type KeyValueHook = (layer: number, k: tf.Tensor4D, v: tf.Tensor4D) => { k: tf.Tensor4D; v: tf.Tensor4D };

// ---------------------------------------------------------------------------------------------------------------
// Config checks and weight shapes

export function validateQwen2Config(c: Qwen2Config): void {
  const positive = ['vocab_size', 'hidden_size', 'intermediate_size', 'num_hidden_layers', 'num_attention_heads',
    'num_key_value_heads'] as const;
  for (const key of positive) {
    const v = c[key];
    if (!Number.isInteger(v) || v <= 0) throw new Error(`Qwen2 config: ${key} must be a positive integer, got ${v}`);
  }
  if (c.hidden_size % c.num_attention_heads !== 0) {
    throw new Error(`Qwen2 config: hidden_size ${c.hidden_size} is not divisible by num_attention_heads ${c.num_attention_heads}`);
  }
  if (c.num_attention_heads % c.num_key_value_heads !== 0) {
    throw new Error(`Qwen2 config: num_attention_heads ${c.num_attention_heads} is not divisible by num_key_value_heads ${c.num_key_value_heads}`);
  }
  if (headDim(c) % 2 !== 0) throw new Error(`Qwen2 config: head dimension ${headDim(c)} must be even for RoPE`);
  if (!(c.rope_theta > 0)) throw new Error(`Qwen2 config: rope_theta must be positive, got ${c.rope_theta}`);
  if (!(c.rms_norm_eps > 0)) throw new Error(`Qwen2 config: rms_norm_eps must be positive, got ${c.rms_norm_eps}`);
  if (c.hidden_act !== undefined && c.hidden_act !== 'silu') {
    throw new Error(`Qwen2 config: hidden_act '${String(c.hidden_act)}' is not supported (only 'silu')`);
  }
}

/** Every weight's HF name and shape, in HF order. */
export function qwen2WeightShapes(c: Qwen2Config, opts: { valueHead?: boolean } = {}): Record<string, number[]> {
  const H = c.hidden_size, hd = headDim(c), nH = c.num_attention_heads, nKV = c.num_key_value_heads;
  const shapes: Record<string, number[]> = { 'model.embed_tokens.weight': [c.vocab_size, H] };
  for (let i = 0; i < c.num_hidden_layers; i++) {
    const p = `model.layers.${i}.`;
    shapes[p + 'input_layernorm.weight'] = [H];
    shapes[p + 'self_attn.q_proj.weight'] = [nH * hd, H];
    shapes[p + 'self_attn.q_proj.bias'] = [nH * hd];
    shapes[p + 'self_attn.k_proj.weight'] = [nKV * hd, H];
    shapes[p + 'self_attn.k_proj.bias'] = [nKV * hd];
    shapes[p + 'self_attn.v_proj.weight'] = [nKV * hd, H];
    shapes[p + 'self_attn.v_proj.bias'] = [nKV * hd];
    shapes[p + 'self_attn.o_proj.weight'] = [H, nH * hd];
    shapes[p + 'post_attention_layernorm.weight'] = [H];
    shapes[p + 'mlp.gate_proj.weight'] = [c.intermediate_size, H];
    shapes[p + 'mlp.up_proj.weight'] = [c.intermediate_size, H];
    shapes[p + 'mlp.down_proj.weight'] = [H, c.intermediate_size];
  }
  shapes['model.norm.weight'] = [H];
  if (opts.valueHead) {
    shapes['score.weight'] = [1, H];
    shapes['score.bias'] = [1];
  } else if (!c.tie_word_embeddings) {
    shapes['lm_head.weight'] = [c.vocab_size, H];
  }
  return shapes;
}

/**
 * Fresh weights as HF initialises Qwen2: normal(0, initializer_range = 0.02) for matrices and embeddings, ones
 * for RMSNorm scales, zeros for biases. The random numbers come from a seeded JavaScript generator, so the same
 * seed gives the same weights on every backend.
 */
export function initQwen2Weights(config: Qwen2Config, seed: number, opts: { valueHead?: boolean } = {}): WeightMap {
  validateQwen2Config(config);
  const std = typeof config.initializer_range === 'number' ? config.initializer_range : 0.02;
  const normal = seededNormal(seed);
  const weights: WeightMap = {};
  for (const [name, shape] of Object.entries(qwen2WeightShapes(config, opts))) {
    const size = shape.reduce((a, b) => a * b, 1);
    const data = new Float32Array(size);
    if (name.endsWith('norm.weight')) data.fill(1);
    else if (!name.endsWith('.bias')) for (let j = 0; j < size; j++) data[j] = std * normal();
    weights[name] = tf.tensor(data, shape, 'float32');
  }
  return weights;
}

// ---------------------------------------------------------------------------------------------------------------
// Building blocks

/** HF Linear: x [B, T, in] times W^T ([out, in]) plus bias -> [B, T, out]. */
function linear(x: tf.Tensor3D, weight: tf.Tensor, bias?: tf.Tensor): tf.Tensor3D {
  const [b, t, inDim] = x.shape;
  let y = tf.matMul(x.reshape([b * t, inDim]), weight as tf.Tensor2D, false, true);
  if (bias) y = y.add(bias);
  return y.reshape([b, t, weight.shape[0]]);
}

/** RMSNorm: x / sqrt(mean(x^2) + eps) * weight, over the hidden dimension. */
function rmsNorm(x: tf.Tensor3D, weight: tf.Tensor, eps: number): tf.Tensor3D {
  const meanSquare = tf.mean(tf.square(x), -1, true);
  return x.mul(tf.rsqrt(meanSquare.add(eps))).mul(weight) as tf.Tensor3D;
}

/**
 * Embedding lookup ids [B, T] -> [B, T, H]. tf.gather's own gradient needs UnsortedSegmentSum, which the wasm
 * backend lacks, so the gradient is written here as a scatter-add of the output gradient into the table's rows
 * (ScatterNd sums rows of repeated ids, and exists on cpu, wasm and webgpu).
 */
function embed(table: tf.Tensor2D, ids: tf.Tensor2D): tf.Tensor3D {
  const [b, t] = ids.shape;
  const [vocab, hidden] = table.shape;
  // customGrad passes its inputs and the save function as one variadic list.
  const lookup = tf.customGrad((...args: Array<tf.Tensor | tf.GradSaveFunc>) => {
    const [tbl, flatIds, save] = args as [tf.Tensor, tf.Tensor, tf.GradSaveFunc];
    save([flatIds]);
    return {
      value: tf.gather(tbl, flatIds),
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => [
        tf.scatterND(saved[0].expandDims(1), dy, [vocab, hidden]),
        tf.zeros(saved[0].shape),   // ids are integers: no gradient, but customGrad wants one per input
      ],
    };
  });
  return lookup(table, ids.reshape([b * t])).reshape([b, t, hidden]);
}

/** Where each token sits in its sequence, counting real tokens only (so left padding works): cumsum(mask) - 1,
 *  clipped at 0 for leading padding. The same rule as veRL's position ids. */
export function positionsFromMask(mask: tf.Tensor2D): tf.Tensor2D {
  return tf.tidy(() => tf.maximum(tf.cumsum(mask.toFloat(), 1).sub(1), 0).toInt() as tf.Tensor2D);
}

/** Additive attention bias [B, 1, T, T] for a full sequence: a query sees keys at or before it that are real. */
export function causalAttentionBias(mask: tf.Tensor2D): tf.Tensor4D {
  return tf.tidy(() => {
    const [b, t] = mask.shape;
    const causal = tf.linalg.bandPart(tf.ones([t, t]), -1, 0);                   // [T, T], 1 on and below diagonal
    const visible = causal.reshape([1, 1, t, t]).mul(mask.toFloat().reshape([b, 1, 1, t]));
    return tf.sub(1, visible).mul(MASKED_SCORE) as tf.Tensor4D;
  });
}

// ---------------------------------------------------------------------------------------------------------------
// The model

export class Qwen2Model {
  readonly config: Qwen2Config;
  readonly hasValueHead: boolean;
  readonly variables: Record<string, tf.Variable>;
  private readonly rope: RopeTables;

  /** Takes ownership of `weights`: each becomes a trainable tf.Variable and the given tensor is disposed. When it
   *  throws (missing, unexpected or misshapen weights, named in the message) the weights are left to the caller. */
  constructor(config: Qwen2Config, weights: WeightMap, opts: { valueHead?: boolean } = {}) {
    validateQwen2Config(config);
    this.config = config;
    this.hasValueHead = !!opts.valueHead;
    const expected = qwen2WeightShapes(config, opts);
    const missing = Object.keys(expected).filter((n) => !(n in weights));
    const unexpected = Object.keys(weights).filter((n) => !(n in expected));
    if (missing.length) throw new Error(`Qwen2 weights: missing ${missing.join(', ')}`);
    if (unexpected.length) throw new Error(`Qwen2 weights: unexpected ${unexpected.join(', ')}`);
    for (const [name, shape] of Object.entries(expected)) {
      const w = weights[name];
      if (w.shape.join(',') !== shape.join(',')) {
        throw new Error(`Qwen2 weights: ${name} has shape [${w.shape}], expected [${shape}]`);
      }
      if (w.dtype !== 'float32') throw new Error(`Qwen2 weights: ${name} has dtype ${w.dtype}, expected float32`);
    }
    this.variables = {};
    for (const name of Object.keys(expected)) {
      // Unnamed variables: tfjs names must be unique per process, and actor, critic and reference coexist.
      this.variables[name] = tf.variable(weights[name], true);
      weights[name].dispose();
    }
    this.rope = new RopeTables(headDim(config), config.rope_theta);
  }

  /**
   * Full-sequence forward. ids [B, T] int32; mask [B, T] with 1 = real token, 0 = padding (left or right).
   * Returns logits [B, T, V], or for a value-head model values [B, T]. Outputs at padding positions are
   * meaningless (a padding query may see no key at all).
   */
  forward(ids: tf.Tensor2D, mask?: tf.Tensor2D): tf.Tensor {
    if (ids.dtype !== 'int32') throw new Error(`Qwen2Model.forward: ids must be int32, got ${ids.dtype}`);
    return tf.tidy(() => {
      const m = mask ?? tf.onesLike(ids);
      if (m.shape.join(',') !== ids.shape.join(',')) {
        throw new Error(`Qwen2Model.forward: mask shape [${m.shape}] differs from ids shape [${ids.shape}]`);
      }
      const hidden = this.hiddenStates(ids, positionsFromMask(m), causalAttentionBias(m), ids.shape[1] - 1);
      return this.head(hidden);
    });
  }

  /**
   * The decoder stack. ids [B, T] int32; positions [B, T] int32 (each at most maxPosition); attnBias [B, 1, T, S]
   * (0 = visible, MASKED_SCORE = hidden) over the S keys that `kv` returns (S = T without a hook).
   * Returns the final-normed hidden states [B, T, H]. generate.ts calls this with its KV cache.
   */
  hiddenStates(ids: tf.Tensor2D, positions: tf.Tensor2D, attnBias: tf.Tensor4D, maxPosition: number,
               kv?: KeyValueHook): tf.Tensor3D {
    const c = this.config;
    const groupSize = c.num_attention_heads / c.num_key_value_heads;
    // The bias is the same for every head; heads of one KV group sit side by side along the query axis (see
    // attention), so repeat it once per group member here rather than in every layer.
    // (A concat of copies, not tf.tile: the same values, and tfjs-wasm's Tile took ~10 % of a tiny-model update.)
    const groupedBias = groupSize > 1 ? tf.concat(new Array<tf.Tensor4D>(groupSize).fill(attnBias), 2) : attnBias;
    const { cos, sin } = this.rope.lookup(positions, maxPosition);
    let x = embed(this.variables['model.embed_tokens.weight'] as tf.Tensor2D, ids);
    for (let i = 0; i < c.num_hidden_layers; i++) {
      const p = `model.layers.${i}.`;
      x = x.add(this.attention(i, rmsNorm(x, this.variables[p + 'input_layernorm.weight'], c.rms_norm_eps),
        cos, sin, groupedBias, kv));
      x = x.add(this.mlp(i, rmsNorm(x, this.variables[p + 'post_attention_layernorm.weight'], c.rms_norm_eps)));
    }
    return rmsNorm(x, this.variables['model.norm.weight'], c.rms_norm_eps);
  }

  /** Logits [B, T, V] (tied: the embedding matrix is the output projection), or values [B, T] for a critic. */
  head(hidden: tf.Tensor3D): tf.Tensor {
    if (this.hasValueHead) {
      const values = linear(hidden, this.variables['score.weight'], this.variables['score.bias']);
      return values.reshape(values.shape.slice(0, 2));
    }
    const out = this.config.tie_word_embeddings ? 'model.embed_tokens.weight' : 'lm_head.weight';
    return linear(hidden, this.variables[out]);
  }

  /**
   * Causal self-attention with grouped-query attention (nKV key/value heads shared by groups of query heads).
   * HF repeats K/V for each query head; instead, because query heads of one group are consecutive, we view the
   * queries [B, nH, T, hd] as [B, nKV, group*T, hd] and let each K/V head serve its whole group in one matmul.
   * Same result, no rank-5 tile, and no copies of K/V.
   */
  private attention(layer: number, x: tf.Tensor3D, cos: tf.Tensor4D, sin: tf.Tensor4D, groupedBias: tf.Tensor4D,
                    kv?: KeyValueHook): tf.Tensor3D {
    const c = this.config, p = `model.layers.${layer}.self_attn.`;
    const [b, t] = x.shape;
    const nH = c.num_attention_heads, nKV = c.num_key_value_heads, hd = headDim(c);
    const heads = (y: tf.Tensor3D, n: number) => y.reshape([b, t, n, hd]).transpose([0, 2, 1, 3]) as tf.Tensor4D;
    const v = this.variables;
    const q = applyRope(heads(linear(x, v[p + 'q_proj.weight'], v[p + 'q_proj.bias']), nH), cos, sin);
    let k = applyRope(heads(linear(x, v[p + 'k_proj.weight'], v[p + 'k_proj.bias']), nKV), cos, sin);
    let val = heads(linear(x, v[p + 'v_proj.weight'], v[p + 'v_proj.bias']), nKV);
    if (kv) ({ k, v: val } = kv(layer, k, val));

    const groupedQ = q.reshape([b, nKV, (nH / nKV) * t, hd]);
    const scores = tf.matMul(groupedQ, k, false, true).mul(1 / Math.sqrt(hd)).add(groupedBias);
    const out = tf.matMul(tf.softmax(scores, -1), val);                                  // [B, nKV, group*T, hd]
    const merged = out.reshape([b, nH, t, hd]).transpose([0, 2, 1, 3]).reshape([b, t, nH * hd]) as tf.Tensor3D;
    return linear(merged, v[p + 'o_proj.weight']);
  }

  /** SwiGLU: down(silu(gate(x)) * up(x)). */
  private mlp(layer: number, x: tf.Tensor3D): tf.Tensor3D {
    const p = `model.layers.${layer}.mlp.`;
    const gate = linear(x, this.variables[p + 'gate_proj.weight']);
    const up = linear(x, this.variables[p + 'up_proj.weight']);
    return linear(gate.mul(tf.sigmoid(gate)).mul(up) as tf.Tensor3D, this.variables[p + 'down_proj.weight']);
  }

  dispose(): void {
    for (const variable of Object.values(this.variables)) variable.dispose();
    this.rope.dispose();
  }
}
