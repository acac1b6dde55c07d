// Batched rollout generation, for `ragen bench --only rollout`: generated tokens/s of one generate() call at several
// batch sizes (default 1, 16 and 128: one dialogue, one env group, the paper step of 8 groups x 16), as a rollout
// runs it: the rows of each env group of 16 share their prompt (prefilled once, GenerationSession), then every row
// decodes `newTokens` tokens sampled at temperature 1 with the KV cache. No stop token: every row produces exactly
// `newTokens`. tokens/s = batch x newTokens / seconds of the call, prefill included. One untimed warm-up call of
// each batch size first (shader compilation, wasm pages). A reduced layer count (`layers`) keeps a CPU run short.
import * as tf from '@tensorflow/tfjs';
import { initBackend, type BackendName } from '../model/backend';
import type { Qwen2Config } from '../model/config';
import { Qwen2Model } from '../model/qwen2';
import { initQwen2WeightsParallel } from '../model/parallelNormal';
import { seededUniform } from '../model/seeded';
import { benchGenerate, type GenEngine } from './generateEngine';

export const DEFAULT_ROLLOUT_BATCHES = [1, 16, 128] as const;
/** Rows per env group (RAGEN's group size): rows of a group share a prompt. */
const GROUP_SIZE = 16;

export interface BenchRolloutOptions {
  backend: BackendName;
  shape: { name: string; config: Qwen2Config };
  batches?: readonly number[];
  /** Decoder layers (default: the shape's own). */
  layers?: number;
  promptLen?: number; // default 256
  newTokens?: number; // default 32
  seed?: number;
  /** What generates (default 'turns'; generateEngine.ts). */
  engine?: GenEngine;
  note?: (line: string) => void;
}

/** "<shape> [<n> layers] generate batch <B> tokens/s" for each batch size. */
export async function benchRollout(o: BenchRolloutOptions): Promise<Record<string, number>> {
  const note = o.note ?? (() => {});
  const backend = await initBackend(o.backend);
  const layers = o.layers ?? o.shape.config.num_hidden_layers;
  const config = { ...o.shape.config, num_hidden_layers: layers };
  const promptLen = o.promptLen ?? 256,
    newTokens = o.newTokens ?? 32,
    seed = o.seed ?? 0;
  const label = `${o.shape.name}${layers !== o.shape.config.num_hidden_layers ? ` ${layers} layers` : ''}`;
  const model = new Qwen2Model(config, await initQwen2WeightsParallel(config, seed));
  const results: Record<string, number> = {};
  try {
    for (const batch of o.batches ?? DEFAULT_ROLLOUT_BATCHES) {
      const uniform = seededUniform(seed + batch);
      const groupPrompts = Array.from({ length: Math.ceil(batch / GROUP_SIZE) }, () =>
        Array.from({ length: promptLen }, () => 1 + Math.floor(uniform() * (config.vocab_size - 1))),
      );
      const prompts = Array.from({ length: batch }, (_, r) => groupPrompts[Math.floor(r / GROUP_SIZE)]);
      const call = async (maxNewTokens: number) => {
        const tokens = await benchGenerate(o.engine ?? 'turns', model, prompts, { maxNewTokens, seed });
        return tokens.reduce((n, t) => n + t.length, 0);
      };
      note(`${label} batch ${batch}: warm-up`);
      await call(2);
      const start = performance.now();
      const produced = await call(newTokens);
      const seconds = (performance.now() - start) / 1000;
      if (produced !== batch * newTokens)
        throw new Error(`benchRollout: ${produced} tokens generated, expected ${batch} x ${newTokens}`);
      results[`${label} generate batch ${batch} tokens/s`] = produced / seconds;
      note(
        `${label} batch ${batch} (${Math.ceil(batch / GROUP_SIZE)} shared prompt(s) of ${promptLen} tokens, ${newTokens} new per row, ${o.engine ?? 'turns'} engine): ` +
          `${seconds.toFixed(2)} s, ${(produced / seconds).toFixed(1)} tokens/s on ${backend.name}; ${tf.memory().numTensors} tensors after`,
      );
    }
  } finally {
    model.dispose();
  }
  return results;
}
