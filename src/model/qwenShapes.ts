// The Qwen2.5 models RAGEN trains, as Hugging Face config.json objects exactly as Qwen ships them (the -Instruct
// repositories' config.json; the base models' differ only in eos_token_id), for `ragen init-model` and the benches.
// Qwen2.5-0.5B-Instruct is RAGEN's paper model, Qwen2.5-3B-Instruct RAGEN-2's default.

/** The names `ragen init-model --shape` accepts. */
export const QWEN_SHAPE_NAMES = ['qwen2.5-0.5b', 'qwen2.5-3b'] as const;
export type QwenShapeName = (typeof QWEN_SHAPE_NAMES)[number];

/** Keys both models share (vocabulary, RoPE base, norms, special-token ids, attention settings). */
const QWEN25_COMMON = {
  architectures: ['Qwen2ForCausalLM'],
  attention_dropout: 0.0,
  bos_token_id: 151643, // <|endoftext|>
  eos_token_id: 151645, // <|im_end|> (Instruct)
  hidden_act: 'silu',
  initializer_range: 0.02,
  max_position_embeddings: 32768,
  model_type: 'qwen2',
  rms_norm_eps: 1e-6,
  rope_theta: 1000000.0,
  sliding_window: 32768,
  tie_word_embeddings: true,
  torch_dtype: 'bfloat16',
  use_cache: true,
  use_sliding_window: false,
  vocab_size: 151936, // 151,665 used ids padded to a multiple of 128 (Qwen's own padding)
} as const;

/** config.json of Qwen/Qwen2.5-0.5B-Instruct and Qwen/Qwen2.5-3B-Instruct. */
export const QWEN_SHAPES: Record<QwenShapeName, Record<string, unknown>> = {
  'qwen2.5-0.5b': {
    ...QWEN25_COMMON,
    hidden_size: 896,
    intermediate_size: 4864,
    num_hidden_layers: 24,
    num_attention_heads: 14,
    num_key_value_heads: 2,
    max_window_layers: 21,
  },
  'qwen2.5-3b': {
    ...QWEN25_COMMON,
    hidden_size: 2048,
    intermediate_size: 11008,
    num_hidden_layers: 36,
    num_attention_heads: 16,
    num_key_value_heads: 2,
    max_window_layers: 70,
  },
};

/** A shape's config.json, with `layers` decoder layers instead of the model's own (every width unchanged). */
export function qwenShapeConfig(shape: QwenShapeName, layers?: number): Record<string, unknown> {
  const base = QWEN_SHAPES[shape];
  if (!base) throw new Error(`unknown Qwen shape '${shape}' (expected: ${QWEN_SHAPE_NAMES.join(', ')})`);
  if (layers === undefined) return { ...base };
  if (!Number.isInteger(layers) || layers < 1) throw new Error(`layers must be an integer >= 1, got ${layers}`);
  return { ...base, num_hidden_layers: layers };
}
