// Safetensors files too large for one file, cut into shards the way Hugging Face shards a model:
// <base>-00001-of-0000n.safetensors ... plus <base>.safetensors.index.json ({ metadata: { total_size },
// weight_map: { tensor: shard } }). A set that fits stays one <base>.safetensors, as before.
//
// Why shard at all: one JavaScript typed array holds at most 4 GiB (Node 20), and Node's fs.readFile reads at most
// 2 GiB, so a single 7.9 GB optimizer.safetensors (AdamW's moments of a Qwen2.5-0.5B actor and critic) can be neither
// built nor read back. Shards of at most SHARD_BYTES keep every file under both limits. Browser-safe (no Node module).
import {
  bytesPerValueOf,
  indexSafetensors,
  serializeSafetensors,
  type SafetensorsEntry,
  type SafetensorsInput,
  type SafetensorsWriteDtype,
} from './safetensors';

/** Largest shard's data. Qwen's own shards reach 4 GB; Node's fs.readFile (our loader) reads at most 2 GiB per file. */
export const SHARD_BYTES = 2 * 1024 ** 3 - 64 * 1024 ** 2;

/** Hugging Face's shard file name: model-00001-of-00004.safetensors. */
export function shardFileName(base: string, index: number, count: number): string {
  return `${base}-${String(index + 1).padStart(5, '0')}-of-${String(count).padStart(5, '0')}.safetensors`;
}

/** Tensors in name order, cut into shards of at most `maxBytes` of data (a tensor larger than that gets its own). */
export function planShards<T extends readonly number[]>(
  shapes: Record<string, T>,
  bytesPerValue: number | ((name: string) => number),
  maxBytes: number = SHARD_BYTES,
): Record<string, T>[] {
  const shards: Record<string, T>[] = [{}];
  let used = 0;
  for (const name of Object.keys(shapes).sort()) {
    const size =
      shapes[name].reduce((a, b) => a * b, 1) *
      (typeof bytesPerValue === 'number' ? bytesPerValue : bytesPerValue(name));
    if (used > 0 && used + size > maxBytes) {
      shards.push({});
      used = 0;
    }
    shards[shards.length - 1][name] = shapes[name];
    used += size;
  }
  return shards;
}

/**
 * The files of `tensors` under `base` (e.g. 'optimizer'): { 'optimizer.safetensors' } when the data fits in one
 * shard, else the shards and 'optimizer.safetensors.index.json'. Every shard carries `metadata`.
 */
export function shardedSafetensorsFiles(
  tensors: Record<string, SafetensorsInput>,
  base: string,
  opts: { metadata?: Record<string, string>; dtype?: SafetensorsWriteDtype; maxShardBytes?: number } = {},
): Record<string, Uint8Array> {
  const dtype = opts.dtype ?? 'F32';
  // A tensor may be written as another dtype than the file's (SafetensorsInput.writeAs), which counts for its size.
  const bytesPerValue = (name: string) => bytesPerValueOf(tensors[name].writeAs ?? dtype);
  const shapes = Object.fromEntries(Object.entries(tensors).map(([name, t]) => [name, t.shape]));
  const shards = planShards(shapes, bytesPerValue, opts.maxShardBytes ?? SHARD_BYTES);
  if (shards.length === 1) return { [`${base}.safetensors`]: serializeSafetensors(tensors, opts.metadata, dtype) };
  const files: Record<string, Uint8Array> = {};
  const weightMap: Record<string, string> = {};
  let totalSize = 0;
  shards.forEach((shard, i) => {
    const name = shardFileName(base, i, shards.length);
    const part = Object.fromEntries(Object.keys(shard).map((t) => [t, tensors[t]]));
    files[name] = serializeSafetensors(part, opts.metadata, dtype);
    for (const [t, input] of Object.entries(part)) {
      weightMap[t] = name;
      totalSize += input.data.length * bytesPerValue(t);
    }
  });
  const index = { metadata: { total_size: totalSize }, weight_map: weightMap };
  files[`${base}.safetensors.index.json`] = new TextEncoder().encode(JSON.stringify(index, null, 2) + '\n');
  return files;
}

/** The names of the files that hold `base`: its single file, or its index and every shard the index names. */
export function shardedSafetensorsNames(files: Record<string, Uint8Array>, base: string): string[] {
  if (files[`${base}.safetensors`]) return [`${base}.safetensors`];
  const indexName = `${base}.safetensors.index.json`;
  return files[indexName] ? [indexName, ...readIndex(files, indexName)] : [];
}

/**
 * Every tensor of `base` (a single file or shards, as shardedSafetensorsFiles writes them and as the Hub ships
 * larger models), indexed without decoding. `where` prefixes each error (e.g. 'checkpoint'). Throws an Error naming
 * the file that is missing, unreadable or damaged.
 */
export function readShardedSafetensors(
  files: Record<string, Uint8Array>,
  base: string,
  where: string,
): Record<string, SafetensorsEntry> {
  const parse = (name: string) => {
    try {
      return indexSafetensors(files[name]).entries;
    } catch (err) {
      throw new Error(`${where}: ${name}: ${(err as Error).message}`, { cause: err });
    }
  };
  if (files[`${base}.safetensors`]) return parse(`${base}.safetensors`);
  const indexName = `${base}.safetensors.index.json`;
  if (!files[indexName]) throw new Error(`${where}: ${base}.safetensors is missing`);
  const out: Record<string, SafetensorsEntry> = {};
  for (const shard of readIndex(files, indexName, where)) {
    if (!files[shard]) throw new Error(`${where}: shard '${shard}' named in ${indexName} is missing`);
    Object.assign(out, parse(shard));
  }
  return out;
}

/** The distinct shard names of an index file, sorted. */
function readIndex(files: Record<string, Uint8Array>, indexName: string, where = 'safetensors'): string[] {
  let index: { weight_map?: unknown };
  try {
    index = JSON.parse(new TextDecoder().decode(files[indexName])) as { weight_map?: unknown };
  } catch (err) {
    throw new Error(`${where}: ${indexName} is not valid JSON: ${(err as Error).message}`, { cause: err });
  }
  const map = index?.weight_map;
  if (!map || typeof map !== 'object' || Array.isArray(map))
    throw new Error(`${where}: ${indexName} has no weight_map`);
  const shards = Object.values(map as Record<string, unknown>);
  // A shard is a file beside the index: no path, so nothing outside the checkpoint is ever read.
  const bad = shards.find((s) => typeof s !== 'string' || !/^[^/\\]+\.safetensors$/.test(s) || s.startsWith('.'));
  if (bad !== undefined) {
    throw new Error(
      `${where}: ${indexName} names ${JSON.stringify(bad)}: a shard must be a .safetensors file beside the index (a file name, no path)`,
    );
  }
  return [...new Set(shards as string[])].sort();
}
