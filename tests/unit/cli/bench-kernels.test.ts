// Kernel counts of the fused model, pinned loosely so they cannot silently grow back (issue 14's targets: at most 12
// kernels per layer per decoded token plus a small constant, and at most a quarter of the ~1,000 of an update before
// the fused kernels). Counted as `ragen bench` counts them (computing kernels; see computes()).
import { beforeAll, describe, expect, it } from 'vitest';
import { benchShape, computes, kernelCounts } from '../../../src/bench/model';
import { initBackend } from '../../../src/model/backend';
import { Qwen2Model, initQwen2Weights } from '../../../src/model/qwen2';
import { kernelCensus } from '../../../tools/device/kernel-census';

beforeAll(async () => {
  await initBackend('wasm');
});

describe('kernel counts (wasm)', () => {
  it('only relabelling records and op scopes are left out of the count', () => {
    expect(['Reshape', 'Identity', 'fusedMatMul__op', 'unnamed scope'].some(computes)).toBe(false);
    expect(['BatchMatMul', '_FusedMatMul', 'RagenAttention', 'Add'].every(computes)).toBe(true);
  });

  for (const name of ['tiny', 'sokoban-tiny']) {
    it(`${name}: <= 12 kernels per layer per decoded token (+ <= 10), and a small update`, async () => {
      const shape = benchShape(name);
      const model = new Qwen2Model(shape.config, initQwen2Weights(shape.config, 0));
      try {
        const c = await kernelCounts(model, shape.workload, 0);
        const layers = shape.config.num_hidden_layers;
        expect((c.perDecodedToken - c.decodeConstant) / layers).toBeLessThanOrEqual(12);
        expect(c.decodeConstant).toBeLessThanOrEqual(10);
        expect(c.update).toBeLessThanOrEqual(60 + 30 * layers); // tiny 103, sokoban-tiny 171 when written
        expect(c.update).toBeGreaterThan(20 * layers); // a count that measures something
      } finally {
        model.dispose();
      }
    });
  }
});

describe('kernel census of one layer (tools/device/kernel-census.ts, wasm)', () => {
  it('a decoded token: one kernel per layer (the whole layer), sampling outside the layers', async () => {
    const { perLayer, constant } = await kernelCensus(benchShape('tiny').config, 'decode');
    expect(perLayer.get('RagenDecodeLayer')).toBe(1);
    expect([...perLayer.values()].reduce((a, b) => a + b, 0)).toBe(1);
    expect(constant.get('RagenSample')).toBe(1);
  });

  it('a checkpointed update recomputes each layer once and makes no zero-gradient kernels for its constants', async () => {
    const { perLayer } = await kernelCensus(benchShape('tiny').config, 'update');
    expect(perLayer.get('RagenAttention')).toBe(2); // the forward and the backward's recomputation
    expect(perLayer.get('RagenAttentionGrad')).toBe(1);
    expect(perLayer.has('ZerosLike')).toBe(false); // positions, RoPE tables and mask get host zeros
  });
});
