// The small random Qwen2 the generation and continuous-batching tests sample from: 2 layers, grouped-query heads
// (4 query heads on 2 key/value heads), a 50-token vocabulary.
import type { Qwen2Config } from '../../../src/model/config';

export const TINY_GENERATE_CONFIG: Qwen2Config = {
  model_type: 'qwen2',
  vocab_size: 50,
  hidden_size: 32,
  intermediate_size: 40,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  max_position_embeddings: 256,
  rope_theta: 10000,
  rms_norm_eps: 1e-6,
  tie_word_embeddings: true,
  initializer_range: 0.3, // confident, input-dependent predictions (HF's 0.02 gives near-uniform logits)
};
