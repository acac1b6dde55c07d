// `ragen bench --only step,torch`: the step section's real tfjs step (frozenlake-tiny on wasm, shrunk: several turns,
// a critic) and the same work redone in PyTorch by tools/bench/torch_step.py (.venv-hf). Checks that both rows are
// there with their parts adding up to the step, that both sides ran the same tokens, and the ratio. No timing
// thresholds. Also: the recorder's arithmetic, and the KV-cache forward that a later turn's prefill uses (PyTorch).
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { StepWorkRecorder, stepRatios, stepWorkTokens } from '../../../src/bench/torchStep';
import { HF_PYTHON } from '../hf-python';

const run = promisify(execFile);
const ragen = (...args: string[]) =>
  run(process.execPath, ['bin/ragen.js', ...args], { cwd: process.cwd(), timeout: 170_000 });
const dir = mkdtempSync(path.join(os.tmpdir(), 'ragen-bench-torch-step-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('StepWorkRecorder', () => {
  it('turns prompt and response lengths into prefill and decode per turn, and train lengths into a batch', () => {
    // A tokenizer of one token per character, so that a text's length is its token count.
    const chars = { encode: (text: string) => [...text].map((ch) => ch.charCodeAt(0)) };
    const t = (...lengths: number[]) => lengths.map((n) => 'x'.repeat(n));
    const r = new StepWorkRecorder(10);
    r.rolloutTurn(t(100, 102), t(4, 6)); // turn 1: the whole prompt; decode = longest + its end token
    r.rolloutTurn(t(130, 140), t(10, 10)); // turn 2: 135 - (101 + 5) = 29 new tokens; both hit maxNewTokens
    r.rolloutTurn(t(50), t(3)); // a history window dropped turns: the whole prompt, fresh
    r.trainBatch([120, 90], [100, 0]);
    const work = r.take(chars);
    expect(work).toEqual({
      turns: [
        { rows: 2, prefill: 101, decode: 7, fresh: false },
        { rows: 2, prefill: 29, decode: 10, fresh: false },
        { rows: 1, prefill: 50, decode: 4, fresh: true },
      ],
      train: [120, 90],
      trainFrom: [100, 0],
    });
    expect(stepWorkTokens(work)).toEqual({ rollout: 2 * 108 + 2 * 39 + 54, train: 210 });
    expect(r.take(chars)).toEqual({ turns: [], train: [], trainFrom: [] }); // the next step starts empty
  });

  it('gives tfjs/torch ratios of seconds (above 1 = tfjs faster), scoring and update together, where both spent time', () => {
    const tfjs = { 'p step s': 2, 'p rollout s': 0, 'p scoring s': 0, 'p update s': 1, 'p rollout tokens': 5 };
    const torch = { 'p step s': 1, 'p rollout s': 0.5, 'p scoring s': 0.5, 'p update s': 1, 'p rollout tokens': 5 };
    expect(stepRatios(tfjs, torch)).toEqual({ 'p step tfjs/torch': 0.5, 'p train tfjs/torch': 1.5 });
  });
});

describe('torch_step.py forward with a KV cache', () => {
  it("a later turn's prefill over the cached dialogue gives the logits of one forward over the whole dialogue", () => {
    const script = `
import sys, torch
sys.path[:0] = ['tools/bench', 'tools/parity']
import reference
from torch_common import forward_cached, init_weights
c = dict(vocab_size=50, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
         num_key_value_heads=2, max_position_embeddings=64, rope_theta=10000.0, rms_norm_eps=1e-6, tie_word_embeddings=True)
g = torch.Generator().manual_seed(0)
w = init_weights(c, torch.device('cpu'), g)
ids = torch.randint(0, 50, (2, 9), generator=g)
with torch.no_grad():
    cache = []
    forward_cached(c, w, ids[:, :5], torch.arange(5).expand(2, 5), cache)
    forward_cached(c, w, ids[:, 5:6], torch.full((2, 1), 5), cache)
    last = forward_cached(c, w, ids[:, 6:], torch.arange(6, 9).expand(2, 3), cache)
    full = reference.forward(c, w, ids, torch.ones_like(ids))[:, -1]
print((last - full).abs().max().item())
`;
    const diff = Number(execFileSync(HF_PYTHON, ['-c', script], { encoding: 'utf8' }).trim());
    expect(diff).toBeLessThan(1e-5);
  });
});

// frozenlake-tiny: up to 5 turns, one training sample per turn (single_turn), PPO with a critic. 2 env groups x 4,
// the filter keeping 1 group = 4 trajectories, one mini-batch (and micro-batch) of 4: the fewest that still have
// several dialogues per turn and a filter that drops a group, for a short CI run.
const SMALL = [
  'agent.envGroups=2',
  'agent.trainEnvs.0.nGroups=2',
  'filter.ratio=0.5',
  'actor.ppoMiniBatchSize=4',
  'actor.ppoMicroBatchSize=4',
].flatMap((kv) => ['--step-set', kv]);

describe('ragen bench --only step,torch', () => {
  it('times a real frozenlake-tiny step on wasm and the same work in PyTorch, on the same tokens', async () => {
    const file = path.join(dir, 'step-torch.json');
    await ragen(
      'bench',
      '--only',
      'step,torch',
      '--shapes',
      'tiny',
      '--seconds',
      '0.1',
      '--presets',
      'frozenlake-tiny',
      '--step-repeats',
      '1',
      '--workers',
      '1',
      '--backend',
      'wasm',
      '--python',
      HF_PYTHON,
      ...SMALL,
      '--json',
      file,
    );
    const report = JSON.parse(readFileSync(file, 'utf8'));
    expect(report.errors).toEqual({});
    const p = 'frozenlake-tiny';
    const tfjs = report.results.step as Record<string, number>;
    const torch = report.results['torch-step'] as Record<string, number>;
    for (const r of [tfjs, torch]) {
      expect(r[`${p} step s`]).toBeGreaterThan(0);
      expect(r[`${p} rollout s`]).toBeGreaterThan(0);
      expect(r[`${p} update s`]).toBeGreaterThan(0);
      const parts = r[`${p} rollout s`] + r[`${p} scoring s`] + r[`${p} update s`];
      expect(parts).toBeLessThanOrEqual(r[`${p} step s`] + 1e-6);
      expect(parts + r[`${p} other s`]).toBeCloseTo(r[`${p} step s`], 6);
    }
    // The same work on both sides: the tfjs side's recorded tokens, and what the PyTorch side counted as it ran.
    expect(tfjs[`${p} rollout tokens`]).toBeGreaterThan(0);
    expect(tfjs[`${p} train tokens`]).toBeGreaterThan(0);
    expect(torch[`${p} rollout tokens`]).toBe(tfjs[`${p} rollout tokens`]);
    expect(torch[`${p} train tokens`]).toBe(tfjs[`${p} train tokens`]);
    expect(report.results.ratio[`${p} step tfjs/torch`]).toBeCloseTo(torch[`${p} step s`] / tfjs[`${p} step s`], 10);
    // The recorded work: 8 dialogues on the first turn, decode within rollout.maxNewTokens (64), a critic, no KL.
    const [work] = report.stepWork;
    expect(work).toMatchObject({ preset: p, critic: true, reference: false });
    const turns = work.timed[0].turns as { rows: number; prefill: number; decode: number }[];
    expect(turns[0].rows).toBe(8);
    for (const t of turns) expect(t.decode >= 1 && t.decode <= 64 && t.prefill >= 1).toBe(true);
    expect(report.torch.device).toBe('cpu');
  }, 180_000);

  it('asks for a model directory when sokoban-qwen has none, before any work', async () => {
    await expect(ragen('bench', '--only', 'step,torch', '--presets', 'sokoban-qwen')).rejects.toMatchObject({
      code: 2,
      stderr: expect.stringContaining('--step-set model=DIR'),
    });
  });
});
