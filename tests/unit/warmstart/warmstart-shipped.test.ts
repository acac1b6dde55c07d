// The warm-start checkpoints shipped in public/warmstart/<preset>/: they load through the Policy entry point, have
// the preset's shape, stay small, and mostly answer in the <think>…</think><answer>…</answer> format.
import { statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadPolicy } from '../../../src/model/index';
import { WARMSTART_PRESETS, checkPolicy, warmStartRunConfig } from '../../../src/warmstart/warmstart';

const ROOT = path.resolve(__dirname, '../../..');

describe.each(WARMSTART_PRESETS)('shipped warm start %s', (preset) => {
  const dir = path.join(ROOT, 'public', 'warmstart', preset);

  it('loads with the preset shape, is small, and samples mostly well-formed responses with valid actions', async () => {
    const config = warmStartRunConfig(preset);
    const policy = await loadPolicy(dir, { backend: 'wasm' });
    try {
      const tiny = config.model.tiny;
      expect(policy.config).toMatchObject({
        hidden_size: tiny.hiddenSize,
        num_hidden_layers: tiny.numLayers,
        num_attention_heads: tiny.numHeads,
        num_key_value_heads: tiny.numKvHeads,
        intermediate_size: tiny.intermediateSize,
      });
      expect(policy.config.vocab_size).toBe(policy.tokenizer.vocabSize);
      expect(statSync(path.join(dir, 'model.safetensors')).size).toBeLessThan(4 * 1024 * 1024);

      // A small seeded sample at RAGEN's rollout temperature, on the training tags at validation seeds.
      const check = await checkPolicy(policy.model, policy.tokenizer, config, {
        temperature: 1,
        seed: 11,
        episodes: 8,
        split: 'train',
      });
      expect(check.turns).toBeGreaterThanOrEqual(8);
      expect(check.formatRate).toBeGreaterThanOrEqual(0.75);
      expect(check.validActionRate).toBeGreaterThanOrEqual(0.6);
      // Reasoning is not one memorised sentence: most sampled thoughts differ.
      const thinks = check.trajectories.flatMap((t) =>
        t.turns.filter((turn) => turn.formatOk).map((turn) => turn.think),
      );
      expect(thinks.every((t) => t.length > 0)).toBe(true);
      expect(new Set(thinks).size).toBeGreaterThanOrEqual(thinks.length / 2);
    } finally {
      policy.dispose();
    }
  });
});
