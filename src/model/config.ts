// The policy's architecture, in Hugging Face Qwen2 `config.json` terms (snake_case keys, as HF writes them), so a
// config.json from a Qwen2.5 checkpoint parses as-is and ours loads in `transformers`.

export interface Qwen2Config {
  architectures?: string[]; // ['Qwen2ForCausalLM']
  model_type: 'qwen2';
  vocab_size: number;
  hidden_size: number;
  intermediate_size: number; // SwiGLU inner width
  num_hidden_layers: number;
  num_attention_heads: number;
  num_key_value_heads: number; // grouped-query attention: heads share K/V in groups
  max_position_embeddings: number;
  rope_theta: number;
  rms_norm_eps: number;
  tie_word_embeddings: boolean;
  hidden_act?: 'silu';
  torch_dtype?: 'float32' | 'bfloat16' | 'float16';
  bos_token_id?: number;
  eos_token_id?: number;
  [extra: string]: unknown; // HF configs carry more keys (sliding_window, use_cache, ...); kept, ignored
}

/** Head dimension, as Qwen2 derives it. */
export function headDim(c: Qwen2Config): number {
  return c.hidden_size / c.num_attention_heads;
}

/**
 * The smallest sampling temperature other than 0 (greedy). Logits are divided by it in float32: a temperature
 * near float32's smallest numbers (1e-45 rounds to a denormal that GPUs flush to 0) makes every logit infinite and
 * the sampled distribution NaN. Below 1e-3 sampling is greedy in all but name anyway: use 0.
 */
export const MIN_TEMPERATURE = 1e-3;

/** The linear layers of a Qwen2 decoder layer that LoRA can target ("all-linear" in PEFT's and RAGEN's words). */
export const LORA_TARGET_MODULES = [
  'q_proj',
  'k_proj',
  'v_proj',
  'o_proj',
  'gate_proj',
  'up_proj',
  'down_proj',
] as const;
export type LoraTargetModule = (typeof LORA_TARGET_MODULES)[number];
