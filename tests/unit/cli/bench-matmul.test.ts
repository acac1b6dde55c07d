// `ragen bench --only matmul`: the products of one update at a model shape, each timed alone in tfjs and in PyTorch
// (tools/bench/torch_matmul.py, .venv-hf). Here on wasm at the tiny shape: the JSON rows (one per case and
// implementation), PyTorch's rows for the same cases, the ratios and sums written from them, and qwen0.5b's cases
// as the GPU run will time them. No timing thresholds (timings on this machine mean nothing for a GPU).
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { matmulCases, type MatmulRow } from '../../../src/bench/matmul';
import { benchShape } from '../../../src/bench/model';
import { HF_PYTHON } from '../hf-python';

const run = promisify(execFile);
const ragen = (...args: string[]) =>
  run(process.execPath, ['bin/ragen.js', ...args], { cwd: process.cwd(), timeout: 110_000 });
const dir = mkdtempSync(path.join(os.tmpdir(), 'ragen-bench-matmul-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** "<op> <pass> <m>x<n>x<k> <A and B transposed?> x<calls per update>" of each case. */
const describeCase = (c: {
  op: string;
  pass: string;
  m: number;
  n: number;
  k: number;
  transposeA: boolean;
  transposeB: boolean;
  callsPerUpdate: number;
}) =>
  `${c.op} ${c.pass} ${c.m}x${c.n}x${c.k} ${c.transposeA ? 'T' : 'N'}${c.transposeB ? 'T' : 'N'} x${c.callsPerUpdate}`;

describe('matmulCases', () => {
  it("qwen0.5b at 1 x 1536 tokens: the model's stacked layer products and the chunked LM head of scoring.ts", () => {
    expect(matmulCases(benchShape('qwen0.5b'), 1, 1536).map(describeCase)).toEqual([
      'qkv forward 1536x1152x896 NT x24',
      'qkv grad-input 1536x896x1152 NN x24',
      'qkv grad-weight 1152x896x1536 TN x24',
      'o forward 1536x896x896 NT x24',
      'o grad-input 1536x896x896 NN x24',
      'o grad-weight 896x896x1536 TN x24',
      'gateUp forward 1536x9728x896 NT x24',
      'gateUp grad-input 1536x896x9728 NN x24',
      'gateUp grad-weight 9728x896x1536 TN x24',
      'down forward 1536x896x4864 NT x24',
      'down grad-input 1536x4864x896 NN x24',
      'down grad-weight 896x4864x1536 TN x24',
      // 2^25 / 151,936 = 220 rows a chunk, 1,535 scored rows = 7 chunks; the forward runs again in the backward.
      'head chunk forward 151936x220x896 NT x14',
      'head chunk grad-input 220x896x151936 NN x7',
      'head chunk grad-weight 151936x896x220 TN x7',
    ]);
  });
});

describe('bench --only matmul', () => {
  it('on wasm: a tfjs, a wasm-own and a PyTorch row per case of the tiny shape, ratios and update sums from them', async () => {
    const json = path.join(dir, 'matmul.json');
    await ragen(
      'bench',
      '--only',
      'matmul',
      '--shapes',
      'tiny',
      '--tokens',
      '1x40',
      '--seconds',
      '0.02',
      '--python',
      HF_PYTHON,
      '--json',
      json,
    );
    const report = JSON.parse(readFileSync(json, 'utf8'));
    const rows = report.matmul as MatmulRow[];
    const cases = matmulCases(benchShape('tiny'), 1, 40);
    expect(cases).toHaveLength(15);
    // The tiny shape: hidden 64, 4 + 2 x 2 heads of 16, MLP 192, vocabulary 512, 2 layers; 39 of 40 rows scored.
    expect(cases.map(describeCase).filter((c) => c.startsWith('qkv') || c.startsWith('head'))).toEqual([
      'qkv forward 40x128x64 NT x2',
      'qkv grad-input 40x64x128 NN x2',
      'qkv grad-weight 128x64x40 TN x2',
      'head forward 39x512x64 NT x1',
      'head grad-input 39x64x512 NN x1',
      'head grad-weight 512x64x39 TN x1',
    ]);
    expect(report.errors).toEqual({});
    expect(report.notes.matmul).toContain(
      'the tiled WGSL rows need the webgpu backend (this is wasm): tfjs and wasm-own rows',
    );
    const tfjs = rows.filter((r) => r.impl === 'tfjs'),
      own = rows.filter((r) => r.impl === 'wasm-own'),
      torch = rows.filter((r) => r.impl === 'torch');
    expect(rows).toHaveLength(45); // no tiled rows on wasm
    // Our kernel adds in XNNPACK's order: the same products.
    for (const r of own) expect(r.maxRelErrorVsTfjs).toBeLessThanOrEqual(1e-6);
    for (const [side, device] of [
      [tfjs, 'wasm'],
      [own, 'wasm'],
      [torch, 'cpu'],
    ] as const) {
      expect(side.map(describeCase)).toEqual(cases.map(describeCase));
      for (const r of side) {
        expect(r).toMatchObject({ shape: 'tiny', tokens: '1x40', device });
        expect(r.msPerCall).toBeGreaterThan(0);
        expect(r.gpuMsPerCall).toBeUndefined(); // GPU times come from webgpu's timestamp queries only
        expect(r.gflops).toBeCloseTo((2 * r.m * r.n * r.k) / (r.msPerCall * 1e6), 6);
      }
    }
    const results = report.results.matmul as Record<string, number>;
    for (const [i, r] of tfjs.entries()) {
      expect(r.vsTorch).toBeCloseTo(torch[i].msPerCall / r.msPerCall, 9);
      expect(results[`tiny ${cases[i].op} ${cases[i].pass} ${r.m}x${r.n}x${r.k} tfjs/torch`]).toBe(r.vsTorch);
      expect(results[`tiny ${cases[i].op} ${cases[i].pass} ${r.m}x${r.n}x${r.k} torch GFLOP/s`]).toBe(torch[i].gflops);
    }
    for (const [impl, side] of [
      ['tfjs', tfjs],
      ['wasm-own', own],
      ['torch', torch],
    ] as const) {
      expect(results[`tiny 1x40 update matmuls ${impl} ms`]).toBeCloseTo(
        side.reduce((s, r) => s + r.msPerCall * r.callsPerUpdate, 0),
        9,
      );
    }
    expect(report.torch).toMatchObject({ device: 'cpu', threads: 1 });
  });
});
