// Peak tensor memory of a LoRA actor update, for the memory bench: does Qwen2.5-3B (RAGEN-2's default model) fit one
// 80 GB GPU with RAGEN's LoRA (base-lora.yaml: rank 64, alpha 64, all linear layers)?
//
// One measurement = one model of the given shape with `layers` decoder layers (full widths and vocabulary), LoRA
// adapters, and AdamW over the adapters; then, each under tf.profile (measurePeakMemory):
//   'reference'     the reference log-probs: the same model with its adapters off (no gradient tape);
//   'actor update'  RAGEN's actor loss (policy gradient - 0.001 entropy) on 1 x T tokens, its gradients (adapters
//                   only: the base is frozen), grad-norm clipping and the AdamW step.
// Gradient checkpointing per layer and the chunked LM head are on, as a full-size run would use them.
//
// A 36-layer 3B model does not run on a 2-core CPU in reasonable time (nor in wasm's 4 GB heap), so the bench
// measures a few reduced layer counts and extrapolates linearly in the layer count (every decoder layer holds the
// same weights, adapters and moments; the embedding, head and activations of the LM head do not grow with it).
// Measured rows and the extrapolation are reported side by side, each labelled.
import * as tf from '@tensorflow/tfjs';
import { AdamW } from '../model/adamw';
import type { Qwen2Config } from '../model/config';
import { LORA_TARGET_MODULES, LoraAdapters, type LoraSettings } from '../model/lora';
import { initQwen2Weights, Qwen2Model } from '../model/qwen2';
import { namedVariableGrads, tokenLogProbs } from '../model/scoring';
import { seededUniform } from '../model/seeded';
import { measurePeakMemory } from './bench-model';

/** Qwen2.5-3B-Instruct's config.json (the sizes that decide memory). */
export const QWEN3B_CONFIG: Qwen2Config = {
  model_type: 'qwen2', vocab_size: 151936, hidden_size: 2048, intermediate_size: 11008, num_hidden_layers: 36,
  num_attention_heads: 16, num_key_value_heads: 2, max_position_embeddings: 32768, rope_theta: 1000000,
  rms_norm_eps: 1e-6, tie_word_embeddings: true,
};

/** RAGEN's config/base-lora.yaml. */
export const RAGEN_LORA: LoraSettings = { rank: 64, alpha: 64, targetModules: [...LORA_TARGET_MODULES] };

export interface LoraMemoryRow {
  shape: string;
  backend: string;
  /** Decoder layers of the model measured (or, for an extrapolated row, of the full model). */
  layers: number;
  tokens: string;
  phase: 'reference' | 'actor update';
  peakBytes: number;
  /** Bytes alive before the phase: base weights, adapters, AdamW moments. */
  residentBytes: number;
  /** 'measured', or 'extrapolated' (linear in the layer count from the measured rows). */
  how: 'measured' | 'extrapolated';
}

/** Measures both phases at `layers` decoder layers. Frees everything it made. */
export async function measureLoraMemory(opts: {
  shape: string; config: Qwen2Config; layers: number; batch: number; tokens: number; lora: LoraSettings; seed: number;
}): Promise<LoraMemoryRow[]> {
  const config = { ...opts.config, num_hidden_layers: opts.layers };
  const model = new Qwen2Model(config, initQwen2Weights(config, opts.seed));
  model.addAdapters(LoraAdapters.init(config, opts.lora, opts.seed + 1));
  model.gradientCheckpointing = true;
  const optimizer = new AdamW(model.trainableVariables, { lr: 1e-5 });
  const uniform = seededUniform(opts.seed + 2);
  const rows = Array.from({ length: opts.batch }, () => Array.from({ length: opts.tokens }, () => Math.floor(uniform() * config.vocab_size)));
  const ids = tf.tensor2d(rows, undefined, 'int32');
  const mask = tf.onesLike(ids) as tf.Tensor2D;
  const advantages = tf.randomNormal([opts.batch, opts.tokens - 1], 0, 1, 'float32', opts.seed);
  const base = { shape: opts.shape, backend: tf.getBackend(), layers: opts.layers, tokens: `${opts.batch}x${opts.tokens}`, how: 'measured' as const };
  try {
    const out: LoraMemoryRow[] = [];
    const resident = () => tf.memory().numBytes - (ids.size + mask.size + advantages.size) * 4;
    let peak = await measurePeakMemory(async () => {
      const { logProbs, entropy } = tokenLogProbs(model.baseModel(), ids, mask);
      await logProbs.data();
      tf.dispose([logProbs, entropy]);
    });
    out.push({ ...base, phase: 'reference', peakBytes: peak.peakBytes, residentBytes: resident() });
    peak = await measurePeakMemory(async () => {
      const { value, grads } = namedVariableGrads(model.trainableVariables, () => {
        const { logProbs, entropy } = tokenLogProbs(model, ids, mask);
        return tf.mean(tf.mul(logProbs, advantages)).neg().sub(tf.mean(entropy).mul(0.001)) as tf.Scalar;
      });
      await value.data();
      await optimizer.stepClipped(grads, 1.0);
      tf.dispose([value, ...Object.values(grads)]);
    });
    out.push({ ...base, phase: 'actor update', peakBytes: peak.peakBytes, residentBytes: resident() });
    return out;
  } finally {
    tf.dispose([ids, mask, advantages]);
    optimizer.dispose();
    model.dispose();
  }
}

/**
 * Rows for `fullLayers` layers from measured rows at two or more layer counts: a least-squares line in the layer
 * count per phase (peak and resident bytes alike).
 */
export function extrapolateLayers(measured: readonly LoraMemoryRow[], fullLayers: number): LoraMemoryRow[] {
  const out: LoraMemoryRow[] = [];
  for (const phase of ['reference', 'actor update'] as const) {
    const rows = measured.filter((r) => r.phase === phase);
    if (new Set(rows.map((r) => r.layers)).size < 2) continue;
    const fit = (y: (r: LoraMemoryRow) => number) => {
      const n = rows.length;
      const mx = rows.reduce((s, r) => s + r.layers, 0) / n, my = rows.reduce((s, r) => s + y(r), 0) / n;
      const slope = rows.reduce((s, r) => s + (r.layers - mx) * (y(r) - my), 0) / rows.reduce((s, r) => s + (r.layers - mx) ** 2, 0);
      return Math.round(my + slope * (fullLayers - mx));
    };
    out.push({ ...rows[0], layers: fullLayers, phase, peakBytes: fit((r) => r.peakBytes), residentBytes: fit((r) => r.residentBytes), how: 'extrapolated' });
  }
  return out;
}
