// The policy library: one import for everything in src/model, plus docs/architecture.md's `Policy` / `loadPolicy`
// entry that tools outside this repo use to check checkpoints (log-probs of a token sequence, re-save).
import * as tf from '@tensorflow/tfjs';
import { initBackend, type BackendInfo, type BackendName } from './backend';
import { readCheckpointDirFiles, saveCheckpointDir } from './checkpointDir';
import { loadPolicyFiles } from './modelFiles';
import type { Qwen2Config } from './config';
import type { Qwen2Model } from './qwen2';
import { tokenLogProbs } from './scoring';
import type { Tokenizer } from './tokenizer';

export * from './adamw';
export * from './backend';
export * from './checkpoint';
export * from './checkpointDir';
export * from './config';
export * from './generate';
export * from './modelFiles';
export * from './qwen2';
export * from './safetensors';
export * from './scoring';
export * from './tokenizer';

export interface Policy {
  // log p(ids[i] | ids[0..i-1]) for i = 1 .. ids.length-1 (natural log); no sampling, no side effects
  tokenLogProbs(ids: readonly number[]): Promise<number[]>;
  saveCheckpoint(dir: string): Promise<void>; // Node: config.json + model.safetensors + tokenizer.json
  dispose(): void;
}

/** What loadPolicy returns: the Policy contract plus the pieces it is made of, for callers that want them. */
export interface LoadedPolicy extends Policy {
  readonly model: Qwen2Model;
  readonly tokenizer: Tokenizer;
  readonly config: Qwen2Config;
  /** The tfjs backend the policy runs on. */
  readonly backend: BackendInfo;
}

/**
 * Node: loads a directory in Hugging Face Qwen2 format (config.json, model.safetensors, tokenizer.json; ours or a
 * Qwen2.5 one from the Hub) on the requested tfjs backend (default: the best available, webgpu > wasm > cpu).
 */
export async function loadPolicy(dir: string, opts: { backend?: BackendName } = {}): Promise<LoadedPolicy> {
  const backend = await initBackend(opts.backend ?? 'auto');
  const { model, tokenizer, generationConfig } = loadPolicyFiles(await readCheckpointDirFiles(dir), dir);
  // Keep a Hub checkpoint's generation settings when re-saving it.
  const extra: Record<string, Uint8Array> = generationConfig
    ? { 'generation_config.json': new TextEncoder().encode(JSON.stringify(generationConfig, null, 2) + '\n') }
    : {};
  let disposed = false;
  const alive = (what: string) => {
    if (disposed) throw new Error(`Policy.${what}: the policy has been disposed`);
  };

  return {
    model,
    tokenizer: tokenizer,
    config: model.config,
    backend,

    async tokenLogProbs(ids: readonly number[]): Promise<number[]> {
      alive('tokenLogProbs');
      if (!Array.isArray(ids) || ids.length === 0)
        throw new Error('Policy.tokenLogProbs: ids must be a non-empty array');
      const vocab = model.config.vocab_size;
      ids.forEach((id, i) => {
        if (!Number.isInteger(id) || id < 0 || id >= vocab) {
          throw new Error(`Policy.tokenLogProbs: ids[${i}] = ${id} is not a token id in [0, ${vocab})`);
        }
      });
      if (ids.length === 1) return [];
      const logProbs = tf.tidy(() => {
        const input = tf.tensor2d([...ids], [1, ids.length], 'int32');
        return tokenLogProbs(model, input).logProbs; // [1, T-1]; temperature 1: the model's own distribution
      });
      try {
        return Array.from(await logProbs.data());
      } finally {
        logProbs.dispose();
      }
    },

    async saveCheckpoint(dir: string): Promise<void> {
      alive('saveCheckpoint');
      await saveCheckpointDir(dir, model, tokenizer, extra);
    },

    dispose(): void {
      if (disposed) return;
      disposed = true;
      model.dispose();
    },
  };
}
