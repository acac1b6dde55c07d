// The memory bench with LoRA (`ragen bench --only memory --lora`): rows say which adapters they measured, and an
// update of adapters only holds less than full fine-tuning (no gradients or moments for the frozen base).
import { describe, expect, it } from 'vitest';
import { benchMemory } from '../../../src/bench/memory';
import type { Qwen2Config } from '../../../src/model/config';
import { LORA_TARGET_MODULES } from '../../../src/model/lora';

const config: Qwen2Config = {
  model_type: 'qwen2',
  vocab_size: 512,
  hidden_size: 64,
  intermediate_size: 256,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  max_position_embeddings: 256,
  rope_theta: 10000,
  rms_norm_eps: 1e-6,
  tie_word_embeddings: true,
};

describe('bench --only memory with LoRA', () => {
  it('labels the rows and measures less for the update and the optimizer than full fine-tuning', async () => {
    const common = {
      backend: 'wasm' as const,
      shape: { name: 'small', config },
      batch: 1,
      seqLen: 48,
      phases: ['actor update', 'optimizer'] as const,
    };
    const full = await benchMemory({ ...common });
    const lora = await benchMemory({ ...common, lora: { rank: 4, alpha: 8, targetModules: [...LORA_TARGET_MODULES] } });
    for (const r of lora) expect(r.lora).toEqual({ rank: 4, alpha: 8, targetModules: [...LORA_TARGET_MODULES] });
    for (const r of full) expect(r.lora).toBeUndefined();
    for (const phase of ['actor update', 'optimizer']) {
      const peak = (rows: typeof full) => rows.find((r) => r.phase === phase)!.peakBytes;
      expect(peak(lora), phase).toBeLessThan(peak(full));
    }
  });
});
