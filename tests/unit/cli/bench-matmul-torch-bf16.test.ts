// The PyTorch side of `ragen bench --only matmul` on CUDA also times each product in bf16 (tools/bench/torch_matmul.py:
// "<key> bf16 ms"): addTorchRows makes those 'torch-bf16' rows next to the f32 'torch' rows, and the tfjs rows'
// vsTorch stays the ratio to f32.
import { describe, expect, it } from 'vitest';
import { addTorchRows, matmulCases, matmulTable, type MatmulRow } from '../../../src/bench/matmul';
import { benchShape } from '../../../src/bench/model';

describe('addTorchRows with bf16 timings', () => {
  it("adds a 'torch-bf16' row per case PyTorch timed in bf16, and compares the tfjs rows with f32", () => {
    const cases = matmulCases(benchShape('tiny'), 1, 40).filter((c) => c.op === 'o');
    const [first] = cases;
    const { key, ...rest } = first;
    const tfjs: MatmulRow = {
      shape: 'tiny',
      tokens: '1x40',
      ...rest,
      impl: 'tfjs',
      device: 'webgpu',
      msPerCall: 2,
      gflops: 1,
    };
    const torch = { [`${key} ms`]: 1, [`${key} bf16 ms`]: 0.25 };
    const rows = addTorchRows([tfjs], cases, 'tiny', '1x40', torch, 'cuda');
    expect(rows.map((r) => r.impl)).toEqual(['tfjs', 'torch-bf16', 'torch']);
    const bf16 = rows.find((r) => r.impl === 'torch-bf16')!;
    expect(bf16.msPerCall).toBe(0.25);
    expect(bf16.gflops).toBeCloseTo((2 * first.m * first.n * first.k) / 0.25e6, 6);
    expect(rows[0].vsTorch).toBe(0.5);
    expect(matmulTable(rows)[`tiny o ${first.pass} ${first.m}x${first.n}x${first.k} torch-bf16 GFLOP/s`]).toBe(
      bf16.gflops,
    );
  });
});
