// tools/bench/torch_step.py run alone (--paper): the paper step's work in PyTorch, in bf16 autocast and in f32, with
// the update at 1 x T and generation at batch B beside it; here at --tiny sizes on CPU (.venv-hf). No timing
// thresholds: the keys, the work each part ran, and that bf16 really runs the matmuls in bf16.
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { HF_PYTHON } from '../hf-python';

const run = promisify(execFile);
const dir = mkdtempSync(path.join(os.tmpdir(), 'torch-step-paper-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const python = (script: string) =>
  execFileSync(HF_PYTHON, ['-c', `import sys; sys.path[:0] = ['tools/bench', 'tools/parity']\n${script}`], {
    encoding: 'utf8',
  }).trim();

describe('torch_step.py --paper', () => {
  it("builds the paper step's work: 128 dialogues x 5 turns of 400 new tokens, 87,128 tokens in 32 sequences", () => {
    const out = JSON.parse(
      python(`
import json, torch_step as t
spec = t.paper_spec(t.PAPER_WORK, t.QWEN25_05B, t.PAPER_SETTINGS)
w = spec["timed"][0]
print(json.dumps({"turns": w["turns"], "train": w["train"], "from": w["trainFrom"], "settings": spec["settings"]}))`),
    );
    expect(out.turns).toHaveLength(5);
    expect(out.turns[0]).toEqual({ rows: 128, prefill: 145, decode: 400, fresh: false }); // (87128 / 32 - 2000) / 5
    expect(out.train).toHaveLength(32);
    expect(out.train.reduce((a: number, b: number) => a + b, 0)).toBe(87128);
    expect(Math.max(...out.train) - Math.min(...out.train)).toBeLessThanOrEqual(1);
    expect(out.settings).toMatchObject({
      maxBatchSize: 128,
      miniBatch: 32,
      microBatch: 1,
      critic: true,
      reference: false,
      checkpointing: true,
    });
  });

  it('runs bf16 autocast over f32 weights: bf16 logits, f32 master weights and gradients', () => {
    const out = python(`
import torch, torch_step as t
spec = t.paper_spec(t.TINY_WORK, t.TINY, dict(t.PAPER_SETTINGS, maxBatchSize=8, miniBatch=2))
r = t.StepRunner(spec, torch.device("cpu"), 0)
ids = torch.randint(0, 512, (1, 12)); mask = torch.ones_like(ids)
dtypes = []
for d in ("bf16", "f32"):
    r.s = dict(r.s, dtype=d)
    with r.autocast():
        logits = t.reference.forward(r.config, r.actor, ids, mask)
    logits.float().mean().backward()
    dtypes.append(f"{d}:{logits.dtype}:{r.actor['model.norm.weight'].dtype}:{r.actor['model.norm.weight'].grad.dtype}")
print(" ".join(dtypes))`);
    expect(out).toBe('bf16:torch.bfloat16:torch.float32:torch.float32 f32:torch.float32:torch.float32:torch.float32');
  });

  it('--tiny times both dtypes on CPU and writes every key, with the tokens each part ran', async () => {
    const file = path.join(dir, 'torch-paper.json');
    await run(HF_PYTHON, ['tools/bench/torch_step.py', '--paper', '--tiny', '--seconds', '0.05', '--json', file], {
      timeout: 170_000,
    });
    const out = JSON.parse(readFileSync(file, 'utf8'));
    expect(out.work).toEqual({ rows: 8, turns: 2, decode: 8, trainSequences: 2, trainTokens: 80 });
    for (const d of ['bf16', 'f32']) {
      for (const k of ['step s', 'rollout s', 'scoring s', 'update s'])
        expect(out.results[`paper ${d} ${k}`]).toBeGreaterThan(0);
      expect(out.results[`paper ${d} train tokens`]).toBe(80);
      expect(out.results[`paper ${d} rollout tokens`]).toBe(8 * 2 * (12 + 8)); // prefill (40 - 16) / 2 = 12 per turn
      expect(out.results[`train 1x64 ${d} tokens/s`]).toBeGreaterThan(0);
      expect(out.results[`generate b2 ${d} tokens/s`]).toBeGreaterThan(0);
    }
  });

  it('refuses a dtype it does not have and a work with no room for a prompt', async () => {
    await expect(run(HF_PYTHON, ['tools/bench/torch_step.py', '--paper', '--tiny', '--dtype', 'f16'])).rejects.toThrow(
      /--dtype must list bf16/,
    );
    await expect(
      run(HF_PYTHON, ['tools/bench/torch_step.py', '--paper', '--tiny', '--train-tokens', '32']),
    ).rejects.toThrow(/leave no prompt/);
  });
});
