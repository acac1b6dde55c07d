// A policy (the actor: a causal language model) from a checkpoint's files. Every place that loads a policy goes
// through here: the Trainer (a warm start, a local model, the actor of a trainer checkpoint), the playground worker
// (a stored checkpoint to score), `ragen eval` and loadPolicy (a directory, read by checkpointDir.ts).
import { loadCheckpointFiles } from './checkpoint';
import { adapterFilesOf, loadPeftAdapterFiles } from './lora';
import { Qwen2Model } from './qwen2';
import type { Tokenizer } from './tokenizer';

export interface LoadedPolicyFiles {
  /** Owns the checkpoint's weight tensors; the caller disposes it. */
  model: Qwen2Model;
  tokenizer: Tokenizer;
  /** generation_config.json if the checkpoint had one (kept so a re-save preserves it). */
  generationConfig?: Record<string, unknown>;
}

/**
 * Loads the policy of `files`, with its LoRA adapters when the checkpoint has adapter/ (the policy as trained). Only
 * the top-level files and adapter/ count: a trainer checkpoint keeps its critic under `critic/`, which is not the policy. A critic checkpoint (value head) is refused with an Error. `source` names the
 * checkpoint (a directory) in error messages.
 */
export function loadPolicyFiles(files: Record<string, Uint8Array>, source?: string): LoadedPolicyFiles {
  const topLevel = Object.fromEntries(Object.entries(files).filter(([name]) => !name.includes('/')));
  let loaded;
  try {
    loaded = loadCheckpointFiles(topLevel);
  } catch (err) {
    throw source === undefined ? err : new Error(`${(err as Error).message} (in ${source})`);
  }
  if (loaded.valueHead) {
    Object.values(loaded.weights).forEach((t) => t.dispose());
    throw new Error(`${source ?? 'the checkpoint'} is a critic (value head) checkpoint, not a policy (a causal language model)`);
  }
  const model = new Qwen2Model(loaded.config, loaded.weights);
  try {
    attachAdapterFiles(model, files);
  } catch (err) {
    model.dispose();
    throw source === undefined ? err : new Error(`${(err as Error).message} (in ${source})`);
  }
  return { model, tokenizer: loaded.tokenizer, generationConfig: loaded.generationConfig };
}

/** Gives `model` the LoRA adapters of a checkpoint's adapter/ files (lora.ts), if it has any. */
export function attachAdapterFiles(model: Qwen2Model, files: Record<string, Uint8Array>): void {
  const adapter = adapterFilesOf(files);
  if (adapter) model.addAdapters(loadPeftAdapterFiles(model.config, adapter));
}
