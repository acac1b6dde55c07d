import * as fsp from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DEFAULT_SPECIAL_TOKENS,
  Qwen2Model,
  buildTinyTokenizer,
  initBackend,
  initQwen2Weights,
  loadPolicy,
  saveCheckpointDir,
  tokenLogProbs,
  type Qwen2Config,
} from '../../../src/model/index';
import { hfChecks, maxAbsDiff, type HfReport } from '../hf-python';

const tokenizer = buildTinyTokenizer(
  Array(4)
    .fill(['<|im_start|>user\nState:\n#_P_O#\n<|im_end|>\n', '<think>go right</think><answer>Right</answer>'])
    .flat(),
  { vocabSize: 280, specialTokens: DEFAULT_SPECIAL_TOKENS },
);
// initializer_range 0.5 (HF default 0.02) so the tiny model's distribution is far from uniform: a wrong weight
// layout then shows up as clearly different log-probs.
const config: Qwen2Config = {
  model_type: 'qwen2',
  vocab_size: 288,
  hidden_size: 32,
  intermediate_size: 48,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  max_position_embeddings: 256,
  rope_theta: 10000,
  rms_norm_eps: 1e-6,
  tie_word_embeddings: true,
  initializer_range: 0.5,
};
const text = '<|im_start|>assistant\n<think>go right</think><answer>Right</answer><|im_end|>';
const ids = tokenizer.encode(text);

let root: string;
let dir: string;
let direct: number[]; // log-probs computed straight from the in-memory model that was saved
let bf16Dir: string;
let hfReport: HfReport; // transformers on the saved checkpoint
let hfBf16Report: HfReport; // transformers on its bf16 copy

beforeAll(async () => {
  await initBackend('cpu');
  root = await fsp.mkdtemp(path.join(os.tmpdir(), 'policy-test-'));
  dir = path.join(root, 'ckpt');
  const model = new Qwen2Model(config, initQwen2Weights(config, 1234));
  const lp = tf.tidy(() => tokenLogProbs(model, tf.tensor2d([ids], [1, ids.length], 'int32')).logProbs);
  direct = Array.from(await lp.data());
  lp.dispose();
  await saveCheckpointDir(dir, model, tokenizer);
  model.dispose();
  // One Python start (torch + transformers take seconds to import) for three things: transformers' reading of the
  // checkpoint, its bf16 copy written as save_pretrained writes it (after the f32 log-probs are taken), and its
  // reading of that copy.
  bf16Dir = path.join(root, 'bf16');
  [hfReport, hfBf16Report] = hfChecks([
    { model: dir, texts: [text], ids: [ids], save_bf16: bf16Dir },
    { model: bf16Dir, ids: [ids] },
  ]);
});
afterAll(async () => {
  await fsp.rm(root, { recursive: true, force: true });
});

describe('loadPolicy (docs/architecture.md entry)', () => {
  it("gives the saved model's natural-log token log-probs, one per token after the first", async () => {
    const policy = await loadPolicy(dir, { backend: 'cpu' });
    expect(policy.backend.name).toBe('cpu');
    const lp = await policy.tokenLogProbs(ids);
    expect(lp.length).toBe(ids.length - 1);
    expect(lp).toEqual(direct); // same weights, same backend, same ops: identical
    expect(lp.every((x) => x < 0 && Number.isFinite(x))).toBe(true);
    // Far from uniform (which would be log(1/288) everywhere): the weights really are the saved ones.
    expect(Math.max(...lp.map((x) => Math.abs(x + Math.log(288))))).toBeGreaterThan(0.5);
    policy.dispose();
  });

  it('has no side effects: repeatable, no leaked tensors, causal (a prefix scores the same)', async () => {
    const policy = await loadPolicy(dir, { backend: 'cpu' });
    const a = await policy.tokenLogProbs(ids); // the first call also builds the model's RoPE tables (a cache)
    const before = tf.memory().numTensors;
    const b = await policy.tokenLogProbs(ids);
    await policy.tokenLogProbs(ids.slice(0, 3));
    expect(tf.memory().numTensors).toBe(before);
    expect(b).toEqual(a);
    const prefix = await policy.tokenLogProbs(ids.slice(0, 6));
    prefix.forEach((x, i) => expect(x).toBeCloseTo(a[i], 5));
    expect(await policy.tokenLogProbs([ids[0]])).toEqual([]);
    policy.dispose();
  });

  it('saveCheckpoint writes a checkpoint that loads back to the same log-probs', async () => {
    const policy = await loadPolicy(dir, { backend: 'cpu' });
    const again = path.join(root, 'resaved');
    await policy.saveCheckpoint(again);
    policy.dispose();
    expect((await fsp.readdir(again)).sort()).toEqual([
      'config.json',
      'generation_config.json',
      'model.safetensors',
      'tokenizer.json',
      'tokenizer_config.json',
    ]);
    expect(
      Buffer.compare(
        await fsp.readFile(path.join(again, 'model.safetensors')),
        await fsp.readFile(path.join(dir, 'model.safetensors')),
      ),
    ).toBe(0);
    const reloaded = await loadPolicy(again, { backend: 'cpu' });
    expect(await reloaded.tokenLogProbs(ids)).toEqual(direct);
    reloaded.dispose();
  });

  it('rejects bad ids, a disposed policy, a missing directory and a critic checkpoint', async () => {
    const policy = await loadPolicy(dir, { backend: 'cpu' });
    await expect(policy.tokenLogProbs([])).rejects.toThrow(/non-empty/);
    await expect(policy.tokenLogProbs([1, 288])).rejects.toThrow(/ids\[1\] = 288 is not a token id in \[0, 288\)/);
    await expect(policy.tokenLogProbs([1, 2.5])).rejects.toThrow(/ids\[1\] = 2.5/);
    policy.dispose();
    await expect(policy.tokenLogProbs(ids)).rejects.toThrow(/disposed/);
    await expect(loadPolicy(path.join(root, 'missing'), { backend: 'cpu' })).rejects.toThrow(/does not exist/);
    const critic = new Qwen2Model(config, initQwen2Weights(config, 5, { valueHead: true }), { valueHead: true });
    const criticDir = path.join(root, 'critic');
    await saveCheckpointDir(criticDir, critic, tokenizer);
    critic.dispose();
    await expect(loadPolicy(criticDir, { backend: 'cpu' })).rejects.toThrow(/critic \(value head\) checkpoint/);
  });

  it('Hugging Face transformers loads the checkpoint (every weight used), tokenizes to our ids and agrees to 1e-5', () => {
    const report = hfReport;
    expect(report.model_class).toBe('Qwen2ForCausalLM');
    expect(report.load_problems).toEqual({});
    expect(report.token_ids).toEqual([ids]);
    // initializer_range 0.5 puts these log-probs in the tens: float32 sums in another order differ around 1e-5 there
    // (tests/unit/model/hf-interop.test.ts holds a trained policy to 1e-5).
    expect(Math.max(...direct.map(Math.abs))).toBeGreaterThan(5);
    expect(maxAbsDiff(report.log_probs[0], direct)).toBeLessThan(5e-5);
  });

  it('loads a bf16 copy written by Hugging Face save_pretrained (as Qwen2.5 ships) and matches transformers on it', async () => {
    const report = hfBf16Report; // bf16Dir: written in beforeAll
    expect(report.weight_dtypes).toEqual(['torch.bfloat16']);
    const policy = await loadPolicy(bf16Dir, { backend: 'cpu' });
    const lp = await policy.tokenLogProbs(ids);
    expect(maxAbsDiff(lp, report.log_probs[0])).toBeLessThan(5e-5);
    // bf16 rounding changed the weights, so the log-probs moved away from the f32 model's.
    expect(maxAbsDiff(lp, direct)).toBeGreaterThan(1e-4);
    policy.dispose();
  });

  it('runs on wasm with the same log-probs as on cpu', async () => {
    const policy = await loadPolicy(dir, { backend: 'wasm' });
    expect(tf.getBackend()).toBe('wasm');
    const lp = await policy.tokenLogProbs(ids);
    lp.forEach((x, i) => expect(Math.abs(x - direct[i])).toBeLessThan(1e-4));
    policy.dispose();
  });
});
