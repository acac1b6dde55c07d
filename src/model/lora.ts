// LoRA (Hu et al., 2021) on the Qwen2 linear layers, as Hugging Face PEFT applies it and as RAGEN configures it
// (config/base-lora.yaml: rank 64, alpha 64, target_modules all-linear). A targeted layer y = x W^T + b gains a
// low-rank path:
//
//   y = x W^T + b + (alpha / rank) * (x A^T) B^T          A [rank, in], B [out, rank]
//
// A starts as PEFT initialises it (kaiming_uniform_(a = sqrt(5)), i.e. uniform(-1/sqrt(in), 1/sqrt(in))) and B at
// zero, so an adapted model starts exactly as its base. Only A and B train: the base weights get no gradient and no
// AdamW moments, which is where the memory goes down (Qwen2.5-3B: 3.1 B frozen weights, 120 M adapter weights at
// rank 64). Turning the adapters off gives the base model back, which is RAGEN's reference policy under LoRA.
//
// Names are PEFT's. Here an adapter weight is called by its module's HF name plus PEFT's suffix, e.g.
// 'model.layers.0.self_attn.q_proj.lora_A.weight'; in adapter_model.safetensors PEFT prefixes 'base_model.model.'.
// adapter_config.json carries PEFT's LoraConfig fields, so `PeftModel.from_pretrained(base, dir)` loads the pair.
import * as tf from '@tensorflow/tfjs';
import { headDim, LORA_TARGET_MODULES, type LoraTargetModule, type Qwen2Config } from './config';
import { indexSafetensors, serializeSafetensors, type SafetensorsEntry } from './safetensors';
import { seededUniform } from './seeded';

export { LORA_TARGET_MODULES, type LoraTargetModule };

export interface LoraSettings {
  /** r: the inner width of the low-rank path. */
  rank: number;
  /** The low-rank path is scaled by alpha / rank (PEFT without rsLoRA). */
  alpha: number;
  /** Which linear layers get adapters. */
  targetModules: readonly LoraTargetModule[];
}

/** RAGEN's config/base-lora.yaml: rank 64, alpha 64, all linear layers. */
export const RAGEN_LORA: LoraSettings = { rank: 64, alpha: 64, targetModules: [...LORA_TARGET_MODULES] };

/** Where each module sits inside `model.layers.{i}.`. */
const MODULE_PATH: Record<LoraTargetModule, string> = {
  q_proj: 'self_attn.q_proj',
  k_proj: 'self_attn.k_proj',
  v_proj: 'self_attn.v_proj',
  o_proj: 'self_attn.o_proj',
  gate_proj: 'mlp.gate_proj',
  up_proj: 'mlp.up_proj',
  down_proj: 'mlp.down_proj',
};

/**
 * The model's matmuls, each over one or more stacked HF modules (qwen2.ts stacks q/k/v and gate/up): a group's
 * low-rank output is the concatenation of its modules' outputs, in this order.
 */
export const LORA_GROUPS = {
  qkv: ['q_proj', 'k_proj', 'v_proj'],
  o: ['o_proj'],
  gateUp: ['gate_proj', 'up_proj'],
  down: ['down_proj'],
} as const satisfies Record<string, readonly LoraTargetModule[]>;
export type LoraGroup = keyof typeof LORA_GROUPS;

const PEFT_PREFIX = 'base_model.model.';
export const ADAPTER_CONFIG_FILE = 'adapter_config.json';
export const ADAPTER_WEIGHTS_FILE = 'adapter_model.safetensors';
/**
 * Where a checkpoint keeps a model's adapters: a PEFT adapter directory beside the (frozen) base model, so
 * `PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(ckpt), ckpt + '/adapter')` loads the policy as
 * trained. A subdirectory, not the checkpoint's top level: transformers with PEFT installed would otherwise follow
 * adapter_config.json's base_model_name_or_path instead of loading the directory's own weights.
 */
export const ADAPTER_DIR = 'adapter/';

/** The adapter files under ADAPTER_DIR of a checkpoint's files (names without the prefix), or null if none. */
export function adapterFilesOf(files: Record<string, Uint8Array>): Record<string, Uint8Array> | null {
  if (!files[ADAPTER_DIR + ADAPTER_CONFIG_FILE]) return null;
  const out: Record<string, Uint8Array> = {};
  for (const name of [ADAPTER_CONFIG_FILE, ADAPTER_WEIGHTS_FILE])
    if (files[ADAPTER_DIR + name]) out[name] = files[ADAPTER_DIR + name];
  return out;
}

/** [out, in] of a module's base weight. */
function moduleShape(c: Qwen2Config, module: LoraTargetModule): [number, number] {
  const H = c.hidden_size,
    I = c.intermediate_size,
    hd = headDim(c);
  switch (module) {
    case 'q_proj':
      return [c.num_attention_heads * hd, H];
    case 'k_proj':
    case 'v_proj':
      return [c.num_key_value_heads * hd, H];
    case 'o_proj':
      return [H, c.num_attention_heads * hd];
    case 'gate_proj':
    case 'up_proj':
      return [I, H];
    case 'down_proj':
      return [H, I];
  }
}

/** The HF name of layer `i`'s module (without '.weight'). */
export function moduleName(layer: number, module: LoraTargetModule): string {
  return `model.layers.${layer}.${MODULE_PATH[module]}`;
}

/**
 * Throws an Error naming the setting that is out of range. With the model's config, the rank is also bounded by
 * the model's width (hidden_size): a low-rank path wider than the layers it adapts adds parameters and no
 * expressiveness, and a huge one only exhausts memory; checked here before any adapter is allocated.
 */
export function validateLoraSettings(s: LoraSettings, config?: Qwen2Config): void {
  if (!Number.isInteger(s.rank) || s.rank <= 0) throw new Error(`LoRA: rank must be a positive integer, got ${s.rank}`);
  if (!(Number.isFinite(s.alpha) && s.alpha > 0))
    throw new Error(`LoRA: alpha must be a positive number, got ${s.alpha}`);
  if (!s.targetModules.length) throw new Error('LoRA: targetModules is empty');
  for (const m of s.targetModules) {
    if (!LORA_TARGET_MODULES.includes(m))
      throw new Error(`LoRA: unknown target module '${m}' (one of ${LORA_TARGET_MODULES.join(', ')})`);
  }
  if (config && s.rank > config.hidden_size) {
    throw new Error(
      `LoRA: rank ${s.rank} is wider than the model (hidden_size ${config.hidden_size}): choose a rank from 1 to ${config.hidden_size}`,
    );
  }
}

/**
 * Throws an Error naming the first adapter weight that is missing, unexpected or of another shape than `settings`
 * give for this model (a rank in adapter_config.json that its weights do not have shows here).
 */
export function checkLoraWeightShapes(
  config: Qwen2Config,
  settings: LoraSettings,
  shapes: Record<string, readonly number[]>,
): void {
  const expected = loraWeightShapes(config, settings);
  const missing = Object.keys(expected).filter((n) => !(n in shapes));
  const unexpected = Object.keys(shapes).filter((n) => !(n in expected));
  if (missing.length)
    throw new Error(
      `LoRA weights: missing ${missing.slice(0, 3).join(', ')}${missing.length > 3 ? ` and ${missing.length - 3} more` : ''}`,
    );
  if (unexpected.length) throw new Error(`LoRA weights: unexpected ${unexpected.slice(0, 3).join(', ')}`);
  for (const [name, shape] of Object.entries(expected)) {
    if (shapes[name].join(',') !== shape.join(',')) {
      throw new Error(
        `LoRA weights: ${name} has shape [${shapes[name]}], expected [${shape}] (rank ${settings.rank} in ${ADAPTER_CONFIG_FILE})`,
      );
    }
  }
}

/** Every adapter weight's name and shape: lora_A [rank, in] and lora_B [out, rank] per targeted module and layer. */
export function loraWeightShapes(c: Qwen2Config, s: LoraSettings): Record<string, number[]> {
  const shapes: Record<string, number[]> = {};
  for (let i = 0; i < c.num_hidden_layers; i++) {
    for (const m of LORA_TARGET_MODULES) {
      if (!s.targetModules.includes(m)) continue;
      const [out, inp] = moduleShape(c, m);
      shapes[`${moduleName(i, m)}.lora_A.weight`] = [s.rank, inp];
      shapes[`${moduleName(i, m)}.lora_B.weight`] = [out, s.rank];
    }
  }
  return shapes;
}

/** Adapter weights of a fresh start, as PEFT initialises them: A uniform(-1/sqrt(in), 1/sqrt(in)), B zero. Seeded. */
export function initLoraWeights(c: Qwen2Config, s: LoraSettings, seed: number): Record<string, tf.Tensor> {
  validateLoraSettings(s);
  const uniform = seededUniform(seed);
  const out: Record<string, tf.Tensor> = {};
  for (const [name, shape] of Object.entries(loraWeightShapes(c, s))) {
    const data = new Float32Array(shape[0] * shape[1]);
    if (name.endsWith('lora_A.weight')) {
      const bound = 1 / Math.sqrt(shape[1]); // kaiming_uniform_(a=sqrt(5)): gain sqrt(1/3) x sqrt(3 / fan_in)
      for (let j = 0; j < data.length; j++) data[j] = (2 * uniform() - 1) * bound;
    }
    out[name] = tf.tensor(data, shape, 'float32');
  }
  return out;
}

/** One decoder layer's adapters, as the model's forward pass uses them (LoraAdapters.layerAdapters). */
export interface LayerAdapters {
  scaling: number;
  /** A [rank, in] and B [out, rank] of each targeted module. */
  modules: Partial<Record<LoraTargetModule, { a: tf.Tensor2D; b: tf.Tensor2D }>>;
  /** Each module's output width (for the zeros of an untargeted module in a stacked group). */
  widths: Record<LoraTargetModule, number>;
}

/**
 * The low-rank path of one of the model's matmuls: scaling * (x A^T) B^T per module of the group, concatenated
 * along the output (zeros for a module without an adapter); null when no module of the group has one.
 * x [N, in] -> [N, out of the group]. Differentiable.
 */
export function loraPath(l: LayerAdapters, group: LoraGroup, x: tf.Tensor2D): tf.Tensor2D | null {
  const modules = LORA_GROUPS[group];
  if (!modules.some((m) => l.modules[m])) return null;
  return tf.tidy(() => {
    const parts = modules.map((m) => {
      const p = l.modules[m];
      if (!p) return tf.zeros([x.shape[0], l.widths[m]]);
      return tf.matMul(tf.matMul(x, p.a, false, true), p.b, false, true).mul(l.scaling);
    });
    return (parts.length === 1 ? parts[0] : tf.concat(parts, 1)) as tf.Tensor2D;
  });
}

/** A model's adapters: trainable tf.Variables by PEFT name, and the two computations the model needs from them. */
export class LoraAdapters {
  readonly settings: LoraSettings;
  readonly scaling: number;
  readonly variables: Record<string, tf.Variable>;
  private readonly config: Qwen2Config;
  /** Each module's output width. */
  private readonly widths: Record<LoraTargetModule, number>;

  /** Takes ownership of `weights` (each becomes a variable; the given tensor is disposed). Throws, leaving the
   *  weights to the caller, when one is missing, unexpected or misshapen. */
  constructor(config: Qwen2Config, settings: LoraSettings, weights: Record<string, tf.Tensor>) {
    validateLoraSettings(settings, config);
    checkLoraWeightShapes(config, settings, Object.fromEntries(Object.entries(weights).map(([n, w]) => [n, w.shape])));
    const expected = loraWeightShapes(config, settings);
    this.config = config;
    this.widths = Object.fromEntries(LORA_TARGET_MODULES.map((m) => [m, moduleShape(config, m)[0]])) as Record<
      LoraTargetModule,
      number
    >;
    this.settings = {
      rank: settings.rank,
      alpha: settings.alpha,
      targetModules: LORA_TARGET_MODULES.filter((m) => settings.targetModules.includes(m)),
    };
    this.scaling = settings.alpha / settings.rank;
    this.variables = {};
    for (const name of Object.keys(expected)) {
      this.variables[name] = tf.variable(weights[name], true);
      weights[name].dispose();
    }
  }

  /** Fresh adapters (initLoraWeights). */
  static init(config: Qwen2Config, settings: LoraSettings, seed: number): LoraAdapters {
    return new LoraAdapters(config, settings, initLoraWeights(config, settings, seed));
  }

  private pair(layer: number, m: LoraTargetModule): { a: tf.Tensor2D; b: tf.Tensor2D } | null {
    const n = moduleName(layer, m);
    const a = this.variables[`${n}.lora_A.weight`];
    return a ? { a: a as tf.Tensor2D, b: this.variables[`${n}.lora_B.weight`] as tf.Tensor2D } : null;
  }

  /** Layer `i`'s adapter weight names: A then B of each targeted module, in LORA_TARGET_MODULES order. */
  layerNames(layer: number): string[] {
    return this.settings.targetModules.flatMap((m) => [
      `${moduleName(layer, m)}.lora_A.weight`,
      `${moduleName(layer, m)}.lora_B.weight`,
    ]);
  }

  /**
   * Layer `i`'s adapters for the model's forward pass: its variables, or `tensors` in layerNames order (the copies
   * a gradient-checkpointed layer differentiates).
   */
  layerAdapters(layer: number, tensors?: tf.Tensor[]): LayerAdapters {
    const modules: LayerAdapters['modules'] = {};
    this.settings.targetModules.forEach((m, k) => {
      modules[m] = tensors
        ? { a: tensors[2 * k] as tf.Tensor2D, b: tensors[2 * k + 1] as tf.Tensor2D }
        : this.pair(layer, m)!;
    });
    return { scaling: this.scaling, modules, widths: this.widths };
  }

  /** A module's weight with its adapter folded in: W + scaling * B A (W itself when the module has none). */
  merge(layer: number, m: LoraTargetModule, w: tf.Tensor2D): tf.Tensor2D {
    const p = this.pair(layer, m);
    return p ? tf.tidy(() => w.add(tf.matMul(p.b, p.a).mul(this.scaling))) : w;
  }

  /** Visits every targeted module with its HF weight name ('model.layers.{i}.<path>.weight'). */
  forEachModule(fn: (layer: number, m: LoraTargetModule, weightName: string) => void): void {
    for (let i = 0; i < this.config.num_hidden_layers; i++) {
      for (const m of this.settings.targetModules) fn(i, m, `${moduleName(i, m)}.weight`);
    }
  }

  dispose(): void {
    for (const v of Object.values(this.variables)) v.dispose();
  }
}

// ---------------------------------------------------------------------------------------------------------------
// PEFT's adapter files

/** PEFT's task type: a policy is a causal LM; a critic (value head) is a token classifier. */
export type PeftTaskType = 'CAUSAL_LM' | 'TOKEN_CLS';

/**
 * adapter_config.json + adapter_model.safetensors as PEFT's `save_pretrained` writes them (f32 weights). The
 * adapter weights only: a critic's value head is saved with the model (model.safetensors), as it always is here.
 */
export async function peftAdapterFiles(
  adapters: LoraAdapters,
  opts: { taskType: PeftTaskType; baseModel?: string | null },
): Promise<Record<string, Uint8Array>> {
  const tensors: Record<string, { shape: number[]; data: Float32Array }> = {};
  for (const [name, v] of Object.entries(adapters.variables)) {
    tensors[PEFT_PREFIX + name] = { shape: v.shape.slice(), data: (await v.data()) as Float32Array };
  }
  const s = adapters.settings;
  const config = {
    // PEFT's LoraConfig fields that decide what the adapter computes; the rest keep PEFT's defaults.
    peft_type: 'LORA',
    task_type: opts.taskType,
    base_model_name_or_path: opts.baseModel ?? null,
    r: s.rank,
    lora_alpha: s.alpha,
    lora_dropout: 0,
    target_modules: [...s.targetModules],
    bias: 'none',
    fan_in_fan_out: false,
    use_rslora: false,
    use_dora: false,
    init_lora_weights: true,
    modules_to_save: opts.taskType === 'TOKEN_CLS' ? ['score'] : null,
    inference_mode: true,
  };
  return {
    [ADAPTER_CONFIG_FILE]: new TextEncoder().encode(JSON.stringify(config, null, 2) + '\n'),
    [ADAPTER_WEIGHTS_FILE]: serializeSafetensors(tensors, { format: 'pt' }),
  };
}

/**
 * Adapters from PEFT's two files (ours, or PEFT's own for a Qwen2 model: keys with or without PEFT's '.default'
 * adapter name). Refuses, naming the problem, what this model cannot compute: DoRA, rsLoRA, bias training, a
 * module other than the seven linear layers, a missing or misshapen tensor.
 */
export function loadPeftAdapterFiles(config: Qwen2Config, files: Record<string, Uint8Array>): LoraAdapters {
  const { settings, entries } = readPeftAdapterFiles(config, files);
  const weights: Record<string, tf.Tensor> = {};
  try {
    for (const [name, e] of Object.entries(entries)) weights[name] = tf.tensor(e.read(), e.shape, 'float32');
    return new LoraAdapters(config, settings, weights);
  } catch (err) {
    tf.dispose(Object.values(weights));
    throw new Error(`${(err as Error).message} (in ${ADAPTER_WEIGHTS_FILE})`.replace(/^(?!LoRA)/, 'LoRA adapter: '), {
      cause: err,
    });
  }
}

/**
 * PEFT's two files read and checked without decoding a weight (no tfjs): the settings of adapter_config.json, and
 * the weights by our name (PEFT's prefix and '.default' adapter name dropped), each of the shape those settings give
 * for this model. Loading (loadPeftAdapterFiles) and export's merge (hfExport.ts) both read adapters through this.
 */
export function readPeftAdapterFiles(
  config: Qwen2Config,
  files: Record<string, Uint8Array>,
): { settings: LoraSettings; entries: Record<string, SafetensorsEntry> } {
  const raw = files[ADAPTER_CONFIG_FILE];
  if (!raw) throw new Error(`LoRA adapter: ${ADAPTER_CONFIG_FILE} is missing`);
  let c: Record<string, unknown>;
  try {
    c = JSON.parse(new TextDecoder().decode(raw)) as Record<string, unknown>;
  } catch (err) {
    throw new Error(`LoRA adapter: ${ADAPTER_CONFIG_FILE} is not valid JSON: ${(err as Error).message}`, {
      cause: err,
    });
  }
  if (c === null || typeof c !== 'object' || Array.isArray(c))
    throw new Error(`LoRA adapter: ${ADAPTER_CONFIG_FILE} is not a JSON object`);
  if (c.peft_type !== 'LORA')
    throw new Error(`LoRA adapter: peft_type is ${JSON.stringify(c.peft_type)}, expected "LORA"`);
  if (c.use_dora === true) throw new Error('LoRA adapter: DoRA (use_dora) is not supported');
  if (c.use_rslora === true) throw new Error('LoRA adapter: rsLoRA (use_rslora) is not supported');
  if (c.bias !== undefined && c.bias !== 'none')
    throw new Error(`LoRA adapter: bias ${JSON.stringify(c.bias)} is not supported (only "none")`);
  const targets = c.target_modules === 'all-linear' ? [...LORA_TARGET_MODULES] : c.target_modules;
  if (!Array.isArray(targets))
    throw new Error(`LoRA adapter: target_modules ${JSON.stringify(c.target_modules)} is not a list`);
  const settings: LoraSettings = {
    rank: c.r as number,
    alpha: c.lora_alpha as number,
    targetModules: targets as LoraTargetModule[],
  };
  try {
    validateLoraSettings(settings, config);
  } catch (err) {
    throw new Error(`${(err as Error).message} (in ${ADAPTER_CONFIG_FILE})`, { cause: err });
  }
  const bytes = files[ADAPTER_WEIGHTS_FILE];
  if (!bytes) throw new Error(`LoRA adapter: ${ADAPTER_WEIGHTS_FILE} is missing`);
  let indexed: Record<string, SafetensorsEntry>;
  try {
    indexed = indexSafetensors(bytes).entries;
  } catch (err) {
    throw new Error(`LoRA adapter: ${ADAPTER_WEIGHTS_FILE}: ${(err as Error).message}`, { cause: err });
  }
  const entries: Record<string, SafetensorsEntry> = {};
  for (const [key, e] of Object.entries(indexed))
    entries[key.replace(PEFT_PREFIX, '').replace('.default.weight', '.weight')] = e;
  try {
    checkLoraWeightShapes(config, settings, Object.fromEntries(Object.entries(entries).map(([n, e]) => [n, e.shape])));
  } catch (err) {
    throw new Error(`${(err as Error).message} (in ${ADAPTER_WEIGHTS_FILE})`, { cause: err });
  }
  return { settings, entries };
}
