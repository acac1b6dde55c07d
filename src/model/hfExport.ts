// A checkpoint's files as a plain Hugging Face model directory, for tools outside this project (RAGEN, vLLM,
// transformers): only the model files (a trainer checkpoint's optimizer, reference and trainer state are dropped),
// weights stored as float32 (lossless, the default) or bfloat16 (as Qwen2.5 ships; half the size), config.json's
// torch_dtype saying which. Checked before anything is written: a directory this returns loads here and in
// transformers.
import { CHECKPOINT_FILES, parseQwen2Config } from './checkpoint';
import { qwen2WeightShapes } from './qwen2';
import { indexSafetensors, serializeSafetensors } from './safetensors';

export type ExportDtype = 'f32' | 'bf16';
export const EXPORT_DTYPES: readonly ExportDtype[] = ['f32', 'bf16'];

const TORCH_DTYPE: Record<ExportDtype, string> = { f32: 'float32', bf16: 'bfloat16' };

/**
 * The model files of a checkpoint (config.json, model.safetensors, tokenizer files, generation_config.json) with the
 * weights as `dtype`. Throws an Error naming the problem (a missing file, a tensor the config does not imply).
 */
export function hfModelFiles(files: Record<string, Uint8Array>, dtype: ExportDtype): Record<string, Uint8Array> {
  if (!EXPORT_DTYPES.includes(dtype)) throw new Error(`unknown export dtype '${String(dtype)}' (f32 or bf16)`);
  for (const name of ['config.json', 'model.safetensors', 'tokenizer.json']) {
    if (!files[name]) throw new Error(`the checkpoint has no ${name}`);
  }
  const rawConfig = JSON.parse(new TextDecoder().decode(files['config.json'])) as Record<string, unknown>;
  const config = parseQwen2Config(rawConfig);
  const valueHead = ((config.architectures ?? []) as string[]).includes('Qwen2ForTokenClassification');
  const { entries, metadata } = indexSafetensors(files['model.safetensors']);
  const expected = qwen2WeightShapes(config, { valueHead });
  for (const [name, shape] of Object.entries(expected)) {
    const e = entries[name];
    if (!e) throw new Error(`model.safetensors has no tensor '${name}'`);
    if (e.shape.join(',') !== shape.join(',')) throw new Error(`tensor '${name}' has shape [${e.shape}], config.json implies [${shape}]`);
  }

  const out: Record<string, Uint8Array> = {};
  for (const name of CHECKPOINT_FILES) if (files[name]) out[name] = files[name];
  const alreadyThere = Object.values(entries).every((e) => e.dtype === (dtype === 'f32' ? 'F32' : 'BF16'));
  if (!alreadyThere) {
    const tensors: Record<string, { shape: number[]; data: Float32Array }> = {};
    for (const name of Object.keys(expected)) tensors[name] = { shape: entries[name].shape, data: entries[name].read() };
    out['model.safetensors'] = serializeSafetensors(tensors, { ...metadata, format: 'pt' }, dtype === 'f32' ? 'F32' : 'BF16');
  }
  out['config.json'] = new TextEncoder().encode(JSON.stringify({ ...rawConfig, torch_dtype: TORCH_DTYPE[dtype] }, null, 2) + '\n');
  return out;
}
