// `ragen bench --only memory` and `--only rollout` at the tiny shape on wasm: the JSON rows `--json` writes
// (shape, backend, tokens, phase, peakBytes) for every phase, extrapolated rows that match a measured depth, the
// rollout section's tokens/s keys, and one clear line for a bad option or a shape the wasm heap cannot hold. No timing
// thresholds.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import * as tf from '@tensorflow/tfjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../../src/model/backend';
import { measurePeakMemory } from '../../../src/bench/model';

const run = promisify(execFile);
const ragen = (...args: string[]) =>
  run(process.execPath, ['bin/ragen.js', ...args], { cwd: process.cwd(), timeout: 110_000 });
const dir = mkdtempSync(path.join(os.tmpdir(), 'ragen-bench-memory-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('bench --only memory', () => {
  it('writes one row per phase and depth, and rows extrapolated to the shape depth, linear in the layer count', async () => {
    const json = path.join(dir, 'memory.json');
    await ragen(
      'bench',
      '--only',
      'memory',
      '--shapes',
      'sokoban-tiny',
      '--tokens',
      '2x40',
      '--rollouts',
      '8',
      '--layers',
      '1,2,3',
      '--json',
      json,
    );
    const rows = JSON.parse(readFileSync(json, 'utf8')).memory as Array<Record<string, unknown>>;
    const phases = ['rollout', 'scoring', 'actor update', 'optimizer', 'critic update', 'step'];
    for (const layers of [1, 2, 3]) {
      const mine = rows.filter((r) => r.layers === layers && !r.extrapolatedFrom);
      expect(mine.map((r) => r.phase)).toEqual(phases);
      for (const r of mine) {
        expect(r).toMatchObject({
          shape: 'sokoban-tiny',
          backend: 'wasm',
          tokens: r.phase === 'rollout' ? '8x40' : '2x40',
        });
        expect(r.peakBytes as number).toBeGreaterThan(0);
      }
      const step = mine.find((r) => r.phase === 'step')!;
      expect(step.peakBytes).toBe(Math.max(...mine.map((r) => r.peakBytes as number)));
    }
    // sokoban-tiny has 4 layers: the straight line through 2 and 3 gives the 4-layer rows, flagged as such.
    const extrapolated = rows.filter((r) => r.extrapolatedFrom);
    expect(extrapolated.map((r) => r.phase)).toEqual(phases);
    for (const r of extrapolated) expect(r).toMatchObject({ layers: 4, extrapolatedFrom: [2, 3] });
    // Linear in the depth: 1, 2, 3 layers step by the same amount (to within the rollout's cache rounding).
    for (const phase of phases) {
      const at = (n: number) =>
        rows.find((r) => r.layers === n && r.phase === phase && !r.extrapolatedFrom)!.peakBytes as number;
      expect(Math.abs(at(3) - at(2) - (at(2) - at(1)))).toBeLessThan(0.01 * at(3));
    }
  });

  it('reports generated tokens/s at each rollout batch size', async () => {
    const json = path.join(dir, 'rollout.json');
    await ragen('bench', '--only', 'rollout', '--shapes', 'tiny', '--rollout-batches', '1,16,32', '--json', json);
    const results = JSON.parse(readFileSync(json, 'utf8')).results.rollout as Record<string, number>;
    expect(Object.keys(results)).toEqual([1, 16, 32].map((b) => `tiny generate batch ${b} tokens/s`));
    for (const v of Object.values(results)) expect(v).toBeGreaterThan(0);
  });

  it('rejects a bad --tokens with one line naming it (exit 2)', async () => {
    const err = await ragen('bench', '--only', 'memory', '--tokens', '1x', '--shapes', 'tiny').catch((e) => e);
    expect(err.code).toBe(2);
    expect(err.stderr.trim().split('\n').filter(Boolean)).toHaveLength(1);
    expect(err.stderr).toMatch(/--tokens must be BxT/);
  });

  it('ends with one line naming the wasm heap when a phase does not fit it (exit 2, no minified source)', async () => {
    // Three layers of Qwen2.5-0.5B with its full vocabulary: the actor update's gradients do not fit tfjs-wasm's 4 GiB
    // heap (one layer fits since our matmul takes the LM head's products without transposed copies).
    const err = await ragen(
      'bench',
      '--only',
      'memory',
      '--shapes',
      'qwen0.5b',
      '--layers',
      '3',
      '--phases',
      'actor update',
      '--tokens',
      '1x6',
    ).catch((e) => e);
    expect(err.code).toBe(2);
    const lines = err.stderr.trim().split('\n');
    expect(lines.at(-1)).toMatch(
      /^ragen: bench: section\(s\) failed: memory \(qwen0\.5b at 3 layer\(s\), actor update: .*wasm.*heap/,
    );
    expect(err.stderr).not.toMatch(/reading 'map'/);
    expect(err.stderr.length).toBeLessThan(1000); // tfjs-wasm's minified module is one 40 KB line
  });

  it('reports an error nothing caught as a bug: its stack and exit 1, without quoting its source line', async () => {
    const planted = 'data:text/javascript,setTimeout(() => Promise.reject(new Error("planted")), 300)';
    const err = await run(process.execPath, ['--import', planted, 'bin/ragen.js', 'bench', '--only', 'envs'], {
      timeout: 60_000,
    }).catch((e) => e);
    expect(err.code).toBe(1);
    expect(err.stderr).toMatch(/^Error: planted\n\s+at /);
    expect(err.stderr).toMatch(/ragen: this is a bug in ragen/);
  });
});

describe('measurePeakMemory', () => {
  const failing = 'RagenTestFailingKernel';
  beforeAll(async () => {
    await initBackend('cpu');
    tf.registerKernel({
      kernelName: failing,
      backendName: 'cpu',
      kernelFunc: () => {
        throw new Error('the kernel failed');
      },
    });
  });
  afterAll(() => tf.unregisterKernel(failing, 'cpu'));

  it('throws the error of a kernel that fails under the profiler, and leaves no promise rejected unhandled', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const x = tf.zeros([2]);
      await expect(
        measurePeakMemory(async () => {
          tf.engine().runKernel(failing, { x }, {});
        }),
      ).rejects.toThrow('the kernel failed');
      x.dispose();
      await new Promise((resolve) => setTimeout(resolve, 10));
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
    expect(unhandled).toEqual([]);
    // The profiler is off again: a later kernel runs as usual.
    expect(tf.engine().state.profiling).toBe(false);
    expect(await tf.add(tf.scalar(1), tf.scalar(2)).data()).toEqual(new Float32Array([3]));
  });
});
