// How `ragen init-model` lays out a model too large for one file (Qwen2.5-3B: 3.09 B parameters, 6.2 GB in bf16):
// shards in name order, each within SHARD_BYTES (Node's readFile limit), every tensor in exactly one. Pure planning;
// writing the 6 GB is left to the GPU server (tools/device/full-run.sh writes the 0.5B one).
import { describe, expect, it } from 'vitest';
import { parseQwen2Config } from '../../../src/model/checkpoint';
import { planShards, SHARD_BYTES } from '../../../src/model/safetensorsShards';
import { qwen2WeightShapes } from '../../../src/model/qwen2';
import { qwenShapeConfig } from '../../../src/model/qwenShapes';

const bytes = (shape: number[]) => shape.reduce((a, b) => a * b, 1) * 2;

describe('init-model shards', () => {
  it('Qwen2.5-3B: 3,085,938,688 parameters in shards of at most SHARD_BYTES, each tensor once, names in order', () => {
    const shapes = qwen2WeightShapes(parseQwen2Config(qwenShapeConfig('qwen2.5-3b')));
    const total = Object.values(shapes).reduce((n, s) => n + bytes(s), 0);
    expect(total / 2).toBe(3_085_938_688); // Qwen2.5-3B's parameter count (tied embeddings)
    const shards = planShards(shapes, 2);
    expect(shards.length).toBe(Math.ceil(total / SHARD_BYTES));
    for (const shard of shards)
      expect(Object.values(shard).reduce((n, s) => n + bytes(s), 0)).toBeLessThanOrEqual(SHARD_BYTES);
    const names = shards.flatMap((s) => Object.keys(s));
    expect(names).toEqual(Object.keys(shapes).sort());
  });

  it('Qwen2.5-0.5B fits one file, as Qwen ships it', () => {
    const shapes = qwen2WeightShapes(parseQwen2Config(qwenShapeConfig('qwen2.5-0.5b')));
    expect(planShards(shapes, 2).length).toBe(1);
  });
});
