// `ragen init-model` (Node only): a randomly initialised Hugging Face Qwen2 directory of Qwen2.5's exact shape, laid
// out as Qwen ships it, so the full-scale path (`ragen train --preset sokoban-qwen --set model=DIR`, the benches,
// tools/device/full-run.sh) runs without downloading a checkpoint. Only the weights are random: config.json,
// tokenizer.json, tokenizer_config.json (with the chat template) and generation_config.json are Qwen2.5-Instruct's.
//
// Weights: as Hugging Face initialises Qwen2 (normal(0, 0.02) for matrices and the embedding, 1 for RMSNorm scales,
// 0 for biases) from the project's seeded generator, stored as bfloat16 (Qwen's torch_dtype). They are streamed
// tensor by tensor to disk, so Qwen2.5-3B (6 GB) never sits in memory; a file grows to at most SHARD_BYTES, then the
// next shard starts (model-0000k-of-0000n.safetensors + model.safetensors.index.json, as Hugging Face shards).
// Qwen2.5-0.5B fits one model.safetensors, as Qwen ships it.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { assertCheckpointTarget } from './checkpointDir';
import { parseQwen2Config } from './checkpoint';
import { qwen2WeightShapes } from './qwen2';
import { qwenShapeConfig, type QwenShapeName } from './qwenShapes';
import { qwen25TokenizerFiles } from './qwenTokenizer';
import { bf16LittleEndianBytes, safetensorsHeader } from './safetensors';
import { NormalFillPool } from './parallelNormal';
import { planShards, shardFileName } from './safetensorsShards';


export interface InitModelOptions {
  shape: QwenShapeName;
  /** Decoder layers (default: the model's own, 24 / 36); every width and the vocabulary stay Qwen's. */
  layers?: number;
  /** Seed of the random weights (default 0): the same seed writes the same files, byte for byte. */
  seed?: number;
  /** Receives a line now and then (what is being written). */
  progress?: (line: string) => void;
}

export interface InitModelResult {
  dir: string;
  parameters: number;
  /** Weight files written (one model.safetensors, or the shards). */
  weightFiles: string[];
  bytes: number;
}

/** Qwen2.5-Instruct's generation_config.json (what transformers' generate() would use; RAGEN passes its own). */
const GENERATION_CONFIG = {
  bos_token_id: 151643,
  pad_token_id: 151643,
  do_sample: true,
  eos_token_id: [151645, 151643],
  repetition_penalty: 1.1,
  temperature: 0.7,
  top_p: 0.8,
  top_k: 20,
};

/**
 * Writes the directory (atomically: a sibling temp directory renamed into place). Refuses an `dir` that is a file
 * or a non-empty directory without config.json; replaces a previous model directory.
 */
export async function writeInitModel(dir: string, opts: InitModelOptions): Promise<InitModelResult> {
  const target = path.resolve(dir);
  assertCheckpointTarget(target);
  const rawConfig = qwenShapeConfig(opts.shape, opts.layers);
  const config = parseQwen2Config(rawConfig);   // the same checks as loading it
  const shapes = qwen2WeightShapes(config);
  const { tokenizer, tokenizerConfig } = qwen25TokenizerFiles();
  const progress = opts.progress ?? (() => {});

  const tmp = `${target}.tmp-${process.pid}-${Date.now()}`;
  fs.mkdirSync(tmp, { recursive: true });
  const pool = new NormalFillPool();
  try {
    const json = (name: string, value: unknown) => fs.writeFileSync(path.join(tmp, name), JSON.stringify(value, null, 2) + '\n');
    json('config.json', rawConfig);
    json('generation_config.json', GENERATION_CONFIG);
    json('tokenizer_config.json', tokenizerConfig);
    fs.writeFileSync(path.join(tmp, 'tokenizer.json'), JSON.stringify(tokenizer));

    const shards = planShards(shapes, 2);   // bf16
    const seed = opts.seed ?? 0;
    let uniformsUsed = 0;   // of seededUniform(seed)'s stream: two per pair of samples, each tensor starting a pair
    const std = config.initializer_range as number;
    const names = shards.length === 1 ? ['model.safetensors']
      : shards.map((_, i) => shardFileName('model', i, shards.length));
    const weightMap: Record<string, string> = {};
    let bytes = 0;
    let parameters = 0;
    for (const [i, shard] of shards.entries()) {
      const header = safetensorsHeader(shard, 'BF16', { format: 'pt' });
      const fd = fs.openSync(path.join(tmp, names[i]), 'w');
      try {
        fs.writeSync(fd, header.bytes);
        for (const name of header.order) {
          const size = shard[name].reduce((a, b) => a * b, 1);
          let data: Float32Array;
          if (name.endsWith('norm.weight') || name.endsWith('.bias')) {
            data = new Float32Array(size);
            if (name.endsWith('norm.weight')) data.fill(1);
          } else {
            data = await pool.draw(size, seed, uniformsUsed, std, true);   // both Box-Muller halves, on every core
            uniformsUsed += 2 * Math.ceil(size / 2);
          }
          fs.writeSync(fd, bf16LittleEndianBytes(data));
          weightMap[name] = names[i];
          parameters += size;
        }
        fs.fsyncSync(fd);
      } finally {
        fs.closeSync(fd);
      }
      bytes += header.bytes.length + header.dataBytes;
      progress(`${names[i]}: ${Object.keys(shard).length} tensors, ${(header.dataBytes / 1024 ** 2).toFixed(0)} MiB`);
    }
    if (shards.length > 1) json('model.safetensors.index.json', { metadata: { total_size: parameters * 2 }, weight_map: sortKeys(weightMap) });

    if (fs.existsSync(target)) fs.rmSync(target, { recursive: true, force: true });
    fs.renameSync(tmp, target);
    return { dir: target, parameters, weightFiles: names, bytes };
  } catch (err) {
    fs.rmSync(tmp, { recursive: true, force: true });
    throw err;
  } finally {
    await pool.close();
  }
}

function sortKeys(o: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(o).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}
