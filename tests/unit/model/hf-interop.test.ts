// An exported run, loaded by Hugging Face's own libraries (transformers 5.18 + tokenizers, in .venv-hf): the
// directories `ragen export --to ragen` writes load as Qwen2ForCausalLM / Qwen2ForTokenClassification with every
// weight used, tokenize to our ids, render RAGEN's prompt with the chat template exactly as we do, and give our
// log-probs and values to 1e-5, in f32 and in bf16 (whose weights are torch's own bfloat16 rounding of the f32 ones),
// and from a file that mixes the two (as a LoRA checkpoint writes its frozen bf16 base).
// The policy is the shipped bandit-tiny warm start after one StarPO-S step: a trained model, far from uniform, so a
// wrong weight layout would show.
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import * as tf from '@tensorflow/tfjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeEnv } from '../../../envs/index';
import { buildPrompt, compactPromptFixedText, envRegistry } from '../../../src/agent/index';
import { initBackend, loadCheckpointDir, loadPolicy, Qwen2Model } from '../../../src/model/index';
import {
  floatToBf16Bits,
  parseSafetensors,
  serializeSafetensors,
  type SafetensorsInput,
} from '../../../src/model/safetensors';
import { tinyBanditConfig } from '../starpo/trainer-fixture';
import { hfChecks, maxAbsDiff, type HfReport } from '../hf-python';

const run = promisify(execFile);
const BIN = path.resolve('bin/ragen.js');
const WARM_START = path.resolve('public/warmstart/bandit-tiny');
let tmp: string;
let texts: string[];
let ids: number[][];
let ragenPrompt: ReturnType<typeof buildPrompt>;
let f32: HfReport;
let bf16: HfReport;
let mixed: HfReport;

async function ragen(...args: string[]): Promise<void> {
  await run(process.execPath, [BIN, ...args], { cwd: tmp, timeout: 180_000 });
}

beforeAll(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'hf-interop-'));
  await initBackend('cpu');
  const config = tinyBanditConfig({ trainer: { totalSteps: 1, saveFreq: 1, testFreq: 0, valBeforeTrain: false } });
  fs.writeFileSync(
    path.join(tmp, 'run.json'),
    JSON.stringify({ ...config, model: { ...config.model, path: WARM_START } }),
  );
  await ragen('train', '--config', 'run.json', '--out', 'run', '--backend', 'wasm');
  await ragen('export', '--run', 'run', '--to', 'ragen', '--quiet', 'f32');
  await ragen('export', '--run', 'run', '--to', 'ragen', '--dtype', 'bf16', '--quiet', 'bf16');

  const registry = envRegistry();
  const bandit = makeEnv('Bandit');
  const lake = makeEnv('FrozenLake');
  // What the policy reads and writes: its compact Bandit prompt and answers, RAGEN's own prompt (FrozenLake's board
  // has '√' and multi-line grids), reward messages, numbers and runs of whitespace.
  texts = [
    compactPromptFixedText(registry.promptInfo('Bandit')) + bandit.reset(5),
    '<|im_start|>assistant\n<think>Dragon is the risky arm; it may pay 1.</think><answer>Dragon</answer><|im_end|>\n',
    `Turn 2:\nState:\n${lake.reset(123)}\nReward:\n0.1\n\n  P  √  X\t_\n`,
    'You have 10 actions left. Always output: <think> [Your thoughts] </think> <answer> [your answer] </answer>',
  ];
  ragenPrompt = buildPrompt(registry.promptInfo('FrozenLake'), [{ state: lake.reset(7), actionsLeft: 10 }], {
    style: 'ragen',
    mode: 'generation',
  });
  const policy = await loadPolicy(path.join(tmp, 'f32/qwen2-policy'), { backend: 'cpu' });
  ids = [...texts, ragenPrompt.text].map((t) => policy.tokenizer.encode(t));
  policy.dispose();
  const request = { texts: [...texts, ragenPrompt.text], ids, messages: ragenPrompt.messages };
  // A file that mixes dtypes, as a LoRA checkpoint's frozen bf16 base beside float32 tensors is written
  // (src/model/checkpoint.ts): the f32 export with its layer-0 weights rounded to bfloat16 and written so.
  fs.cpSync(path.join(tmp, 'f32/qwen2-policy'), path.join(tmp, 'mixed/qwen2-policy'), { recursive: true });
  const weightsFile = path.join(tmp, 'mixed/qwen2-policy/model.safetensors');
  const { tensors, metadata } = parseSafetensors(new Uint8Array(fs.readFileSync(weightsFile)));
  const rewritten: Record<string, SafetensorsInput> = {};
  for (const [name, t] of Object.entries(tensors)) {
    const bits = new Uint32Array(t.data.buffer, t.data.byteOffset, t.data.length);
    if (name.startsWith('model.layers.0.'))
      for (let i = 0; i < bits.length; i++) bits[i] = (floatToBf16Bits(bits[i]) << 16) >>> 0;
    rewritten[name] = {
      shape: t.shape,
      data: t.data,
      ...(name.startsWith('model.layers.0.') ? { writeAs: 'BF16' as const } : {}),
    };
  }
  fs.writeFileSync(weightsFile, serializeSafetensors(rewritten, metadata));
  [f32, bf16, mixed] = hfChecks([
    { ...request, model: path.join(tmp, 'f32/qwen2-policy'), critic: path.join(tmp, 'f32/qwen2-critic') },
    { ...request, model: path.join(tmp, 'bf16/qwen2-policy'), bf16_of: path.join(tmp, 'f32/qwen2-policy') },
    { model: path.join(tmp, 'mixed/qwen2-policy'), ids },
  ]);
}, 600_000);

afterAll(() => {
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

describe('an exported run in Hugging Face transformers and tokenizers', () => {
  it('loads as Qwen2ForCausalLM with every weight used, and RAGEN finds its chat-turn tokens', () => {
    expect(f32.versions.transformers).toMatch(/^5\./);
    expect(f32.model_class).toBe('Qwen2ForCausalLM');
    expect(f32.load_problems).toEqual({});
    expect(f32.tokenizer_class).toBe('Qwen2Tokenizer');
    expect(f32.tokenizer_is_fast).toBe(true); // the Rust `tokenizers` library, reading our tokenizer.json
    expect(f32.weight_dtypes).toEqual(['torch.float32']);
    const tokenizer = JSON.parse(fs.readFileSync(path.join(tmp, 'f32/qwen2-policy/tokenizer.json'), 'utf8')) as {
      added_tokens: { id: number; content: string }[];
    };
    const idOf = (s: string) => tokenizer.added_tokens.find((t) => t.content === s)!.id;
    expect(f32.ragen_special_tokens).toEqual({ im_start: idOf('<|im_start|>'), im_end: idOf('<|im_end|>') });
  });

  it('tokenizes to our token ids', () => {
    expect(ids.every((x) => x.length > 10)).toBe(true);
    expect(f32.token_ids).toEqual(ids);
    expect(bf16.token_ids).toEqual(ids);
  });

  it("renders RAGEN's prompt with the chat template exactly as we do (then RAGEN appends <think>)", () => {
    expect(f32.chat! + '<think>').toBe(ragenPrompt.text);
  });

  it('gives our log-probs to 1e-5 (f32)', async () => {
    const policy = await loadPolicy(path.join(tmp, 'f32/qwen2-policy'), { backend: 'cpu' });
    for (const [i, seq] of ids.entries()) {
      const ours = await policy.tokenLogProbs(seq);
      expect(ours.length).toBe(seq.length - 1);
      expect(maxAbsDiff(ours, f32.log_probs[i]), `text ${i}`).toBeLessThan(1e-5);
    }
    // A trained policy, far from uniform: a layout error could not hide in near-equal probabilities.
    const spread = f32.log_probs.flat();
    expect(Math.max(...spread) - Math.min(...spread)).toBeGreaterThan(5);
    policy.dispose();
  });

  it("bf16: the weights are torch's bfloat16 rounding of the f32 export, and the log-probs agree to 1e-5", async () => {
    expect(bf16.torch_dtype).toBe('bfloat16');
    expect(bf16.weight_dtypes).toEqual(['torch.bfloat16']);
    expect(bf16.bf16_tensors).toBeGreaterThan(10);
    expect(bf16.bf16_mismatches).toEqual([]);
    expect(bf16.model_class).toBe('Qwen2ForCausalLM');
    const policy = await loadPolicy(path.join(tmp, 'bf16/qwen2-policy'), { backend: 'cpu' });
    for (const [i, seq] of ids.entries())
      expect(maxAbsDiff(await policy.tokenLogProbs(seq), bf16.log_probs[i]), `text ${i}`).toBeLessThan(1e-5);
    policy.dispose();
    // Rounding to bf16 really changed the model (the check above is not comparing f32 with itself).
    expect(Math.max(...bf16.log_probs.map((lp, i) => maxAbsDiff(lp, f32.log_probs[i])))).toBeGreaterThan(1e-4);
  });

  it("a file mixing bf16 and f32 tensors (a LoRA checkpoint's bf16 base) loads whole, with our log-probs to 2e-5", async () => {
    expect(mixed.load_problems).toEqual({});
    expect(mixed.weight_dtypes).toEqual(['torch.bfloat16', 'torch.float32']);
    const policy = await loadPolicy(path.join(tmp, 'mixed/qwen2-policy'), { backend: 'cpu' });
    // 2e-5: the largest differences are 7 and 11 float32 ulps of 2^-20 (the ulp at magnitudes 8-16), 0.67e-5 and
    // 1.05e-5, for the models the run above trains on wasm with the SIMD128 kernels and with relaxed SIMD's.
    for (const [i, seq] of ids.entries()) {
      expect(maxAbsDiff(await policy.tokenLogProbs(seq), mixed.log_probs[i]), `text ${i}`).toBeLessThan(2e-5);
    }
    policy.dispose();
    // The rounding changed the model: the bf16 tensors were read as written, not replaced by the f32 ones.
    expect(Math.max(...mixed.log_probs.map((lp, i) => maxAbsDiff(lp, f32.log_probs[i])))).toBeGreaterThan(1e-5);
  });

  it('the critic loads as Qwen2ForTokenClassification and gives our values to 1e-5', async () => {
    expect(f32.critic_class).toBe('Qwen2ForTokenClassification');
    expect(f32.critic_load_problems).toEqual({});
    const ckpt = await loadCheckpointDir(path.join(tmp, 'f32/qwen2-critic'));
    expect(ckpt.valueHead).toBe(true);
    const critic = new Qwen2Model(ckpt.config, ckpt.weights, { valueHead: true });
    for (const [i, seq] of ids.entries()) {
      const v = critic.forward(tf.tensor2d([seq], [1, seq.length], 'int32'));
      const ours = Array.from(await v.data());
      v.dispose();
      expect(maxAbsDiff(ours, f32.values![i]), `text ${i}`).toBeLessThan(1e-5);
    }
    critic.dispose();
  });
});
