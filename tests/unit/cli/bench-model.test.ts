// `ragen bench`'s model and torch sections: every figure is a positive finite number, the ratio is the quotient of
// the two sides, the shapes are the presets' and Qwen2.5-0.5B's, and a missing PyTorch fails loudly.
import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { benchShape, benchSpec, parameterCount } from '../../../src/bench/model';
import { presetConfig } from '../../../src/starpo/presets';
import { expectRefused, ragen as inProcess } from './cli-fixture';

const run = promisify(execFile);
const ragen = (...args: string[]) => run('node', ['bin/ragen.js', ...args], { cwd: process.cwd() });
const dir = mkdtempSync(path.join(os.tmpdir(), 'ragen-bench-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('bench shapes', () => {
  it("the tiny shapes are the presets' models", () => {
    for (const [shape, preset] of [
      ['tiny', 'bandit-tiny'],
      ['sokoban-tiny', 'sokoban-tiny'],
    ]) {
      const c = benchShape(shape).config;
      const t = presetConfig(preset).model.tiny;
      expect([
        c.hidden_size,
        c.num_hidden_layers,
        c.num_attention_heads,
        c.num_key_value_heads,
        c.intermediate_size,
      ]).toEqual([t.hiddenSize, t.numLayers, t.numHeads, t.numKvHeads, t.intermediateSize]);
    }
  });

  it('qwen0.5b has the parameter count of Qwen2.5-0.5B (494,032,768 with tied embeddings)', () => {
    expect(parameterCount(benchShape('qwen0.5b').config)).toBe(494_032_768);
  });

  it('the spec for PyTorch carries the same shapes; unknown names are refused by name', () => {
    const spec = benchSpec(['tiny'], 0.5);
    expect(spec.seconds).toBe(0.5);
    expect(spec.shapes[0].config).toEqual(benchShape('tiny').config);
    expect(spec.shapes[0].bytes.train).toBeGreaterThan(spec.shapes[0].bytes.generate);
    expect(() => benchShape('qwen7b')).toThrow(/unknown model shape 'qwen7b'/);
  });
});

describe('ragen bench --only model,torch', () => {
  // One run for both (each starts a tfjs model and a PyTorch process): the default figures and --gen-batches' extra rows.
  it('writes positive finite tokens/s for tfjs and PyTorch, and their ratio, also at more batch sizes (--gen-batches)', async () => {
    expect(benchSpec(['qwen0.5b'], 1).shapes[0].workload.genBatches).toEqual([16, 128]);
    expect(benchSpec(['qwen0.5b'], 1, [4]).shapes[0].workload.genBatches).toEqual([4]);
    const file = path.join(dir, 'bench.json');
    const { stdout } = await ragen(
      'bench',
      '--only',
      'model,torch',
      '--shapes',
      'tiny',
      '--gen-batches',
      '2,3',
      '--seconds',
      '0.1',
      '--json',
      file,
    );
    const report = JSON.parse(readFileSync(file, 'utf8'));
    const batchKeys = (rows: number) => [`tiny generate b${rows} tokens/s`];
    const keys = ['tiny train tokens/s', 'tiny generate tokens/s', ...batchKeys(2), ...batchKeys(3)];
    // tfjs also reports the peak tensor memory of one update / one generate call (its profiled warm-up) and kernel counts.
    const peakKeys = ['tiny train', 'tiny generate', 'tiny generate b2', 'tiny generate b3'].flatMap((what) => [
      `${what} peak bytes`,
      `${what} peak tensors`,
    ]);
    const kernelKeys = ['tiny kernels/update', 'tiny kernels/decoded token'];
    for (const section of ['model', 'torch']) {
      expect(Object.keys(report.results[section]).sort()).toEqual(
        [...keys, ...(section === 'model' ? [...peakKeys, ...kernelKeys] : [])].sort(),
      );
      for (const v of Object.values(report.results[section]) as number[]) {
        expect(Number.isFinite(v) && v > 0).toBe(true);
      }
    }
    // An update holds at least the weights, gradients and AdamW's two moments: more than 4 x the float32 weights.
    expect(report.results.model['tiny train peak bytes']).toBeGreaterThan(
      4 * 4 * parameterCount(benchShape('tiny').config),
    );
    expect(report.results.model['tiny generate peak bytes']).toBeGreaterThan(
      4 * parameterCount(benchShape('tiny').config),
    );
    expect(Number.isInteger(report.results.model['tiny train peak tensors'])).toBe(true);
    for (const key of keys) {
      const ratioKey = key.replace('tokens/s', 'tfjs/torch');
      expect(report.results.ratio[ratioKey], ratioKey).toBeCloseTo(
        report.results.model[key] / report.results.torch[key],
        10,
      );
    }
    expect(report.backend).toBe('wasm');
    expect(report.torch.threads).toBe(1);
    expect(report.command).toContain('--shapes tiny');
    expect(stdout).toMatch(/ratio \(tfjs wasm \/ PyTorch/);
  });

  // The refusals run through main() in this process: no model is built before them.
  it('fails the torch section, naming the problem, when the interpreter is missing or has no torch', async () => {
    expectRefused(
      await inProcess('bench', '--only', 'torch', '--shapes', 'tiny', '--python', '/nonexistent/python3'),
      /\/nonexistent\/python3, which does not exist/,
    );
    // Python without site-packages: the interpreter runs, but `import torch` fails.
    const noTorch = path.join(dir, 'python-without-torch');
    writeFileSync(noTorch, '#!/bin/sh\nexec /usr/bin/python3 -S "$@"\n');
    chmodSync(noTorch, 0o755);
    expectRefused(
      await inProcess('bench', '--only', 'torch', '--shapes', 'tiny', '--python', noTorch),
      /cannot import torch/,
    );
  });

  it('refuses an unknown shape or backend, or a batch size of 0, with exit code 2', async () => {
    expectRefused(await inProcess('bench', '--only', 'model', '--shapes', 'tiny,huge'), /unknown model shape 'huge'/);
    expectRefused(await inProcess('bench', '--only', 'model', '--backend', 'tpu'), /unknown backend 'tpu'/);
    expectRefused(
      await inProcess('bench', '--only', 'model', '--shapes', 'tiny', '--gen-batches', '2,0'),
      /--gen-batches must be an integer >= 1, got '0'/,
    );
  });
});
