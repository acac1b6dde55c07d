// Safetensors sets past one file (src/model/safetensorsShards.ts): Hugging Face's shard names and index, every
// tensor read back bit for bit, each shard within its limit, and a clear error for a missing or broken piece.
import { describe, expect, it } from 'vitest';
import { parseSafetensors, serializeSafetensors } from '../../../src/model/safetensors';
import {
  planShards,
  readShardedSafetensors,
  shardedSafetensorsFiles,
  shardedSafetensorsNames,
} from '../../../src/model/safetensorsShards';

const tensors = Object.fromEntries(
  ['b', 'a', 'c', 'd', 'e'].map((name, i) => [
    name,
    { shape: [4, 8 + i], data: Float32Array.from({ length: 4 * (8 + i) }, (_, j) => Math.sin(j * (i + 1)) * 1e3) },
  ]),
);
const bytesOf = (shape: number[]) => shape.reduce((a, b) => a * b, 1) * 4;

describe('sharded safetensors', () => {
  it('a set that fits is one file, byte for byte what serializeSafetensors writes', () => {
    const files = shardedSafetensorsFiles(tensors, 'optimizer', { metadata: { format: 'pt' } });
    expect(Object.keys(files)).toEqual(['optimizer.safetensors']);
    expect(Buffer.compare(files['optimizer.safetensors'], serializeSafetensors(tensors, { format: 'pt' }))).toBe(0);
    expect(shardedSafetensorsNames(files, 'optimizer')).toEqual(['optimizer.safetensors']);
  });

  it('past the limit: shards named as the Hub names them, an index, every tensor once and exact', () => {
    const limit = bytesOf([4, 9]) + bytesOf([4, 8]); // a and b together, then one or two per shard
    const files = shardedSafetensorsFiles(tensors, 'model', { metadata: { format: 'pt' }, maxShardBytes: limit });
    const shards = Object.keys(files)
      .filter((n) => n.endsWith('.safetensors'))
      .sort();
    expect(shards).toEqual([
      'model-00001-of-00004.safetensors',
      'model-00002-of-00004.safetensors',
      'model-00003-of-00004.safetensors',
      'model-00004-of-00004.safetensors',
    ]);
    const index = JSON.parse(new TextDecoder().decode(files['model.safetensors.index.json']));
    expect(index.weight_map).toEqual({ a: shards[0], b: shards[0], c: shards[1], d: shards[2], e: shards[3] });
    expect(index.metadata.total_size).toBe(Object.values(tensors).reduce((n, t) => n + bytesOf(t.shape), 0));
    for (const name of shards) {
      const { tensors: inShard, metadata } = parseSafetensors(files[name]);
      expect(metadata).toEqual({ format: 'pt' });
      expect(Object.values(inShard).reduce((n, t) => n + bytesOf(t.shape), 0)).toBeLessThanOrEqual(limit);
    }
    const read = readShardedSafetensors(files, 'model', 'test');
    expect(Object.keys(read).sort()).toEqual(['a', 'b', 'c', 'd', 'e']);
    for (const [name, t] of Object.entries(tensors)) {
      expect(read[name].shape).toEqual(t.shape);
      expect(Buffer.compare(Buffer.from(read[name].read().buffer), Buffer.from(t.data.buffer))).toBe(0);
    }
    expect(shardedSafetensorsNames(files, 'model')).toEqual(['model.safetensors.index.json', ...shards]);
  });

  it('bf16 shards are planned by their 2-byte size', () => {
    const shapes = { x: [1000], y: [1000], z: [1000] };
    expect(planShards(shapes, 2, 4000).map((s) => Object.keys(s))).toEqual([['x', 'y'], ['z']]);
    expect(planShards(shapes, 4, 4000).map((s) => Object.keys(s))).toEqual([['x'], ['y'], ['z']]);
    expect(planShards({ big: [5000] }, 4, 4000).length).toBe(1); // a tensor past the limit gets a shard of its own
  });

  it('a set whose tensors carry their own dtype (writeAs) is planned and indexed by the bytes each is written in', () => {
    const exact = (n: number) => new Float32Array(n).fill(1.5); // 1.5 is a bfloat16
    const mixed = {
      x: { shape: [1000], data: exact(1000), writeAs: 'BF16' as const },
      y: { shape: [1000], data: exact(1000), writeAs: 'BF16' as const },
      z: { shape: [1000], data: exact(1000) },
    };
    const files = shardedSafetensorsFiles(mixed, 'model', { maxShardBytes: 4000 });
    const shards = Object.keys(files)
      .filter((n) => n.endsWith('.safetensors'))
      .sort();
    expect(shards.map((n) => Object.keys(parseSafetensors(files[n]).tensors))).toEqual([['x', 'y'], ['z']]); // 2 + 2 kB, then 4 kB
    expect(JSON.parse(new TextDecoder().decode(files['model.safetensors.index.json'])).metadata.total_size).toBe(
      2000 + 2000 + 4000,
    );
    expect(parseSafetensors(files[shards[0]]).tensors.x.dtype).toBe('BF16');
    expect(parseSafetensors(files[shards[1]]).tensors.z.dtype).toBe('F32');
  });

  it('a missing or damaged piece is named', () => {
    const files = shardedSafetensorsFiles(tensors, 'ref', { maxShardBytes: 200 });
    const without = (name: string) => Object.fromEntries(Object.entries(files).filter(([n]) => n !== name));
    const second = Object.keys(files).find((n) => n.startsWith('ref-00002-of-'))!;
    expect(() => readShardedSafetensors(without(second), 'ref', 'trainer checkpoint')).toThrow(
      `trainer checkpoint: shard '${second}' named in ref.safetensors.index.json is missing`,
    );
    expect(() => readShardedSafetensors(without('ref.safetensors.index.json'), 'ref', 'x')).toThrow(
      'x: ref.safetensors is missing',
    );
    const broken = { ...files, 'ref.safetensors.index.json': new TextEncoder().encode('{"metadata":{}}') };
    expect(() => readShardedSafetensors(broken, 'ref', 'x')).toThrow('x: ref.safetensors.index.json has no weight_map');
    const truncated = { ...files, [second]: files[second].subarray(0, files[second].length - 4) };
    expect(() => readShardedSafetensors(truncated, 'ref', 'x')).toThrow(
      new RegExp(`x: ${second.replace(/\./g, '\\.')}: safetensors: truncated file`),
    );
  });
});
