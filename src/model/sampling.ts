// Choosing the next token from logits, deterministically given a seed.
//
// The random numbers come from a seeded JavaScript generator (one uniform per row per step), and the device only
// does what is heavy: argmax (greedy), or for plain sampling one fused kernel (src/model/kernels `sample`: the
// token is the first whose cumulative probability reaches u, "inverse CDF"). Top-k / top-p need a sort, so they take the k best
// logits from the device (tf.topk) and finish on the CPU. Same seed + same backend => same tokens.
import * as tf from '@tensorflow/tfjs';
import { MIN_TEMPERATURE } from './config';
import { sample } from './kernels/index';

export interface SamplingOptions {
  temperature: number; // 0 = greedy (argmax); RAGEN rolls out at 1.0 and validates at 0.5
  topP?: number; // nucleus: keep the most likely tokens until their probability reaches topP (1 = off)
  topK?: number; // keep only the k most likely tokens (0, -1 or undefined = off, as vLLM's -1)
}

export function validateSamplingOptions(o: SamplingOptions): void {
  if (!Number.isFinite(o.temperature) || !(o.temperature === 0 || o.temperature >= MIN_TEMPERATURE)) {
    throw new Error(
      `sampling: temperature must be 0 (greedy) or a finite number >= ${MIN_TEMPERATURE}, got ${o.temperature}`,
    );
  }
  if (o.topP !== undefined && !(o.topP > 0 && o.topP <= 1))
    throw new Error(`sampling: topP must be in (0, 1], got ${o.topP}`);
  if (o.topK !== undefined && !(Number.isInteger(o.topK) && o.topK >= -1)) {
    throw new Error(`sampling: topK must be an integer >= -1 (0 or -1 = off), got ${o.topK}`);
  }
}

/**
 * The next token per row as an int32 tensor [B], computed on the device, when the options need no sort (greedy, or
 * plain sampling at any temperature); null for top-k / top-p, which finish on the CPU. Does not dispose logits.
 * Generation feeds this tensor straight into the next decode step, so the device need not be read every token.
 */
export function sampleOnDevice(logits: tf.Tensor2D, o: SamplingOptions, uniforms: number[]): tf.Tensor1D | null {
  const vocab = logits.shape[1];
  if (o.temperature === 0) return tf.argMax(logits, 1) as tf.Tensor1D; // int32 already
  const topK = o.topK !== undefined && o.topK > 0 ? Math.min(o.topK, vocab) : vocab;
  if (topK !== vocab || (o.topP ?? 1) < 1) return null;
  return tf.tidy(() => sample(logits, tf.tensor1d(uniforms), o.temperature)); // int32, as argMax's
}

/** Next token per row from logits [B, V], using uniforms[b] as row b's random number. Does not dispose logits. */
export async function sampleNextTokens(logits: tf.Tensor2D, o: SamplingOptions, uniforms: number[]): Promise<number[]> {
  const onDevice = sampleOnDevice(logits, o, uniforms);
  if (onDevice) {
    const ids = Array.from(await onDevice.data());
    onDevice.dispose();
    return ids;
  }
  const [rows, vocab] = logits.shape;
  const topK = o.topK !== undefined && o.topK > 0 ? Math.min(o.topK, vocab) : vocab;
  const topP = o.topP ?? 1;
  const { values, indices } = tf.topk(logits, topK, true);
  const [vals, idx] = await Promise.all([values.data(), indices.data()]);
  values.dispose();
  indices.dispose();
  const out: number[] = [];
  for (let r = 0; r < rows; r++) {
    // Probabilities of the k best tokens (sorted, best first), relative to the best one for stability.
    const probs: number[] = [];
    let sum = 0;
    for (let j = 0; j < topK; j++) {
      const p = Math.exp((vals[r * topK + j] - vals[r * topK]) / o.temperature);
      probs.push(p);
      sum += p;
    }
    // Nucleus: keep tokens while the mass before them is below topP (so at least the best one stays).
    let kept = 0,
      keptMass = 0;
    while (kept < topK && keptMass < topP * sum) keptMass += probs[kept++];
    let target = uniforms[r] * keptMass,
      j = 0;
    while (j < kept - 1 && target >= probs[j]) target -= probs[j++];
    out.push(idx[r * topK + j]);
  }
  return out;
}
