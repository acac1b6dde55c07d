// initBackend on the CPU backends in Node, checked by arithmetic: a backend that starts but computes wrongly fails.
// (WebGPU through Dawn has its own file, backend-webgpu.test.ts: tfjs keeps one engine per process.)
import { describe, expect, it } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { initBackend, type BackendChoice } from '../../src/model/backend';
import { referenceMatmul, runMatmulCheck, seededMatrix } from '../../workers/matmul-check';

describe('matmul reference', () => {
  it('multiplies a 2x2 example worked out by hand', () => {
    // [1 2; 3 4] x [5 6; 7 8] = [1*5+2*7 1*6+2*8; 3*5+4*7 3*6+4*8] = [19 22; 43 50]
    const c = referenceMatmul(Float32Array.of(1, 2, 3, 4), Float32Array.of(5, 6, 7, 8), 2);
    expect(Array.from(c)).toEqual([19, 22, 43, 50]);
  });

  it('rejects matrices whose size does not match n', () => {
    expect(() => referenceMatmul(new Float32Array(4), new Float32Array(9), 2)).toThrow(/2x2/);
  });

  it('makes seeded matrices that repeat per seed, differ across seeds, and stay in [-1, 1)', () => {
    const a = seededMatrix(16, 1);
    expect(Array.from(seededMatrix(16, 1))).toEqual(Array.from(a));
    expect(Array.from(seededMatrix(16, 2))).not.toEqual(Array.from(a));
    expect(Math.min(...a)).toBeGreaterThanOrEqual(-1);
    expect(Math.max(...a)).toBeLessThan(1);
    // Not degenerate: a check on all-equal entries would miss transposed or shuffled outputs.
    expect(new Set(a).size).toBeGreaterThan(200);
  });
});

describe.each(['cpu', 'wasm'] as const)('initBackend(%s)', (name) => {
  it(`starts ${name} and says so`, async () => {
    const info = await initBackend(name);
    expect(info.name).toBe(name);
    expect(tf.getBackend()).toBe(name);
    expect(info.fallbackReasons).toEqual([]);
    expect(info.softwareAdapter).toBe(false); // only webgpu on a software adapter is flagged (the page warns)
  });

  it('multiplies matrices like the plain-JS reference, without leaking tensors', async () => {
    await initBackend(name);
    const before = tf.memory().numTensors;
    const result = await runMatmulCheck(64);
    expect(result.backend).toBe(name);
    expect(result.n).toBe(64);
    // float32 sums of 64 products of size <= 1 round to ~1e-6; a wrong kernel would be off by O(1).
    expect(result.maxAbsError).toBeLessThan(1e-4);
    expect(tf.memory().numTensors).toBe(before);
  });

  it('agrees with tfjs on a non-square product checked element by element', async () => {
    await initBackend(name);
    // A 2x3 by 3x2 product, so a kernel that mixes up rows and columns cannot pass by symmetry.
    const a = tf.tensor2d([
      [1, -2, 3],
      [0.5, 4, -1],
    ]);
    const b = tf.tensor2d([
      [2, 0],
      [1, -1],
      [-3, 5],
    ]);
    const c = tf.matMul(a, b);
    // Row 1: 1*2 + -2*1 + 3*-3 = -9, 1*0 + -2*-1 + 3*5 = 17; row 2: 1 + 4 + 3 = 8, 0 - 4 - 5 = -9.
    expect(Array.from(await c.data())).toEqual([-9, 17, 8, -9]);
    tf.dispose([a, b, c]);
  });
});

describe('initBackend errors', () => {
  it('throws an error naming an unknown backend', async () => {
    await expect(initBackend('metal' as BackendChoice)).rejects.toThrow(/unknown backend 'metal'/);
  });

  it('rejects a matmul check size outside the allowed range, naming it', async () => {
    await initBackend('cpu');
    await expect(runMatmulCheck(0)).rejects.toThrow(/got 0/);
    await expect(runMatmulCheck(2.5)).rejects.toThrow(/got 2.5/);
  });
});
