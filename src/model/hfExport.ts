// A checkpoint's files as a plain Hugging Face model directory, for tools outside this project (RAGEN, vLLM,
// transformers): only the model files (a trainer checkpoint's optimizer, reference and trainer state are dropped),
// weights stored as float32 (lossless, the default) or bfloat16 (as Qwen2.5 ships; half the size), config.json's
// torch_dtype saying which. Checked before anything is written: a directory this returns loads here and in
// transformers. A LoRA checkpoint (adapter/, lora.ts) is exported as the policy it trained: the adapters folded into
// the weights (W + alpha/r B A), since the tools outside load one plain model.
import { CHECKPOINT_FILES, parseQwen2Config } from './checkpoint';
import type { Qwen2Config } from './config';
import { qwen2WeightShapes } from './qwen2';
import { ADAPTER_CONFIG_FILE, ADAPTER_DIR, adapterFilesOf, readPeftAdapterFiles } from './lora';
import { indexSafetensors } from './safetensors';
import { readShardedSafetensors, shardedSafetensorsFiles, shardedSafetensorsNames } from './safetensorsShards';

export type ExportDtype = 'f32' | 'bf16';
export const EXPORT_DTYPES: readonly ExportDtype[] = ['f32', 'bf16'];

const TORCH_DTYPE: Record<ExportDtype, string> = { f32: 'float32', bf16: 'bfloat16' };

/**
 * The model files of a checkpoint (config.json, model.safetensors, tokenizer files, generation_config.json) with the
 * weights as `dtype`. Throws an Error naming the problem (a missing file, a tensor the config does not imply).
 */
export function hfModelFiles(files: Record<string, Uint8Array>, dtype: ExportDtype): Record<string, Uint8Array> {
  if (!EXPORT_DTYPES.includes(dtype)) throw new Error(`unknown export dtype '${String(dtype)}' (f32 or bf16)`);
  for (const name of ['config.json', 'tokenizer.json']) {
    if (!files[name]) throw new Error(`the checkpoint has no ${name}`);
  }
  const weightFiles = shardedSafetensorsNames(files, 'model'); // model.safetensors, or its index and shards
  if (weightFiles.length === 0) throw new Error('the checkpoint has no model.safetensors');
  const rawConfig = JSON.parse(new TextDecoder().decode(files['config.json'])) as Record<string, unknown>;
  const config = parseQwen2Config(rawConfig);
  const valueHead = ((config.architectures ?? []) as string[]).includes('Qwen2ForTokenClassification');
  const entries = readShardedSafetensors(files, 'model', 'export');
  const metadata = files['model.safetensors'] ? indexSafetensors(files['model.safetensors']).metadata : {};
  const expected = qwen2WeightShapes(config, { valueHead });
  for (const [name, shape] of Object.entries(expected)) {
    const e = entries[name];
    if (!e) throw new Error(`model.safetensors has no tensor '${name}'`);
    if (e.shape.join(',') !== shape.join(','))
      throw new Error(`tensor '${name}' has shape [${e.shape}], config.json implies [${shape}]`);
  }

  const out: Record<string, Uint8Array> = {};
  for (const name of [...CHECKPOINT_FILES, ...weightFiles]) if (files[name]) out[name] = files[name];
  const adapter = files[ADAPTER_DIR + ADAPTER_CONFIG_FILE] ? files : null;
  const alreadyThere = Object.values(entries).every((e) => e.dtype === (dtype === 'f32' ? 'F32' : 'BF16'));
  if (!alreadyThere || adapter) {
    const tensors: Record<string, { shape: number[]; data: Float32Array }> = {};
    for (const name of Object.keys(expected))
      tensors[name] = { shape: entries[name].shape, data: entries[name].read() };
    if (adapter) mergeAdapterFiles(tensors, config, adapter);
    for (const name of weightFiles) delete out[name];
    Object.assign(
      out,
      shardedSafetensorsFiles(tensors, 'model', {
        metadata: { ...metadata, format: 'pt' },
        dtype: dtype === 'f32' ? 'F32' : 'BF16',
      }),
    );
  }
  out['config.json'] = new TextEncoder().encode(
    JSON.stringify({ ...rawConfig, torch_dtype: TORCH_DTYPE[dtype] }, null, 2) + '\n',
  );
  return out;
}

/**
 * Folds a checkpoint's LoRA adapters (adapter/, PEFT's format) into its weights, in place: W += (alpha / r) B A for
 * every adapted module. The adapters are read and checked as eval and resume check them (readPeftAdapterFiles: r
 * and alpha from adapter_config.json, every weight of the shape they give), so a checkpoint either loads and exports
 * the same policy or is refused by all three. Plain loops over Float32Arrays (no tfjs here); Qwen2.5-0.5B at rank 64
 * is ~23 G multiply-adds.
 */
function mergeAdapterFiles(
  tensors: Record<string, { shape: number[]; data: Float32Array }>,
  config: Qwen2Config,
  files: Record<string, Uint8Array>,
): void {
  const { settings, entries } = readPeftAdapterFiles(config, adapterFilesOf(files) ?? {});
  const scaling = settings.alpha / settings.rank;
  for (const [key, e] of Object.entries(entries)) {
    if (!key.endsWith('.lora_A.weight')) continue;
    const module = key.replace(/\.lora_A\.weight$/, '');
    const w = tensors[`${module}.weight`];
    const bEntry = entries[key.replace('.lora_A.', '.lora_B.')];
    const a = e.read(),
      b = bEntry.read();
    const [out, inp] = w.shape,
      r = settings.rank;
    for (let o = 0; o < out; o++) {
      const row = o * inp;
      for (let k = 0; k < r; k++) {
        const c = scaling * b[o * r + k];
        if (c === 0) continue;
        const ak = k * inp;
        for (let i = 0; i < inp; i++) w.data[row + i] += c * a[ak + i];
      }
    }
  }
}
