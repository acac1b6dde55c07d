// `ragen init-model`: a randomly initialised Qwen2.5-0.5B-Instruct directory (here cut to 2 layers; vocabulary and
// widths are Qwen's) that both Hugging Face (transformers 5.18 + tokenizers, .venv-hf) and our loader read as the
// real model: Qwen's config.json, bf16 weights, Qwen's byte-level BPE ids and special tokens, the chat template that
// renders RAGEN's Sokoban prompt as we do, and the same log-probs.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeEnv } from '../../../envs/index';
import { buildPrompt, envRegistry } from '../../../src/agent/index';
import { initBackend, loadPolicy } from '../../../src/model/index';
import { QWEN_SHAPES } from '../../../src/model/qwenShapes';
import { indexSafetensors } from '../../../src/model/safetensors';
import { hfCheck, maxAbsDiff, type HfReport } from '../hf-python';
import { expectRefused, ragen as inProcess } from '../cli/cli-fixture';
import { qwenInitModel2Layers } from '../sharedFixtures';

let tmp: string;
let dir: string;
let ids: number[][];
let texts: string[];
let ragenPrompt: ReturnType<typeof buildPrompt>;
let hf: HfReport;
let ours: number[][];

beforeAll(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'init-model-'));
  // `ragen init-model --shape qwen2.5-0.5b --layers 2 --out DIR --quiet`, made once per run and shared with
  // train-qwen-shape.test.ts (only read here).
  const shared = await qwenInitModel2Layers();
  dir = shared.dir;
  expect({ code: shared.made.code, stderr: shared.made.stderr }).toEqual({ code: 0, stderr: '' });

  await initBackend('wasm');
  const sokoban = makeEnv('SimpleSokoban');
  ragenPrompt = buildPrompt(
    envRegistry().promptInfo('SimpleSokoban'),
    [{ state: sokoban.reset(42), actionsLeft: 10 }],
    { style: 'ragen', mode: 'generation' },
  );
  texts = [
    'Hello, world!',
    '<|im_start|>assistant\n<think>The box is left of the target; push it right.</think><answer>Right || Up</answer><|im_end|>\n',
    `Turn 1:\nState:\n${sokoban.render()}\nYou have 10 actions left.`,
  ];
  const policy = await loadPolicy(dir, { backend: 'wasm' });
  ids = texts.map((t) => policy.tokenizer.encode(t));
  ours = [];
  for (const seq of ids) ours.push(await policy.tokenLogProbs(seq));
  policy.dispose();
  hf = hfCheck({ model: dir, texts, ids, messages: ragenPrompt.messages });
}, 600_000);

afterAll(() => {
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

describe('ragen init-model --shape qwen2.5-0.5b --layers 2', () => {
  it("writes Qwen2.5-0.5B-Instruct's config.json, with only the layer count changed, and bf16 weights", () => {
    const config = JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8'));
    expect(config).toEqual({ ...QWEN_SHAPES['qwen2.5-0.5b'], num_hidden_layers: 2 });
    expect(config).toMatchObject({
      vocab_size: 151936,
      hidden_size: 896,
      intermediate_size: 4864,
      num_attention_heads: 14,
      num_key_value_heads: 2,
      tie_word_embeddings: true,
      rope_theta: 1000000,
      torch_dtype: 'bfloat16',
    });
    const bytes = fs.readFileSync(path.join(dir, 'model.safetensors'));
    const { entries } = indexSafetensors(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength));
    expect(new Set(Object.values(entries).map((e) => e.dtype))).toEqual(new Set(['BF16']));
    expect(entries['model.embed_tokens.weight'].shape).toEqual([151936, 896]);
    expect(entries['lm_head.weight']).toBeUndefined(); // tied, as Qwen ships it
    // HF's initialisation: normal(0, 0.02) matrices, unit norms, zero biases.
    const embed = entries['model.embed_tokens.weight'].read().subarray(0, 100_000);
    const mean = embed.reduce((s, x) => s + x, 0) / embed.length;
    const std = Math.sqrt(embed.reduce((s, x) => s + (x - mean) ** 2, 0) / embed.length);
    expect(Math.abs(mean)).toBeLessThan(1e-3);
    expect(std).toBeGreaterThan(0.0195);
    expect(std).toBeLessThan(0.0205);
    expect([...entries['model.norm.weight'].read()].every((x) => x === 1)).toBe(true);
    expect([...entries['model.layers.0.self_attn.q_proj.bias'].read()].every((x) => x === 0)).toBe(true);
  });

  it("tokenizes with Qwen's vocabulary: known ids, special tokens at their real ids, the same ids in Hugging Face", () => {
    expect(ids[0]).toEqual([9707, 11, 1879, 0]); // "Hello" "," " world" "!" in Qwen2/2.5/3's vocabulary
    expect(ids[1].slice(0, 2)).toEqual([151644, 77091]); // <|im_start|> "assistant"
    expect(ids[1].at(-2)).toBe(151645); // <|im_end|>
    expect(hf.tokenizer_class).toBe('Qwen2Tokenizer');
    expect(hf.tokenizer_is_fast).toBe(true);
    expect(hf.token_ids).toEqual(ids);
    expect(hf.ragen_special_tokens).toEqual({ im_start: 151644, im_end: 151645 });
    const config = JSON.parse(fs.readFileSync(path.join(dir, 'tokenizer_config.json'), 'utf8'));
    expect(config.eos_token).toBe('<|im_end|>');
    expect(config.pad_token).toBe('<|endoftext|>');
    expect(config.added_tokens_decoder['151643'].content).toBe('<|endoftext|>');
    expect(config.added_tokens_decoder['151664'].content).toBe('<|file_sep|>');
    expect(config.added_tokens_decoder['151665']).toBeUndefined(); // Qwen3's <tool_response> is not Qwen2.5's
  });

  it("renders RAGEN's Sokoban prompt with Qwen2.5's chat template exactly as we do", () => {
    expect(hf.chat! + '<think>').toBe(ragenPrompt.text);
  });

  it('loads in transformers as Qwen2ForCausalLM with every weight used, and gives our log-probs (wasm) to 1e-4', () => {
    expect(hf.model_class).toBe('Qwen2ForCausalLM');
    expect(hf.load_problems).toEqual({});
    expect(hf.torch_dtype).toBe('bfloat16');
    expect(hf.weight_dtypes).toEqual(['torch.bfloat16']);
    for (const [i, seq] of ids.entries()) {
      expect(ours[i].length).toBe(seq.length - 1);
      expect(maxAbsDiff(ours[i], hf.log_probs[i]), `text ${i}`).toBeLessThan(1e-4);
    }
    // Random weights, but not a uniform model: a wrong layout would show in log-probs this far apart.
    const all = hf.log_probs.flat();
    expect(Math.max(...all) - Math.min(...all)).toBeGreaterThan(1);
  });

  // Through main() in this process: each is refused before any weight is made.
  it('refuses a bad shape, a bad layer count and an --out that is not a model directory (exit 2, one line)', async () => {
    const x = path.join(tmp, 'x');
    expectRefused(
      await inProcess('init-model', '--shape', 'qwen2.5-1.5b', '--out', x),
      /^ragen: --shape qwen2.5-1.5b: unknown shape \(expected: qwen2.5-0.5b, qwen2.5-3b\)$/,
    );
    expectRefused(
      await inProcess('init-model', '--shape', 'qwen2.5-0.5b', '--layers', '0', '--out', x),
      /^ragen: --layers must be an integer >= 1, got '0'$/,
    );
    const notes = path.join(tmp, 'notes');
    fs.mkdirSync(notes);
    fs.writeFileSync(path.join(notes, 'keep.txt'), 'mine');
    expectRefused(
      await inProcess('init-model', '--shape', 'qwen2.5-0.5b', '--layers', '1', '--out', notes),
      /^ragen: --out .*notes is not empty \(keep\.txt\) and was not written by init-model/,
    );
    expect(fs.readdirSync(notes)).toEqual(['keep.txt']);
    expect(fs.readFileSync(path.join(notes, 'keep.txt'), 'utf8')).toBe('mine');
    expect(fs.existsSync(x)).toBe(false);
  });
});
