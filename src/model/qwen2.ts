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
// How it runs: activations are 2-D [B*T, H] from the embedding to the head, and each layer is a short list of
// fused kernels (src/model/kernels: RMSNorm, RoPE, causal grouped-query attention, SwiGLU) around four matmuls:
// q, k and v come from ONE matmul against the three weights stacked ([q; k; v] rows), and gate and up from one
// against [gate; up]. The model STORES them stacked: its variables (what trains, and what AdamW's moments follow) are
//   model.layers.{i}.self_attn.qkv_proj.weight [(nH + 2 nKV) hd, H] + .bias [(nH + 2 nKV) hd]
//   model.layers.{i}.mlp.gate_up_proj.weight [2 I, H]
// in place of the five HF weights, so no pass concatenates them or splits their gradients. Everything outside the
// model speaks HF's names: the constructor takes HF weights, and stackHfWeights / splitStackedWeights (below) are the
// one place that converts, at the boundaries (checkpoints, optimizer moments on disk, the helper thread, export).
// Everything is float32 (tfjs has no bf16).
//
// LoRA (lora.ts): a model may carry adapters on its linear layers. Then each matmul gains the adapters' low-rank
// path, only the adapters (and a critic's value head) train, and baseModel() is the same weights with the adapters
// off (RAGEN's reference policy under LoRA). Generation folds the adapters into its stacked weights once per call.
import * as tf from '@tensorflow/tfjs';
import { headDim, type Qwen2Config } from './config';
import {
  attention,
  cachedAttention,
  decodeLayer,
  embed,
  hasDecodeLayer,
  wasmCacheSharedPrefix,
  rmsNorm,
  rope,
  swiGlu,
  type HeadAttrs,
} from './kernels/index';
import { loraPath, type LayerAdapters, type LoraAdapters, type LoraGroup, type LoraTargetModule } from './lora';
import { RopeTables } from './rope';
import { fillSeededNormal } from './seeded';

export type WeightMap = Record<string, tf.Tensor>;

// ---------------------------------------------------------------------------------------------------------------
// Config checks and weight shapes

export function validateQwen2Config(c: Qwen2Config): void {
  const positive = [
    'vocab_size',
    'hidden_size',
    'intermediate_size',
    'num_hidden_layers',
    'num_attention_heads',
    'num_key_value_heads',
  ] as const;
  for (const key of positive) {
    const v = c[key];
    if (!Number.isInteger(v) || v <= 0) throw new Error(`Qwen2 config: ${key} must be a positive integer, got ${v}`);
  }
  if (c.hidden_size % c.num_attention_heads !== 0) {
    throw new Error(
      `Qwen2 config: hidden_size ${c.hidden_size} is not divisible by num_attention_heads ${c.num_attention_heads}`,
    );
  }
  if (c.num_attention_heads % c.num_key_value_heads !== 0) {
    throw new Error(
      `Qwen2 config: num_attention_heads ${c.num_attention_heads} is not divisible by num_key_value_heads ${c.num_key_value_heads}`,
    );
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
  const H = c.hidden_size,
    hd = headDim(c),
    nH = c.num_attention_heads,
    nKV = c.num_key_value_heads;
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

// ---------------------------------------------------------------------------------------------------------------
// The stacked layout: the model's variables vs HF's weights

/** Layer `i`'s stacked weights and the HF weights each stacks, in row order. */
function stackedGroups(i: number): Array<{ name: string; parts: string[] }> {
  const a = `model.layers.${i}.self_attn.`,
    m = `model.layers.${i}.mlp.`;
  return [
    { name: a + 'qkv_proj.weight', parts: [a + 'q_proj.weight', a + 'k_proj.weight', a + 'v_proj.weight'] },
    { name: a + 'qkv_proj.bias', parts: [a + 'q_proj.bias', a + 'k_proj.bias', a + 'v_proj.bias'] },
    { name: m + 'gate_up_proj.weight', parts: [m + 'gate_proj.weight', m + 'up_proj.weight'] },
  ];
}

const STACKED_NAME = /^model\.layers\.(\d+)\.(self_attn\.qkv_proj\.(weight|bias)|mlp\.gate_up_proj\.weight)$/;
const PART_NAME = /^model\.layers\.(\d+)\.(self_attn\.[qkv]_proj\.(weight|bias)|mlp\.(gate|up)_proj\.weight)$/;

/** Whether `name` is one of the model's stacked variables (qkv_proj.weight / .bias, gate_up_proj.weight). */
export function isStackedWeightName(name: string): boolean {
  return STACKED_NAME.test(name);
}

/**
 * HF weights -> the model's layout: each layer's q/k/v weights and biases and gate/up weights, where all of a group's
 * parts are present, become one tensor (a concat along rows, [q; k; v] and [gate; up]) under the stacked name, in the
 * position of its first part; every other entry passes through as the same tensor object (so a map without those
 * names, e.g. LoRA adapters or a value head's moments, comes back as it went in). The values are the parts' bits.
 * `consume`: dispose each stacked part as soon as its stack exists (the result then owns what the input owned).
 * Works for weights and for anything shaped like them (AdamW's moments).
 */
export function stackHfWeights(weights: Record<string, tf.Tensor>, opts: { consume?: boolean } = {}): WeightMap {
  const out: WeightMap = {};
  const done = new Set<string>();
  for (const [name, t] of Object.entries(weights)) {
    if (done.has(name)) continue;
    const layer = PART_NAME.exec(name);
    const group = layer ? stackedGroups(Number(layer[1])).find((g) => g.parts.includes(name)) : undefined;
    if (!group || !group.parts.every((p) => p in weights)) {
      out[name] = t;
      continue;
    }
    const parts = group.parts.map((p) => weights[p]);
    out[group.name] = tf.concat(parts, 0);
    for (const p of group.parts) done.add(p);
    if (opts.consume) tf.dispose(parts);
  }
  return out;
}

/**
 * The model's layout -> HF weights (stackHfWeights' inverse, bit for bit): each stacked tensor is split along rows
 * into its parts (q: nH hd rows, k and v: nKV hd each; gate and up: I each), new tensors in the stacked one's place;
 * every other entry passes through as the same tensor object. `consume`: dispose the stacked inputs once split.
 */
export function splitStackedWeights(
  config: Qwen2Config,
  weights: Record<string, tf.Tensor>,
  opts: { consume?: boolean } = {},
): WeightMap {
  const hd = headDim(config),
    q = config.num_attention_heads * hd,
    kv = config.num_key_value_heads * hd;
  const out: WeightMap = {};
  for (const [name, t] of Object.entries(weights)) {
    const layer = STACKED_NAME.exec(name);
    if (!layer) {
      out[name] = t;
      continue;
    }
    const group = stackedGroups(Number(layer[1])).find((g) => g.name === name)!;
    const rows = group.parts.length === 3 ? [q, kv, kv] : [config.intermediate_size, config.intermediate_size];
    if (t.shape[0] !== rows.reduce((a, b) => a + b, 0)) {
      throw new Error(
        `Qwen2 weights: ${name} has shape [${t.shape}], expected ${rows.reduce((a, b) => a + b, 0)} rows for this config`,
      );
    }
    tf.split(t, rows, 0).forEach((part, k) => {
      out[group.parts[k]] = part;
    });
    if (opts.consume) t.dispose();
  }
  return out;
}

/**
 * Runs `fn` on `weights` by HF name (splitStackedWeights without copying what needs no split) and frees the split
 * parts afterwards: for readers that take HF names (checkpoint files, the helper thread's transfer).
 */
export async function withHfWeights<T>(
  config: Qwen2Config,
  weights: Record<string, tf.Tensor>,
  fn: (hf: WeightMap) => Promise<T>,
): Promise<T> {
  const hf = splitStackedWeights(config, weights);
  try {
    return await fn(hf);
  } finally {
    for (const [name, t] of Object.entries(hf)) if (weights[name] !== t) t.dispose();
  }
}

/** The rows of each HF part of a model's stacked weight variables ([q, k, v], [gate, up]), recorded when the model
 *  makes them. */
const STACK_ROWS = new WeakMap<tf.Tensor, readonly number[]>();

/**
 * The order in which to sum the squares of gradients keyed like `names` (sumOfSquares' segments: tensor index in
 * `names`, first element, count) so that the sum runs over the elements as it did over HF's separate tensors, one
 * segment per HF tensor: q.weight, q.bias, k.weight, k.bias, v.weight, v.bias for each layer's stacked qkv_proj
 * weight and bias, gate then up for gate_up_proj, every other tensor whole. With it a global gradient norm has the
 * float bits it had before the weights were stacked (cpu sums sequentially; wasm sums each segment in float32 lanes,
 * then the segments in float64). Null when `vars` hold no stacked weight of a Qwen2Model (LoRA adapters, a plain
 * map): then the tensors themselves are the segments.
 */
export function hfSumOrder(names: readonly string[], vars: Record<string, tf.Tensor>): number[] | null {
  if (!names.some((n) => STACK_ROWS.has(vars[n]))) return null;
  const index = new Map(names.map((n, i) => [n, i]));
  const segments: number[] = [];
  const inPairs = new Set<string>();
  for (const [i, name] of names.entries()) {
    if (inPairs.has(name)) continue;
    const rows = STACK_ROWS.get(vars[name]);
    if (!rows) {
      segments.push(i, 0, vars[name].size);
      continue;
    }
    const biasName = name.replace(/\.weight$/, '.bias'); // qkv_proj's; gate_up_proj has none
    const bias = name.endsWith('.weight') && index.has(biasName) ? index.get(biasName)! : -1;
    if (bias >= 0) inPairs.add(biasName);
    const width = vars[name].shape[1] ?? 1;
    let row = 0;
    for (const r of rows) {
      segments.push(i, row * width, r * width);
      if (bias >= 0) segments.push(bias, row, r);
      row += r;
    }
  }
  return segments;
}

/** Every variable's name and shape in the model's own (stacked) layout, in order. */
export function qwen2VariableShapes(c: Qwen2Config, opts: { valueHead?: boolean } = {}): Record<string, number[]> {
  const hf = qwen2WeightShapes(c, opts);
  const out: Record<string, number[]> = {};
  const done = new Set<string>();
  for (const [name, shape] of Object.entries(hf)) {
    if (done.has(name)) continue;
    const layer = PART_NAME.exec(name);
    const group = layer ? stackedGroups(Number(layer[1])).find((g) => g.parts.includes(name)) : undefined;
    if (!group) {
      out[name] = shape;
      continue;
    }
    out[group.name] = [group.parts.reduce((n, p) => n + hf[p][0], 0), ...shape.slice(1)];
    for (const p of group.parts) done.add(p);
  }
  return out;
}

/** How one fresh weight is made (qwen2InitPlan). */
export interface WeightInit {
  name: string;
  shape: number[];
  size: number;
  /** RMSNorm scales are ones, biases zeros; matrices and embeddings are normal(0, std) samples. */
  fill: 'ones' | 'zeros' | 'normal';
  /** 'normal': how many uniforms of seededUniform(seed) come before this tensor's (fillSeededNormal's layout). */
  firstUniform: number;
  std: number;
}

/**
 * Fresh weights as HF initialises Qwen2: normal(0, initializer_range = 0.02) for matrices and embeddings, ones
 * for RMSNorm scales, zeros for biases, in qwen2WeightShapes' order. The normal samples are seededNormal(seed)'s
 * stream, tensor after tensor, so initQwen2Weights here and Node's parallel initQwen2WeightsParallel
 * (src/model/parallelNormal.ts) make the same weights.
 */
export function qwen2InitPlan(config: Qwen2Config, opts: { valueHead?: boolean } = {}): WeightInit[] {
  validateQwen2Config(config);
  const std = typeof config.initializer_range === 'number' ? config.initializer_range : 0.02;
  let drawn = 0; // samples of the stream used so far (two uniforms each)
  return Object.entries(qwen2WeightShapes(config, opts)).map(([name, shape]) => {
    const size = shape.reduce((a, b) => a * b, 1);
    const fill = name.endsWith('norm.weight') ? 'ones' : name.endsWith('.bias') ? 'zeros' : 'normal';
    const firstUniform = 2 * drawn;
    if (fill === 'normal') drawn += size;
    return { name, shape, size, fill, firstUniform, std };
  });
}

/** qwen2InitPlan's weights, drawn on this thread from a seeded JavaScript generator: the same on every backend. */
export function initQwen2Weights(config: Qwen2Config, seed: number, opts: { valueHead?: boolean } = {}): WeightMap {
  const weights: WeightMap = {};
  for (const w of qwen2InitPlan(config, opts)) {
    const data = new Float32Array(w.size);
    if (w.fill === 'ones') data.fill(1);
    else if (w.fill === 'normal') fillSeededNormal(data, seed, w.firstUniform, w.std, false);
    weights[w.name] = tf.tensor(data, w.shape, 'float32');
  }
  return weights;
}

// ---------------------------------------------------------------------------------------------------------------
// Building blocks

/** Where each token sits in its sequence, counting real tokens only (so left padding works): cumsum(mask) - 1,
 *  clipped at 0 for leading padding. The same rule as veRL's position ids. */
export function positionsFromMask(mask: tf.Tensor2D): tf.Tensor2D {
  return tf.tidy(() => tf.maximum(tf.cumsum(mask.toFloat(), 1).sub(1), 0).toInt() as tf.Tensor2D);
}

/** One decoder layer's weights, the q/k/v and gate/up matrices stacked. `transposed`: stored [in, out]. */
interface LayerWeights {
  inputNorm: tf.Tensor1D;
  qkv: tf.Tensor2D; // [(nH + 2 nKV) hd, H]  (or its transpose)
  qkvBias: tf.Tensor1D;
  o: tf.Tensor2D; // [H, nH hd]
  postNorm: tf.Tensor1D;
  gateUp: tf.Tensor2D; // [2 I, H]
  down: tf.Tensor2D; // [H, I]
  /** The layer's LoRA adapters, run as their own low-rank matmuls (training and scoring; generation merges them). */
  lora?: LayerAdapters;
}

/**
 * Weights laid out for generation: the layers' matrices stacked AND transposed to [in, out] once per generate()
 * call, so each decode step's matmuls run without a transpose (tfjs-wasm's fast path) with the bias fused in.
 * Disposed by the caller.
 */
export interface InferenceWeights {
  layers: LayerWeights[];
  /** [H, V]: the output projection, transposed (tied: the embedding matrix). Absent for a value-head model. */
  headT: tf.Tensor2D | null;
}

/** A KV cache per layer ([B, capacity, nKV hd] keys and values); see generate.ts. */
export interface KvCache {
  k: tf.Tensor3D[];
  v: tf.Tensor3D[];
}

// ---------------------------------------------------------------------------------------------------------------
// The model

export class Qwen2Model {
  readonly config: Qwen2Config;
  readonly hasValueHead: boolean;
  /**
   * The weights in the model's layout (with LoRA: the frozen base): HF's names and tensors, except each layer's
   * q/k/v and gate/up, stored stacked as qkv_proj.weight / qkv_proj.bias / gate_up_proj.weight (qwen2VariableShapes;
   * splitStackedWeights gives them by HF name, hfWeights() as copies).
   */
  readonly variables: Record<string, tf.Variable>;
  /**
   * Gradient checkpointing per decoder layer (veRL's `enable_gradient_checkpointing`): under a gradient tape each
   * layer keeps only its input, and the backward pass runs the layer's forward again to get its gradients. About a
   * third more compute for a training pass; the activations kept for the backward shrink from every intermediate of
   * every layer (~150 MB per layer for Qwen2.5-0.5B over 1,536 tokens) to one [T, H] input per layer. Same values.
   */
  gradientCheckpointing = false;
  /**
   * Run a micro-batch's shared prompt prefix through the layers once (hidden's `sharedPrefix`): in RAGEN's training
   * batches most tokens are the system prompt every row repeats. Not with gradient checkpointing.
   */
  sharePrefix = false;
  private readonly rope: RopeTables;
  private readonly heads: HeadAttrs;
  private adapters: LoraAdapters | null = null;
  /** False for a view made by baseModel(): it shares the weights of the model it came from and frees nothing. */
  private ownsWeights = true;

  /** Takes ownership of `weights` (by HF name): each becomes a trainable tf.Variable (q/k/v and gate/up stacked into
   *  one, stackHfWeights) and the given tensor is disposed. When it throws (missing, unexpected or misshapen weights,
   *  named in the message) the weights are left to the caller. */
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
    // In HF order, so stacking frees each group's parts as it goes (a model's worth of copies never coexists).
    const stacked = stackHfWeights(Object.fromEntries(Object.keys(expected).map((n) => [n, weights[n]])), {
      consume: true,
    });
    this.variables = {};
    const hd = headDim(config),
      qkvRows = [config.num_attention_heads * hd, config.num_key_value_heads * hd, config.num_key_value_heads * hd];
    const gateUpRows = [config.intermediate_size, config.intermediate_size];
    for (const name of Object.keys(qwen2VariableShapes(config, opts))) {
      // Unnamed variables: tfjs names must be unique per process, and actor, critic and reference coexist.
      this.variables[name] = tf.variable(stacked[name], true);
      stacked[name].dispose();
      if (/\.qkv_proj\.weight$/.test(name)) STACK_ROWS.set(this.variables[name], qkvRows);
      if (/\.gate_up_proj\.weight$/.test(name)) STACK_ROWS.set(this.variables[name], gateUpRows);
    }
    this.rope = new RopeTables(headDim(config), config.rope_theta);
    this.heads = {
      numHeads: config.num_attention_heads,
      numKvHeads: config.num_key_value_heads,
      headDim: headDim(config),
    };
  }

  // -------------------------------------------------------------------------------------------------------------
  // LoRA

  /** The model's LoRA adapters, or null (full fine-tuning, or a baseModel() view). */
  get lora(): LoraAdapters | null {
    return this.adapters;
  }

  /**
   * What an optimizer trains: every weight, or with LoRA the adapters plus a critic's value head (a fresh head has
   * to learn; PEFT's token-classification task trains it too, as modules_to_save).
   */
  get trainableVariables(): Record<string, tf.Variable> {
    if (!this.adapters) return this.variables;
    const out = { ...this.adapters.variables };
    if (this.hasValueHead) for (const name of ['score.weight', 'score.bias']) out[name] = this.variables[name];
    return out;
  }

  /** Takes ownership of `adapters` (made for this config) and freezes the base weights. */
  addAdapters(adapters: LoraAdapters): void {
    if (this.adapters) throw new Error('Qwen2Model: the model already has LoRA adapters');
    if (!this.ownsWeights) throw new Error('Qwen2Model: a baseModel() view cannot take adapters');
    this.adapters = adapters;
    for (const [name, v] of Object.entries(this.variables))
      v.trainable = this.hasValueHead && name.startsWith('score.');
  }

  /** Folds the adapters into the base weights (W += scaling * B A) and drops them: a plain model computing the same. */
  mergeAdapters(): void {
    const lora = this.adapters;
    if (!lora) return;
    tf.tidy(() => {
      for (let i = 0; i < this.config.num_hidden_layers; i++) {
        for (const name of layerWeightNames(i)) {
          const merged = this.mergedVariable(i, name);
          if (merged !== this.variables[name]) this.variables[name].assign(merged);
        }
      }
    });
    lora.dispose();
    this.adapters = null;
    for (const v of Object.values(this.variables)) v.trainable = true;
  }

  /**
   * The same weights with the adapters off: the base model, without a copy (RAGEN's reference policy under LoRA is
   * the actor with its adapters disabled). Disposing the view frees nothing; it must not outlive this model.
   */
  baseModel(): Qwen2Model {
    const view = Object.create(Qwen2Model.prototype) as Qwen2Model;
    Object.assign(view, this);
    view.adapters = null;
    view.ownsWeights = false;
    return view;
  }

  /** Copies of the weights by HF name (q/k/v and gate/up split out of their stacks; adapters not applied): new
   *  tensors the caller disposes, e.g. for `new Qwen2Model` (a reference model, a critic's trunk). */
  hfWeights(skip: (hfName: string) => boolean = () => false): WeightMap {
    const copies: WeightMap = {};
    for (const [name, v] of Object.entries(this.variables)) copies[name] = v.clone();
    const out = splitStackedWeights(this.config, copies, { consume: true });
    for (const name of Object.keys(out)) {
      if (skip(name)) {
        out[name].dispose();
        delete out[name];
      }
    }
    return out;
  }

  /** Weights by HF name with the adapters folded in (new tensors: the caller disposes them); for generation on
   *  another thread and HF export. Without adapters: copies of the weights. */
  mergedWeights(): WeightMap {
    const lora = this.adapters;
    const out = this.hfWeights();
    if (lora) {
      lora.forEachModule((i, m, name) => {
        const merged = lora.merge(i, m, out[name] as tf.Tensor2D);
        out[name].dispose();
        out[name] = merged;
      });
    }
    return out;
  }

  /**
   * Full-sequence forward. ids [B, T] int32; mask [B, T] with 1 = real token, 0 = padding (left or right).
   * Returns logits [B, T, V], or for a value-head model values [B, T]. Outputs at padding positions are
   * meaningless.
   */
  forward(ids: tf.Tensor2D, mask?: tf.Tensor2D, sharedPrefix = 0): tf.Tensor {
    return tf.tidy(() => {
      const [b, t] = ids.shape;
      const out = this.head(this.hidden(ids, mask, sharedPrefix));
      return this.hasValueHead ? out.reshape([b, t]) : out.reshape([b, t, this.config.vocab_size]);
    });
  }

  /**
   * The decoder stack over whole sequences (causal): final-normed hidden states [B*T, H]. `sharedPrefix` P > 0 says
   * the first P tokens of every row are the same real tokens (a micro-batch's common system prompt, PaddedBatch's
   * sharedPrefix): with sharePrefix on, they go through the layers once instead of B times (hiddenSharedPrefix).
   */
  hidden(ids: tf.Tensor2D, mask?: tf.Tensor2D, sharedPrefix = 0): tf.Tensor2D {
    if (ids.dtype !== 'int32') throw new Error(`Qwen2Model.forward: ids must be int32, got ${ids.dtype}`);
    return tf.tidy(() => {
      const m = mask ? (mask.toFloat() as tf.Tensor2D) : (tf.onesLike(ids).toFloat() as tf.Tensor2D);
      if (m.shape.join(',') !== ids.shape.join(',')) {
        throw new Error(`Qwen2Model.forward: mask shape [${m.shape}] differs from ids shape [${ids.shape}]`);
      }
      const [b, t] = ids.shape;
      if (this.sharePrefix && sharedPrefix > 0 && b > 1 && !this.gradientCheckpointing) {
        if (!Number.isInteger(sharedPrefix) || sharedPrefix >= t)
          throw new Error(`Qwen2Model.forward: sharedPrefix must be an integer below ${t}, got ${sharedPrefix}`);
        return this.hiddenSharedPrefix(ids, m, sharedPrefix);
      }
      const positions = positionsFromMask(m).reshape([b * t]) as tf.Tensor1D;
      const attend = (_layer: number, qkv: tf.Tensor2D) => attention(qkv, m, this.heads);
      if (!this.gradientCheckpointing) {
        return this.stack(
          ids.reshape([b * t]) as tf.Tensor1D,
          positions,
          t - 1,
          this.layerWeights(),
          trainingLinear,
          attend,
        );
      }
      const { cos, sin } = this.rope.tables(t - 1);
      let x = embed(this.variables['model.embed_tokens.weight'] as tf.Tensor2D, ids.reshape([b * t]) as tf.Tensor1D);
      for (let i = 0; i < this.config.num_hidden_layers; i++) x = this.checkpointedLayer(i, x, positions, cos, sin, m);
      return rmsNorm(x, this.variables['model.norm.weight'] as tf.Tensor1D, this.config.rms_norm_eps);
    });
  }

  /**
   * hidden() for rows whose first P tokens are the same: the layers run on the packed tokens [prefix once, then each
   * row's other T - P], P + B (T - P) rows instead of B T, and only attention sees whole rows (the prefix's rows
   * copied in front of each row's own, so every token attends to what it would in the full batch). The output is
   * the full [B*T, H], the prefix's rows copied to every row. Gradients flow back through the copies, so the prefix's
   * gradient is the sum over rows it stands for. Same values as the full batch up to float rounding: a weight's
   * gradient sums the prefix's contribution once instead of B times.
   */
  private hiddenSharedPrefix(ids: tf.Tensor2D, m: tf.Tensor2D, p: number): tf.Tensor2D {
    const [b, t] = ids.shape;
    const s = t - p;
    // [P + B*S] from [B, T] (or [B, T, C] from [P + B*S, C] and back): the prefix of row 0, then every row's rest.
    const pack = (x: tf.Tensor): tf.Tensor => {
      const c = x.shape.length === 3 ? [x.shape[2]] : [];
      const rows = x.shape.length === 3 ? [-1, x.shape[2]] : [-1];
      return tf
        .concat([x.slice([0, 0], [1, p]).reshape(rows), x.slice([0, p], [b, s]).reshape(rows)], 0)
        .reshape([p + b * s, ...c]);
    };
    const unpack = (x: tf.Tensor2D): tf.Tensor3D => {
      const c = x.shape[1];
      // A broadcast add rather than tile: tfjs-wasm has no fast Tile, and the add's gradient is one sum over rows.
      const prefix = x
        .slice([0, 0], [p, c])
        .reshape([1, p, c])
        .add(tf.zeros([b, 1, 1]));
      return tf.concat([prefix, x.slice([p, 0], [b * s, c]).reshape([b, s, c])], 1) as tf.Tensor3D;
    };
    const positions = pack(positionsFromMask(m)) as tf.Tensor1D;
    const attend = (_layer: number, qkv: tf.Tensor2D) => {
      const full = attention(unpack(qkv).reshape([b * t, qkv.shape[1]]), m, this.heads);
      return pack(full.reshape([b, t, full.shape[1]])) as tf.Tensor2D;
    };
    const x = this.stack(pack(ids) as tf.Tensor1D, positions, t - 1, this.layerWeights(), trainingLinear, attend);
    return unpack(x).reshape([b * t, x.shape[1]]);
  }

  /**
   * Decoder layer `i` as one custom-gradient op whose forward keeps nothing but its inputs (the tape does not see
   * the ops inside), and whose backward recomputes the layer under a tape of its own to get the gradients of x and
   * of the layer's weights.
   */
  private checkpointedLayer(
    i: number,
    x: tf.Tensor2D,
    positions: tf.Tensor1D,
    cos: tf.Tensor2D,
    sin: tf.Tensor2D,
    mask: tf.Tensor2D,
  ): tf.Tensor2D {
    // With LoRA the op's weights are the layer's adapters only: the frozen base weights need no gradient, so they
    // stay out of the op (read from the variables, which outlive the backward) and nothing computes one for them.
    const lora = this.adapters;
    const names = lora ? lora.layerNames(i) : layerWeightNames(i);
    const weights = names.map((n) => (lora ? lora.variables[n] : this.variables[n]) as tf.Tensor);
    const n = weights.length;
    const layerOf = (ws: tf.Tensor[]) =>
      lora
        ? {
            ...layerWeightsOf(layerWeightNames(i).map((name) => this.variables[name])),
            lora: lora.layerAdapters(i, ws),
          }
        : layerWeightsOf(ws);
    // The layer from its inputs in op order: x, the n weights, positions, cos, sin, mask. The backward must use the
    // copies customGrad saved: the forward's own positions and mask are freed when the forward pass ends.
    const body = (input: tf.Tensor, ws: tf.Tensor[], [pos, c, s, msk]: tf.Tensor[]) =>
      this.layer(
        input as tf.Tensor2D,
        layerOf(ws),
        pos as tf.Tensor1D,
        c as tf.Tensor2D,
        s as tf.Tensor2D,
        trainingLinear,
        (qkv) => attention(qkv, msk as tf.Tensor2D, this.heads),
      );
    const op = tf.customGrad((...args: Array<tf.Tensor | tf.GradSaveFunc>) => {
      const save = args[args.length - 1] as tf.GradSaveFunc;
      const inputs = args.slice(0, -1) as tf.Tensor[];
      save(inputs);
      return {
        value: body(inputs[0], inputs.slice(1, 1 + n), inputs.slice(1 + n)),
        gradFunc: (dy: tf.Tensor | tf.Tensor[], saved: tf.Tensor[]) => {
          const [xIn, ...rest] = saved;
          const ws = rest.slice(0, n),
            others = rest.slice(n);
          const grads = withOwnTape(() =>
            tf.grads((...xs: tf.Tensor[]) => body(xs[0], xs.slice(1), others))([xIn, ...ws], dy as tf.Tensor),
          );
          // positions, the RoPE tables and the mask are never on a gradient's path, so the tape never reads these
          // zeros; tf.zeros makes them on the host (nothing reaches the GPU unless read), where zerosLike would be
          // one kernel dispatch each, 4 per layer per update.
          return [...grads, ...others.map((t) => tf.zeros(t.shape))];
        },
      };
    });
    return op(x, ...weights, positions, cos, sin, mask) as tf.Tensor2D;
  }

  /** Whether hiddenWithCache runs each layer as one kernel (wasm's decodeLayer) with these weights. */
  private decodesByLayer(weights: InferenceWeights): boolean {
    return hasDecodeLayer(this.heads) && weights.layers.every((l) => !l.lora);
  }

  /**
   * Per layer, how many leading slots of `cache` (at most `upto`) hold the same keys and values, bit for bit, in every
   * row: the rows of a rollout batch begin with the same system prompt. hiddenWithCache then reads those slots from
   * row 0's copy, which spares memory traffic (a decode step's attention waits on reading the cache) and changes no
   * result. undefined where hiddenWithCache cannot use it.
   */
  sharedCacheSlots(cache: KvCache, upto: number, weights: InferenceWeights): number[] | undefined {
    if (!this.decodesByLayer(weights)) return undefined;
    return cache.k.map((k, i) => wasmCacheSharedPrefix(k, cache.v[i], upto));
  }

  /**
   * The decoder stack for generation: `ids` [B, T] are the next T tokens of every row, written into cache slots
   * slot .. slot+T-1; each attends to the cache slots up to its own that `keyMask` [B, capacity] marks real.
   * positions [B*T] int32. `shared`: sharedCacheSlots() of this cache, while its slots below them are unchanged.
   * Returns hidden states [B*T, H] and the updated cache (the old one must not be used again: on wasm and cpu the
   * new one shares its memory).
   */
  hiddenWithCache(
    ids: tf.Tensor2D,
    positions: tf.Tensor1D,
    maxPosition: number,
    keyMask: tf.Tensor2D,
    slot: number,
    cache: KvCache,
    weights: InferenceWeights,
    shared?: number[],
  ): { hidden: tf.Tensor2D; cache: KvCache } {
    const next: KvCache = { k: [], v: [] };
    if (this.decodesByLayer(weights)) {
      // wasm: each layer is one kernel (kernels/wasm.ts, decodeLayer), the same steps as layer() below.
      const hidden = tf.tidy(() => {
        const [b, t] = ids.shape;
        const eps = this.config.rms_norm_eps;
        const { cos, sin } = this.rope.tables(maxPosition);
        let x = embed(this.variables['model.embed_tokens.weight'] as tf.Tensor2D, ids.reshape([b * t]) as tf.Tensor1D);
        weights.layers.forEach((l, i) => {
          const [y, k, v] = decodeLayer(
            x,
            l,
            { positions, cos, sin },
            { k: cache.k[i], v: cache.v[i], mask: keyMask, slot, shared: shared?.[i] },
            { ...this.heads, eps },
          );
          next.k[i] = tf.keep(k);
          next.v[i] = tf.keep(v);
          x = y;
        });
        return rmsNorm(x, this.variables['model.norm.weight'] as tf.Tensor1D, eps);
      });
      return { hidden, cache: next };
    }
    const linear: Linear = (x, wT, bias, residual) => fusedLinear(x, wT, false, bias, residual);
    const hidden = tf.tidy(() => {
      const [b, t] = ids.shape;
      return this.stack(
        ids.reshape([b * t]) as tf.Tensor1D,
        positions,
        maxPosition,
        weights.layers,
        linear,
        (layer, qkv) => {
          const [out, k, v] = cachedAttention(qkv, cache.k[layer], cache.v[layer], keyMask, slot, this.heads);
          next.k[layer] = tf.keep(k);
          next.v[layer] = tf.keep(v);
          return out;
        },
      );
    });
    return { hidden, cache: next };
  }

  /** Logits [N, V] (tied: the embedding matrix is the output projection), or values [N] for a critic. */
  head(hidden: tf.Tensor2D, weights?: InferenceWeights): tf.Tensor {
    const v = this.variables;
    if (this.hasValueHead) {
      return tf.matMul(hidden, v['score.weight'], false, true).add(v['score.bias']).reshape([hidden.shape[0]]);
    }
    if (weights?.headT) return tf.matMul(hidden, weights.headT);
    return tf.matMul(
      hidden,
      v[this.config.tie_word_embeddings ? 'model.embed_tokens.weight' : 'lm_head.weight'],
      false,
      true,
    );
  }

  /** Stacked and transposed weights for generate(), adapters folded in; the caller disposes them
   *  (disposeInferenceWeights). */
  inferenceWeights(): InferenceWeights {
    let result: InferenceWeights | undefined;
    tf.tidy(() => {
      // everything kept is in `result`; the stacked-but-untransposed intermediates are freed
      const t = (w: tf.Tensor2D) => tf.keep(w.transpose() as tf.Tensor2D);
      const layers = this.layerWeights(true).map((l) => ({
        inputNorm: l.inputNorm,
        postNorm: l.postNorm,
        qkv: t(l.qkv),
        qkvBias: l.qkvBias,
        o: t(l.o),
        gateUp: t(l.gateUp),
        down: t(l.down),
      }));
      const out = this.variables[this.config.tie_word_embeddings ? 'model.embed_tokens.weight' : 'lm_head.weight'];
      result = { layers, headT: this.hasValueHead ? null : t(out as tf.Tensor2D) };
    });
    return result!;
  }

  /**
   * The layers' weights (the variables themselves: q/k/v and gate/up are stored stacked), with their LoRA adapters.
   * `merged`: the adapters folded into the weights instead (generation; new tensors where a module has an adapter).
   */
  private layerWeights(merged = false): LayerWeights[] {
    const lora = this.adapters;
    const out: LayerWeights[] = [];
    for (let i = 0; i < this.config.num_hidden_layers; i++) {
      const names = layerWeightNames(i);
      if (!lora) {
        out.push(layerWeightsOf(names.map((n) => this.variables[n])));
      } else if (merged) {
        out.push(layerWeightsOf(names.map((n) => this.mergedVariable(i, n))));
      } else {
        out.push({ ...layerWeightsOf(names.map((n) => this.variables[n])), lora: lora.layerAdapters(i) });
      }
    }
    return out;
  }

  /**
   * Variable `name` of layer `i` with its modules' adapters folded in (W + scaling * B A per HF module: a stacked
   * weight is split, each part merged as lora.merge does, and stacked again), or the variable itself when none of
   * its modules has an adapter (or a bias: adapters adapt weights only).
   */
  private mergedVariable(i: number, name: string): tf.Tensor {
    const lora = this.adapters,
      v = this.variables[name];
    if (!lora || name.endsWith('.bias')) return v;
    if (!isStackedWeightName(name)) {
      const m = loraModuleOf(name);
      return m ? lora.merge(i, m, v as tf.Tensor2D) : v;
    }
    const parts = splitStackedWeights(this.config, { [name]: v });
    const modules = Object.keys(parts).map((p) => loraModuleOf(p)!);
    if (!modules.some((m) => lora.settings.targetModules.includes(m))) {
      tf.dispose(Object.values(parts));
      return v;
    }
    return tf.tidy(() =>
      tf.concat(
        Object.keys(parts).map((p, k) => lora.merge(i, modules[k], parts[p] as tf.Tensor2D)),
        0,
      ),
    );
  }

  /**
   *   x = embed(ids)
   *   per layer:  x += o( attention( rope( qkv(rmsnorm(x)) ) ) )
   *               x += down( swiglu( gateUp(rmsnorm(x)) ) )
   *   return rmsnorm(x)
   * `linear(x, w, bias, residual)` multiplies by the weight as the caller stores it; `attend` is full causal
   * attention or the KV cache's.
   */
  private stack(
    ids: tf.Tensor1D,
    positions: tf.Tensor1D,
    maxPosition: number,
    layers: LayerWeights[],
    linear: Linear,
    attend: (layer: number, qkv: tf.Tensor2D) => tf.Tensor2D,
  ): tf.Tensor2D {
    const eps = this.config.rms_norm_eps;
    const { cos, sin } = this.rope.tables(maxPosition);
    let x = embed(this.variables['model.embed_tokens.weight'] as tf.Tensor2D, ids);
    layers.forEach((l, i) => {
      // One tidy per layer: its intermediates are freed as soon as the layer is done (a gradient tape keeps its own
      // copies of what the backward needs), so a forward pass holds one layer's activations, not all of them.
      const input = x;
      x = tf.tidy(() => this.layer(input, l, positions, cos, sin, linear, (qkv) => attend(i, qkv)));
      input.dispose();
    });
    return rmsNorm(x, this.variables['model.norm.weight'] as tf.Tensor1D, eps);
  }

  /**
   *   x += o( attention( rope( qkv(rmsnorm(x)) ) ) )
   *   x += down( swiglu( gateUp(rmsnorm(x)) ) )
   */
  private layer(
    x: tf.Tensor2D,
    l: LayerWeights,
    positions: tf.Tensor1D,
    cos: tf.Tensor2D,
    sin: tf.Tensor2D,
    linear: Linear,
    attend: (qkv: tf.Tensor2D) => tf.Tensor2D,
  ): tf.Tensor2D {
    const eps = this.config.rms_norm_eps;
    const rotated = this.heads.numHeads + this.heads.numKvHeads; // RoPE turns queries and keys, not values
    // `linear`, plus the group's LoRA path when the layer has adapters (then the residual is added after it).
    const proj = (
      input: tf.Tensor2D,
      w: tf.Tensor2D,
      bias: tf.Tensor1D | undefined,
      group: LoraGroup,
      residual?: tf.Tensor2D,
    ) => {
      const delta = l.lora ? loraPath(l.lora, group, input) : null;
      if (!delta) return linear(input, w, bias, residual);
      return addResidual(linear(input, w, bias).add(delta) as tf.Tensor2D, residual);
    };
    const qkv = rope(
      proj(rmsNorm(x, l.inputNorm, eps), l.qkv, l.qkvBias, 'qkv'),
      positions,
      cos,
      sin,
      rotated,
      this.heads.headDim,
    );
    const h = proj(attend(qkv), l.o, undefined, 'o', x);
    return proj(swiGlu(proj(rmsNorm(h, l.postNorm, eps), l.gateUp, undefined, 'gateUp')), l.down, undefined, 'down', h);
  }

  dispose(): void {
    if (!this.ownsWeights) return;
    for (const variable of Object.values(this.variables)) variable.dispose();
    this.adapters?.dispose();
    this.adapters = null;
    this.rope.dispose();
  }
}

/** x W (+ bias) (+ residual): one of the layer's projections, W as the caller stores it; `residual` is the residual
 *  stream the o and down projections end by adding. */
type Linear = (x: tf.Tensor2D, w: tf.Tensor2D, bias?: tf.Tensor1D, residual?: tf.Tensor2D) => tf.Tensor2D;

/**
 * Whether a projection adds its bias or the residual in the matmul's own output pass (the fused bias): one dispatch
 * fewer per add, 2 per layer in a decode step (which is bound by dispatches on a GPU) and 6 in a checkpointed
 * training update. webgpu's _FusedMatMul (tfjs's and the tiled route's) adds a bias of any shape that broadcasts;
 * wasm's takes a rank-1 bias only, and cpu's runs the same two kernels anyway. The sum is the same float addition
 * either way, so the results do not change.
 */
const addsInMatMul = () => tf.getBackend() === 'webgpu';

/**
 * x op(w) + bias (+ residual) through tfjs's fused matmul, which adds the bias in its output pass on every backend;
 * the residual too where addsInMatMul, as [1, M, N], the shape of the kernel's own output (as [M, N] its gradient
 * would cost a Sum kernel over that leading axis of 1), and otherwise after it.
 */
function fusedLinear(
  x: tf.Tensor2D,
  w: tf.Tensor2D,
  transposeB: boolean,
  bias?: tf.Tensor1D,
  residual?: tf.Tensor2D,
): tf.Tensor2D {
  if (residual && !bias && addsInMatMul()) {
    return tf.fused.matMul({ a: x, b: w, transposeB, bias: residual.reshape([1, ...residual.shape]) }) as tf.Tensor2D;
  }
  return addResidual(tf.fused.matMul({ a: x, b: w, transposeB, bias }) as tf.Tensor2D, residual);
}

/** residual + y, in this order (the decoder layer's x.add(branch), HF's `residual + hidden_states`), or y alone. */
function addResidual(y: tf.Tensor2D, residual?: tf.Tensor2D): tf.Tensor2D {
  return residual ? (residual.add(y) as tf.Tensor2D) : y;
}

/** HF `linear` for training: y = x W^T + b with W as HF stores it, [out, in] (+ the residual, see Linear). On webgpu
 *  the adds ride in the matmul (fusedLinear); elsewhere the matmul and each add are separate ops, so that wasm's and
 *  cpu's training numbers stay exactly those of the recorded runs and tests. */
const trainingLinear: Linear = (x, w, bias, residual) => {
  if (addsInMatMul()) return fusedLinear(x, w, true, bias, residual);
  const y = tf.matMul(x, w, false, true);
  return addResidual((bias ? y.add(bias) : y) as tf.Tensor2D, residual);
};

/** Layer `i`'s variables in the order layerWeightsOf takes them. */
function layerWeightNames(i: number): string[] {
  const p = `model.layers.${i}.`,
    a = p + 'self_attn.';
  return [
    p + 'input_layernorm.weight',
    a + 'qkv_proj.weight',
    a + 'qkv_proj.bias',
    a + 'o_proj.weight',
    p + 'post_attention_layernorm.weight',
    p + 'mlp.gate_up_proj.weight',
    p + 'mlp.down_proj.weight',
  ];
}

/** The LoRA target module a weight name belongs to ('model.layers.3.mlp.up_proj.weight' -> 'up_proj'), or null. */
function loraModuleOf(name: string): LoraTargetModule | null {
  const m = /\.(q_proj|k_proj|v_proj|o_proj|gate_proj|up_proj|down_proj)\.weight$/.exec(name);
  return m ? (m[1] as LoraTargetModule) : null;
}

/** One layer's weights from its variables in layerWeightNames order (no copies: q/k/v and gate/up are stored stacked). */
function layerWeightsOf(w: tf.Tensor[]): LayerWeights {
  const [inputNorm, qkv, qkvBias, o, postNorm, gateUp, down] = w;
  return {
    inputNorm: inputNorm as tf.Tensor1D,
    qkv: qkv as tf.Tensor2D,
    qkvBias: qkvBias as tf.Tensor1D,
    o: o as tf.Tensor2D,
    postNorm: postNorm as tf.Tensor1D,
    gateUp: gateUp as tf.Tensor2D,
    down: down as tf.Tensor2D,
  };
}

/**
 * Runs `f` (which computes gradients with a tape of its own) while a backward pass is under way, and gives the
 * engine its own tape back afterwards. Why: tfjs's engine.gradients() starts a fresh `activeTape` when no gradient
 * is being recorded, which is the case during the outer backward pass; when it finishes, the outer pass would
 * otherwise free the inner tape's saved tensors instead of its own (a leak) at its end.
 */
export function withOwnTape<T>(f: () => T): T {
  const state = (tf.engine() as unknown as { state: { activeTape: unknown } }).state;
  const outer = state.activeTape;
  try {
    return f();
  } finally {
    state.activeTape = outer;
  }
}

/** Frees what inferenceWeights() made (the norms and biases it borrowed from the model are left alone). */
export function disposeInferenceWeights(w: InferenceWeights): void {
  for (const l of w.layers) tf.dispose([l.qkv, l.o, l.gateUp, l.down]);
  if (w.headT) w.headT.dispose();
}
