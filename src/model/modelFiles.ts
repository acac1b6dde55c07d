// A model and its checkpoint files, both ways: the one place the files of a model are written and read. A model's
// files are Hugging Face Qwen2's (config.json, model.safetensors or its shards, tokenizer files) plus PEFT's adapter/
// when it carries LoRA adapters; a set of named tensors (a trainer checkpoint's reference weights and AdamW moments)
// is one safetensors file, or shards past 2 GiB. Every place that saves or loads a model goes through here: the
// Trainer's checkpoints (src/starpo/trainerCheckpoint.ts), the playground worker, `ragen eval` and loadPolicy (a
// directory, read by checkpointDir.ts).
import * as tf from '@tensorflow/tfjs';
import { assertFinite, checkpointFiles, loadCheckpointFiles, type CheckpointableModel } from './checkpoint';
import { adapterFilesOf, loadPeftAdapterFiles } from './lora';
import { Qwen2Model } from './qwen2';
import { readShardedSafetensors, shardedSafetensorsFiles, shardedSafetensorsNames } from './safetensorsShards';
import type { Tokenizer } from './tokenizer';

export interface LoadedModelFiles {
  /** Owns the checkpoint's weight tensors (and adapters); the caller disposes it. */
  model: Qwen2Model;
  tokenizer: Tokenizer;
  /** generation_config.json if the checkpoint had one (kept so a re-save preserves it). */
  generationConfig?: Record<string, unknown>;
}

/** A policy's or a critic's files: the Hugging Face model, and its adapters under adapter/ when it has LoRA. */
export async function writeModelFiles(
  model: CheckpointableModel,
  tokenizer: Tokenizer,
  extra: Record<string, Uint8Array> = {},
): Promise<Record<string, Uint8Array>> {
  return checkpointFiles(model, tokenizer, extra);
}

/**
 * The model of `files` (only the top-level files and adapter/ count: a trainer checkpoint keeps its critic under
 * `critic/`), with its LoRA adapters when it has adapter/ (the model as trained). `valueHead` says which kind is
 * wanted: a policy (a causal language model) or a critic (Qwen2ForTokenClassification); the other kind is refused with
 * an Error. `source` names the checkpoint in error messages.
 */
export function readModelFiles(
  files: Record<string, Uint8Array>,
  opts: { valueHead: boolean; source?: string },
): LoadedModelFiles {
  const where = (err: unknown) =>
    opts.source === undefined ? err : new Error(`${(err as Error).message} (in ${opts.source})`);
  const topLevel = Object.fromEntries(Object.entries(files).filter(([name]) => !name.includes('/')));
  let loaded;
  try {
    loaded = loadCheckpointFiles(topLevel);
  } catch (err) {
    throw where(err);
  }
  if (loaded.valueHead !== opts.valueHead) {
    Object.values(loaded.weights).forEach((t) => t.dispose());
    const shown = opts.source ?? 'the checkpoint';
    throw new Error(
      opts.valueHead
        ? `${shown} is a policy (a causal language model), not a critic (value head)`
        : `${shown} is a critic (value head) checkpoint, not a policy (a causal language model)`,
    );
  }
  const model = new Qwen2Model(loaded.config, loaded.weights, { valueHead: opts.valueHead });
  try {
    const adapter = adapterFilesOf(files);
    if (adapter) model.addAdapters(loadPeftAdapterFiles(model.config, adapter));
  } catch (err) {
    model.dispose();
    throw where(err);
  }
  return { model, tokenizer: loaded.tokenizer, generationConfig: loaded.generationConfig };
}

/** A policy's files as readModelFiles reads them (a critic is refused). */
export function loadPolicyFiles(files: Record<string, Uint8Array>, source?: string): LoadedModelFiles {
  return readModelFiles(files, { valueHead: false, source });
}

/** True when `files` hold a model (model.safetensors, or the shards of one). */
export function hasModelFiles(files: Record<string, Uint8Array>): boolean {
  return shardedSafetensorsNames(files, 'model').length > 0;
}

/** Named tensors as `<base>.safetensors` (f32), or its shards and index past 2 GiB. */
export async function writeTensorFiles(
  tensors: Record<string, tf.Tensor>,
  base: string,
): Promise<Record<string, Uint8Array>> {
  const out: Record<string, { shape: number[]; data: Float32Array }> = {};
  for (const [name, t] of Object.entries(tensors))
    out[name] = { shape: t.shape.slice(), data: (await t.data()) as Float32Array };
  return shardedSafetensorsFiles(out, base);
}

/** True when `files` hold the tensor set `base` (its single file, or its index and shards). */
export function hasTensorFiles(files: Record<string, Uint8Array>, base: string): boolean {
  return shardedSafetensorsNames(files, base).length > 0;
}

/** The tensors of `<base>.safetensors` (or its shards), each checked finite; the caller disposes them. */
export function readTensorFiles(
  files: Record<string, Uint8Array>,
  base: string,
  where: string,
): Record<string, tf.Tensor> {
  const entries = readShardedSafetensors(files, base, where);
  const file = `${base}.safetensors`;
  const out: Record<string, tf.Tensor> = {};
  try {
    for (const [name, e] of Object.entries(entries)) {
      const data = e.read();
      assertFinite(data, name, file);
      out[name] = tf.tensor(data, e.shape, 'float32');
    }
  } catch (err) {
    tf.dispose(Object.values(out));
    throw err;
  }
  return out;
}
