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
//
// Where it writes: only into a missing or empty directory, or (with `replace`) over a directory that init-model
// itself wrote, which it tells by the INIT_MODEL_MARKER file it leaves there and by holding nothing else but the
// files it writes. A run folder, a training checkpoint or a folder of the user's own is never replaced.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseQwen2Config } from './checkpoint';
import { qwen2WeightShapes } from './qwen2';
import { qwenShapeConfig, type QwenShapeName } from './qwenShapes';
import { qwen25TokenizerFiles } from './qwenTokenizer';
import { bf16LittleEndianBytes, safetensorsHeader } from './safetensors';
import { NormalFillPool } from './parallelNormal';
import { planShards, shardFileName } from './safetensorsShards';

/** Left in every directory init-model writes ({ shape, layers, seed }): the sign that `replace` may replace it. */
export const INIT_MODEL_MARKER = '.ragen-init-model.json';

export interface InitModelOptions {
  shape: QwenShapeName;
  /** Replace `dir` when it is a directory that init-model wrote (never anything else). */
  replace?: boolean;
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

/** What init-model writes into a directory: the JSON files, the weights (one file or shards and their index). */
function isInitModelFile(name: string): boolean {
  return (
    [
      'config.json',
      'generation_config.json',
      'tokenizer_config.json',
      'tokenizer.json',
      'model.safetensors',
      'model.safetensors.index.json',
      INIT_MODEL_MARKER,
    ].includes(name) || /^model-\d{5}-of-\d{5}\.safetensors$/.test(name)
  );
}

/** True when `dir` is a directory that init-model wrote: its marker is there and nothing but its own files. */
export function isInitModelDir(dir: string): boolean {
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return false;
  }
  return (
    names.includes(INIT_MODEL_MARKER) &&
    names.every(isInitModelFile) &&
    names.every((name) => fs.lstatSync(path.join(dir, name)).isFile())
  );
}

/**
 * Throws an Error naming `dir` unless init-model may write there: it is missing or an empty directory, or (with
 * `replace`) a directory init-model wrote. Synchronous and cheap: the CLI calls it before any work.
 */
export function assertInitModelTarget(dir: string, replace: boolean, shown = dir): void {
  let stat: fs.Stats;
  try {
    stat = fs.lstatSync(dir);
  } catch {
    return; // missing: it will be created
  }
  if (!stat.isDirectory()) throw new Error(`${shown} exists and is not a directory (nothing was written)`);
  const names = fs.readdirSync(dir);
  if (names.length === 0) return;
  if (isInitModelDir(dir)) {
    if (replace) return;
    throw new Error(
      `${shown} already holds a model written by init-model: pass --force to replace it, or choose another path (nothing was written)`,
    );
  }
  const listed = names.slice(0, 3).join(', ') + (names.length > 3 ? `, ... (${names.length} entries)` : '');
  throw new Error(
    `${shown} is not empty (${listed}) and was not written by init-model: init-model writes only into a new ` +
      `or empty directory, --force or not (nothing was written)`,
  );
}

/**
 * Writes the directory (atomically: a sibling temp directory renamed into place). Refuses a `dir` that is a file
 * or a non-empty directory (assertInitModelTarget); with `replace`, replaces a directory init-model wrote.
 */
export async function writeInitModel(dir: string, opts: InitModelOptions): Promise<InitModelResult> {
  const target = path.resolve(dir);
  assertInitModelTarget(target, opts.replace ?? false);
  const rawConfig = qwenShapeConfig(opts.shape, opts.layers);
  const config = parseQwen2Config(rawConfig); // the same checks as loading it
  const shapes = qwen2WeightShapes(config);
  const { tokenizer, tokenizerConfig } = qwen25TokenizerFiles();
  const progress = opts.progress ?? (() => {});

  const tmp = `${target}.tmp-${process.pid}-${Date.now()}`;
  fs.mkdirSync(path.dirname(target), { recursive: true });
  fs.mkdirSync(tmp);
  const pool = new NormalFillPool();
  try {
    const json = (name: string, value: unknown) =>
      fs.writeFileSync(path.join(tmp, name), JSON.stringify(value, null, 2) + '\n');
    json('config.json', rawConfig);
    json('generation_config.json', GENERATION_CONFIG);
    json('tokenizer_config.json', tokenizerConfig);
    json(INIT_MODEL_MARKER, {
      writtenBy: 'ragen init-model',
      shape: opts.shape,
      layers: config.num_hidden_layers,
      seed: opts.seed ?? 0,
    });
    fs.writeFileSync(path.join(tmp, 'tokenizer.json'), JSON.stringify(tokenizer));

    const shards = planShards(shapes, 2); // bf16
    const seed = opts.seed ?? 0;
    let uniformsUsed = 0; // of seededUniform(seed)'s stream: two per pair of samples, each tensor starting a pair
    const std = config.initializer_range as number;
    const names =
      shards.length === 1 ? ['model.safetensors'] : shards.map((_, i) => shardFileName('model', i, shards.length));
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
            data = await pool.draw(size, seed, uniformsUsed, std, true); // both Box-Muller halves, on every core
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
    if (shards.length > 1)
      json('model.safetensors.index.json', {
        metadata: { total_size: parameters * 2 },
        weight_map: sortKeys(weightMap),
      });

    // Checked again at the end: the directory may have changed during the minutes the weights took.
    assertInitModelTarget(target, opts.replace ?? false);
    // The replaced directory is moved aside, not removed, until the new one is in place.
    const aside = fs.existsSync(target) ? `${target}.old-${process.pid}-${Date.now()}` : null;
    if (aside) fs.renameSync(target, aside);
    fs.renameSync(tmp, target);
    if (aside) fs.rmSync(aside, { recursive: true, force: true });
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
