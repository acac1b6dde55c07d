// Checkpoints in Hugging Face Qwen2 format: config.json + model.safetensors + tokenizer.json (+ tokenizer_config.json,
// generation_config.json). The same directory loads in `transformers` (AutoModelForCausalLM / AutoTokenizer), and a
// Qwen2.5 directory from the Hub loads here (bf16 weights widened to f32; sharded safetensors followed via the index).
//
// `checkpointFiles` / `loadCheckpointFiles` work on in-memory files (browser and Node share them; IndexedDB stores the
// same files); `saveCheckpointDir` / `loadCheckpointDir` are the Node wrappers around a directory.
import * as tf from '@tensorflow/tfjs';
import type { Qwen2Config } from './config';
import { ADAPTER_DIR, peftAdapterFiles, type LoraAdapters } from './lora';
import { isExactBf16, type SafetensorsEntry, type SafetensorsInput } from './safetensors';
import { readShardedSafetensors, shardedSafetensorsFiles } from './safetensorsShards';
import { qwen2WeightShapes, validateQwen2Config, withHfWeights } from './qwen2';
import { Tokenizer } from './tokenizer';

/** What a checkpoint needs from a model: its config and its weights, by Hugging Face name or in Qwen2Model's stacked
 *  layout (q/k/v and gate/up stacked: split here, splitStackedWeights). (Qwen2Model fits.) */
export interface CheckpointableModel {
  readonly config: Qwen2Config;
  readonly variables: Record<string, tf.Variable>;
  /** A critic (HF Qwen2ForTokenClassification, one label): `score.*` instead of `lm_head.weight`. */
  readonly hasValueHead?: boolean;
  /** LoRA adapters, saved in PEFT's format under adapter/ (`variables` are then the frozen base, and a critic's
   *  value head, which alone of them is `trainable`). */
  readonly lora?: LoraAdapters | null;
}

export interface LoadedCheckpoint {
  config: Qwen2Config;
  /** HF name -> f32 tensor; the caller owns (and disposes) them, e.g. by handing them to `new Qwen2Model`. */
  weights: Record<string, tf.Tensor>;
  tokenizer: Tokenizer;
  /** True for a critic checkpoint (architectures ['Qwen2ForTokenClassification']). */
  valueHead: boolean;
  /** generation_config.json if the checkpoint had one (kept so a re-save preserves it). */
  generationConfig?: Record<string, unknown>;
  /** Tensors in the file that a Qwen2 model does not use (e.g. an untied lm_head in a tied model); ignored. */
  unusedWeights: string[];
}

/** The files of a checkpoint written by `checkpointFiles`. */
export const CHECKPOINT_FILES = [
  'config.json',
  'model.safetensors',
  'tokenizer.json',
  'tokenizer_config.json',
  'generation_config.json',
] as const;

/** Hugging Face Qwen2Config's defaults for the keys a config.json may leave out. */
const HF_QWEN2_DEFAULTS = {
  hidden_act: 'silu',
  max_position_embeddings: 32768,
  rope_theta: 10000,
  rms_norm_eps: 1e-6,
  tie_word_embeddings: false,
  attention_dropout: 0,
  initializer_range: 0.02,
  use_cache: true,
  use_sliding_window: false,
  rope_scaling: null,
} as const;

const REQUIRED_SIZES = [
  'vocab_size',
  'hidden_size',
  'intermediate_size',
  'num_hidden_layers',
  'num_attention_heads',
  'num_key_value_heads',
] as const;

/**
 * Checks a parsed config.json and fills Hugging Face's defaults. Throws an Error naming the first problem: not a
 * qwen2 model, a missing or invalid size, head counts that do not divide, or a feature this model does not implement.
 */
export function parseQwen2Config(raw: unknown): Qwen2Config {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    throw new Error('config.json: expected a JSON object');
  const c = { ...HF_QWEN2_DEFAULTS, ...(raw as Record<string, unknown>) } as Record<string, unknown>;
  if (c.model_type !== 'qwen2') {
    throw new Error(
      `config.json: model_type is ${JSON.stringify(c.model_type)}, expected "qwen2" (a Qwen2 / Qwen2.5 model)`,
    );
  }
  for (const key of REQUIRED_SIZES) {
    const v = c[key];
    if (v === undefined) throw new Error(`config.json: missing "${key}"`);
    if (!Number.isInteger(v) || (v as number) <= 0)
      throw new Error(`config.json: "${key}" must be a positive integer, got ${JSON.stringify(v)}`);
  }
  const n = c as unknown as Qwen2Config;
  if (n.hidden_size % n.num_attention_heads !== 0) {
    throw new Error(
      `config.json: hidden_size ${n.hidden_size} is not divisible by num_attention_heads ${n.num_attention_heads}`,
    );
  }
  if (n.num_attention_heads % n.num_key_value_heads !== 0) {
    throw new Error(
      `config.json: num_attention_heads ${n.num_attention_heads} is not divisible by num_key_value_heads ` +
        `${n.num_key_value_heads}`,
    );
  }
  for (const key of ['rope_theta', 'rms_norm_eps', 'max_position_embeddings'] as const) {
    if (typeof c[key] !== 'number' || !((c[key] as number) > 0))
      throw new Error(`config.json: "${key}" must be a positive number`);
  }
  if (typeof c.tie_word_embeddings !== 'boolean')
    throw new Error('config.json: "tie_word_embeddings" must be true or false');
  if (c.hidden_act !== 'silu')
    throw new Error(`config.json: hidden_act ${JSON.stringify(c.hidden_act)} is not supported (only "silu")`);
  if (c.rope_scaling !== null && c.rope_scaling !== undefined) {
    throw new Error(`config.json: rope_scaling ${JSON.stringify(c.rope_scaling)} is not supported (only plain RoPE)`);
  }
  if (c.use_sliding_window === true) throw new Error('config.json: use_sliding_window is not supported');
  try {
    validateQwen2Config(n); // the model's own checks (e.g. an even head dimension for RoPE)
  } catch (err) {
    throw new Error(`config.json: ${(err as Error).message}`, { cause: err });
  }
  return n;
}

/** config.json as Hugging Face's Qwen2Config writes it (sorted keys, HF defaults present); weights are f32. */
export function hfConfigJSON(
  config: Qwen2Config,
  opts: { valueHead?: boolean; bosTokenId?: number; eosTokenId?: number } = {},
): Record<string, unknown> {
  const merged: Record<string, unknown> = {
    ...HF_QWEN2_DEFAULTS,
    max_window_layers: config.num_hidden_layers,
    sliding_window: null,
    ...config,
    architectures: [opts.valueHead ? 'Qwen2ForTokenClassification' : 'Qwen2ForCausalLM'],
    model_type: 'qwen2',
    torch_dtype: 'float32',
  };
  if (merged.bos_token_id === undefined && opts.bosTokenId !== undefined) merged.bos_token_id = opts.bosTokenId;
  if (merged.eos_token_id === undefined && opts.eosTokenId !== undefined) merged.eos_token_id = opts.eosTokenId;
  if (opts.valueHead) {
    // HF derives num_labels from id2label; veRL's critic is a token classifier with one label.
    merged.id2label = { '0': 'LABEL_0' };
    merged.label2id = { LABEL_0: 0 };
  } else {
    delete merged.id2label;
    delete merged.label2id;
  }
  return Object.fromEntries(
    Object.keys(merged)
      .sort()
      .map((k) => [k, merged[k]]),
  );
}

/**
 * The files of a checkpoint of `model` + `tokenizer`, as bytes. `extra` files are added verbatim (and may replace the
 * defaults, e.g. a generation_config.json kept from a Qwen checkpoint). A model with LoRA adapters also gets
 * adapter/adapter_config.json + adapter/adapter_model.safetensors (PEFT's format; lora.ts). Async because GPU
 * tensors are read back asynchronously.
 */
export async function checkpointFiles(
  model: CheckpointableModel,
  tokenizer: Tokenizer,
  extra: Record<string, Uint8Array> = {},
): Promise<Record<string, Uint8Array>> {
  const config = parseQwen2Config(model.config);
  const valueHead = model.hasValueHead ?? false;
  if (tokenizer.vocabSize > config.vocab_size) {
    throw new Error(
      `checkpoint: the tokenizer has ${tokenizer.vocabSize} ids but the model's vocab_size is ${config.vocab_size}`,
    );
  }
  const expected = qwen2WeightShapes(config, { valueHead });
  const tensors: Record<string, SafetensorsInput> = {};
  // With LoRA the base weights are frozen. Where they came from a bfloat16 checkpoint (as Qwen2.5 ships) every value
  // is a bfloat16 still, and writing them as BF16 halves the file without changing a bit of what is read back (a
  // Qwen2.5-0.5B base: 1 GB instead of 2, in the actor's files and again in the critic's). What training changes (a
  // critic's value head) and any base weight that is not exactly a bfloat16 stay float32.
  // Only a critic's value head trains under LoRA, and it is never stacked: a split part is frozen with its stack.
  const trainable = (name: string) => model.variables[name]?.trainable ?? false;
  await withHfWeights(config, model.variables, async (hf) => {
    for (const [name, shape] of Object.entries(expected)) {
      const v = hf[name];
      if (!v) throw new Error(`checkpoint: the model has no weight '${name}'`);
      if (!sameShape(v.shape, shape)) {
        throw new Error(`checkpoint: weight '${name}' has shape [${v.shape}], expected [${shape}] for this config`);
      }
      const raw = await v.data();
      const data = raw instanceof Float32Array ? raw : Float32Array.from(raw as ArrayLike<number>);
      tensors[name] =
        model.lora && !trainable(name) && isExactBf16(data) ? { shape, data, writeAs: 'BF16' } : { shape, data };
    }
    const unexpected = Object.keys(hf).filter((k) => !(k in expected));
    if (unexpected.length)
      throw new Error(`checkpoint: the model has weights a Qwen2 checkpoint does not: ${unexpected.join(', ')}`);
  });

  const bos = tokenizer.tokenId('<|endoftext|>');
  const eos = tokenizer.eosTokenId;
  const pad = tokenizer.padTokenId;
  const generationConfig: Record<string, unknown> = {
    bos_token_id: config.bos_token_id ?? bos,
    // Chat turns end with <|im_end|>; <|endoftext|> also stops, as in Qwen2.5-Instruct's generation_config.
    eos_token_id: [...new Set([eos, bos].filter((x) => x !== undefined))],
    pad_token_id: pad,
    do_sample: true,
    temperature: 1.0,
    top_p: 1.0,
  };
  const json = (o: unknown) => new TextEncoder().encode(JSON.stringify(o, null, 2) + '\n');
  const adapter: Record<string, Uint8Array> = {};
  if (model.lora) {
    const peft = await peftAdapterFiles(model.lora, { taskType: valueHead ? 'TOKEN_CLS' : 'CAUSAL_LM' });
    for (const [name, bytes] of Object.entries(peft)) adapter[ADAPTER_DIR + name] = bytes;
  }
  return {
    ...adapter,
    'config.json': json(hfConfigJSON(config, { valueHead, bosTokenId: bos, eosTokenId: eos })),
    // transformers refuses a safetensors file whose metadata lacks format "pt". Past SHARD_BYTES (Qwen2.5-3B in
    // float32) the weights are sharded as the Hub shards them (safetensorsShards.ts).
    ...shardedSafetensorsFiles(tensors, 'model', { metadata: { format: 'pt' } }),
    'tokenizer.json': json(tokenizer.toJSON()),
    'tokenizer_config.json': json(tokenizer.configJSON()),
    'generation_config.json': json(generationConfig),
    ...extra,
  };
}

/**
 * Loads a checkpoint from its files: validates config.json, finds every expected weight with its shape (bf16/f16
 * widened to f32), handles tied vs untied lm_head, and builds the tokenizer. Errors name the missing file, the
 * missing or mis-shaped tensor, or the bad config key. No tensor is created unless everything checks out.
 */
export function loadCheckpointFiles(files: Record<string, Uint8Array>): LoadedCheckpoint {
  const config = parseQwen2Config(readJSON(files, 'config.json'));
  const architectures = (config.architectures ?? []) as string[];
  const valueHead = architectures.includes('Qwen2ForTokenClassification');

  const tensors = readWeights(files);
  const expected = qwen2WeightShapes(config, { valueHead });
  for (const [name, shape] of Object.entries(expected)) {
    const t = tensors[name];
    if (!t) {
      throw new Error(
        `checkpoint: model.safetensors has no tensor '${name}' (expected shape [${shape}] for this config.json)`,
      );
    }
    if (!sameShape(t.shape, shape)) {
      throw new Error(`checkpoint: tensor '${name}' has shape [${t.shape}] but config.json implies [${shape}]`);
    }
  }
  const unusedWeights = Object.keys(tensors)
    .filter((k) => !(k in expected))
    .sort();
  assertNoExtraLayers(unusedWeights, config.num_hidden_layers);

  const tokenizerConfig = files['tokenizer_config.json'] ? readJSON(files, 'tokenizer_config.json') : undefined;
  let tokenizer: Tokenizer;
  try {
    tokenizer = Tokenizer.fromJSON(readJSON(files, 'tokenizer.json') as object, tokenizerConfig as object | undefined);
  } catch (err) {
    throw new Error(`checkpoint: ${(err as Error).message}`, { cause: err });
  }
  if (tokenizer.vocabSize > config.vocab_size) {
    throw new Error(
      `checkpoint: tokenizer.json has ${tokenizer.vocabSize} ids but config.json's vocab_size is ${config.vocab_size}`,
    );
  }
  const generationConfig = files['generation_config.json']
    ? (readJSON(files, 'generation_config.json') as Record<string, unknown>)
    : undefined;

  const weights: Record<string, tf.Tensor> = {};
  // One tensor at a time, so a large (bf16) checkpoint never holds all its float32 copies outside tfjs at once.
  try {
    for (const [name, shape] of Object.entries(expected)) {
      const data = tensors[name].read();
      assertFinite(data, name, 'model.safetensors');
      weights[name] = tf.tensor(data, shape, 'float32');
    }
  } catch (err) {
    Object.values(weights).forEach((t) => t.dispose()); // e.g. out of memory half-way: leave nothing behind
    throw err;
  }
  return { config, weights, tokenizer, valueHead, generationConfig, unusedWeights };
}

/**
 * Weights of decoder layers beyond config.json's num_hidden_layers mean the config does not describe these weights
 * (say 1 layer over a 2-layer model): loading would silently run a different, truncated model. Every shape of the
 * layers it names was checked against the config already; this refuses the layers it does not name.
 */
function assertNoExtraLayers(unused: readonly string[], numLayers: number): void {
  const extra = new Set<number>();
  for (const name of unused) {
    const m = /^model\.layers\.(\d+)\./.exec(name);
    if (m && Number(m[1]) >= numLayers && !name.endsWith('rotary_emb.inv_freq')) extra.add(Number(m[1]));
  }
  if (extra.size > 0) {
    const layers = [...extra].sort((a, b) => a - b);
    throw new Error(
      `checkpoint: config.json says num_hidden_layers ${numLayers} but model.safetensors also holds layer${layers.length > 1 ? 's' : ''} ` +
        `${layers.join(', ')} (${numLayers + layers.length} in all?): the config does not describe these weights`,
    );
  }
}

/** model.safetensors, or the shards named by model.safetensors.index.json (as larger Hub models ship). */
function readWeights(files: Record<string, Uint8Array>): Record<string, SafetensorsEntry> {
  return readShardedSafetensors(files, 'model', 'checkpoint');
}

/**
 * Throws an Error naming the tensor and the file when `data` holds a NaN or an infinity. A checkpoint with such
 * weights (a run that diverged, a damaged file) would give NaN log-probs everywhere: refused when it is loaded,
 * by eval and by --resume alike, instead of silently scoring or training garbage.
 */
export function assertFinite(data: Float32Array, tensor: string, file: string): void {
  let bad = 0;
  for (let i = 0; i < data.length; i++) if (!Number.isFinite(data[i])) bad++;
  if (bad > 0)
    throw new Error(
      `checkpoint: tensor '${tensor}' in ${file} has ${bad} non-finite value(s) (NaN or infinity) of ${data.length}`,
    );
}

function readJSON(files: Record<string, Uint8Array>, name: string): unknown {
  const bytes = files[name];
  if (!bytes) throw new Error(`checkpoint: ${name} is missing`);
  try {
    return JSON.parse(new TextDecoder().decode(bytes));
  } catch (err) {
    throw new Error(`checkpoint: ${name} is not valid JSON: ${(err as Error).message}`, { cause: err });
  }
}

function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}
