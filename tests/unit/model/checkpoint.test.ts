import * as fsp from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkpointFiles, loadCheckpointFiles, type CheckpointableModel } from '../../../src/model/checkpoint';
import { loadCheckpointDir, saveCheckpointDir } from '../../../src/model/checkpointDir';
import type { Qwen2Config } from '../../../src/model/config';
import {
  Qwen2Model,
  qwen2VariableShapes,
  qwen2WeightShapes,
  splitStackedWeights,
  stackHfWeights,
} from '../../../src/model/qwen2';
import { parseSafetensors, serializeSafetensors } from '../../../src/model/safetensors';
import { DEFAULT_SPECIAL_TOKENS, buildTinyTokenizer } from '../../../src/model/tokenizer';

const tokenizer = buildTinyTokenizer(
  ['<think>push the box right</think><answer>Right</answer>', 'State:\n#_P_O#\nYou have 2 actions left.'].flatMap(
    (s) => [s, s, s],
  ),
  { vocabSize: 280, specialTokens: DEFAULT_SPECIAL_TOKENS },
);

function tinyConfig(overrides: Partial<Qwen2Config> = {}): Qwen2Config {
  return {
    model_type: 'qwen2',
    vocab_size: 288,
    hidden_size: 16,
    intermediate_size: 24,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    max_position_embeddings: 128,
    rope_theta: 10000,
    rms_norm_eps: 1e-6,
    tie_word_embeddings: true,
    ...overrides,
  };
}

/** A model-shaped object (config + named variables): the checkpoint code needs nothing else from a model. */
function randomModel(config: Qwen2Config, seed = 1, valueHead = false): CheckpointableModel {
  const variables: Record<string, tf.Variable> = {};
  let s = seed;
  for (const [name, shape] of Object.entries(qwen2WeightShapes(config, { valueHead }))) {
    const init = tf.randomNormal(shape, 0, 0.5, 'float32', s++);
    variables[name] = tf.variable(init); // unnamed: tfjs variable names are process-global
    init.dispose();
  }
  return { config, variables, hasValueHead: valueHead };
}

function disposeModel(m: CheckpointableModel) {
  for (const v of Object.values(m.variables)) v.dispose();
}

function bits(t: tf.Tensor | Float32Array): number[] {
  const d = t instanceof Float32Array ? t : (t.dataSync() as Float32Array);
  return Array.from(new Uint32Array(d.buffer, d.byteOffset, d.length));
}

const text = (b: Uint8Array) => new TextDecoder().decode(b);
const bytes = (o: unknown) => new TextEncoder().encode(JSON.stringify(o));

beforeAll(async () => {
  await tf.setBackend('cpu');
});

describe('checkpoint files', () => {
  it('round-trips weights bit-exactly, with config and tokenizer', async () => {
    const model = randomModel(tinyConfig());
    const files = await checkpointFiles(model, tokenizer);
    expect(Object.keys(files).sort()).toEqual([
      'config.json',
      'generation_config.json',
      'model.safetensors',
      'tokenizer.json',
      'tokenizer_config.json',
    ]);
    const before = tf.memory().numTensors;
    const loaded = loadCheckpointFiles(files);
    expect(tf.memory().numTensors - before).toBe(Object.keys(model.variables).length);
    expect(Object.keys(loaded.weights).sort()).toEqual(Object.keys(model.variables).sort());
    for (const [name, v] of Object.entries(model.variables)) {
      expect(loaded.weights[name].shape, name).toEqual(v.shape);
      expect(bits(loaded.weights[name]), name).toEqual(bits(v));
    }
    expect(loaded.valueHead).toBe(false);
    expect(loaded.unusedWeights).toEqual([]);
    for (const key of [
      'vocab_size',
      'hidden_size',
      'num_key_value_heads',
      'rope_theta',
      'tie_word_embeddings',
    ] as const) {
      expect(loaded.config[key]).toEqual(model.config[key]);
    }
    const sample = '<|im_start|>assistant\n<think>push</think><answer>Right</answer><|im_end|>';
    expect(loaded.tokenizer.encode(sample)).toEqual(tokenizer.encode(sample));
    expect(loaded.generationConfig?.pad_token_id).toBe(tokenizer.tokenId('<|endoftext|>'));
    Object.values(loaded.weights).forEach((t) => t.dispose());
    disposeModel(model);
  });

  it('writes the tensor names and shapes of Hugging Face Qwen2ForCausalLM (tied: no lm_head)', async () => {
    const model = randomModel(tinyConfig());
    const { tensors, metadata } = parseSafetensors((await checkpointFiles(model, tokenizer))['model.safetensors']);
    expect(metadata).toEqual({ format: 'pt' });
    // Written out by hand from transformers' modeling_qwen2.py module tree.
    const layer0 = [
      'input_layernorm.weight',
      'mlp.down_proj.weight',
      'mlp.gate_proj.weight',
      'mlp.up_proj.weight',
      'post_attention_layernorm.weight',
      'self_attn.k_proj.bias',
      'self_attn.k_proj.weight',
      'self_attn.o_proj.weight',
      'self_attn.q_proj.bias',
      'self_attn.q_proj.weight',
      'self_attn.v_proj.bias',
      'self_attn.v_proj.weight',
    ];
    const names = Object.keys(tensors);
    expect(
      names
        .filter((n) => n.startsWith('model.layers.0.'))
        .map((n) => n.slice(15))
        .sort(),
    ).toEqual(layer0);
    expect(names.length).toBe(1 + 2 * 12 + 1);
    expect(names).toContain('model.embed_tokens.weight');
    expect(names).toContain('model.norm.weight');
    expect(names).not.toContain('lm_head.weight');
    // hidden 16, 4 heads -> head_dim 4; 2 KV heads -> k/v out 8; Linear weights are [out, in].
    expect(tensors['model.embed_tokens.weight'].shape).toEqual([288, 16]);
    expect(tensors['model.layers.1.self_attn.q_proj.weight'].shape).toEqual([16, 16]);
    expect(tensors['model.layers.1.self_attn.k_proj.weight'].shape).toEqual([8, 16]);
    expect(tensors['model.layers.1.self_attn.v_proj.bias'].shape).toEqual([8]);
    expect(tensors['model.layers.1.self_attn.o_proj.weight'].shape).toEqual([16, 16]);
    expect(tensors['model.layers.1.mlp.gate_proj.weight'].shape).toEqual([24, 16]);
    expect(tensors['model.layers.1.mlp.down_proj.weight'].shape).toEqual([16, 24]);
    disposeModel(model);
  });

  it('writes config.json the way HF Qwen2Config does (sorted keys, float32, architectures, token ids)', async () => {
    const model = randomModel(tinyConfig());
    const files = await checkpointFiles(model, tokenizer);
    const cfg = JSON.parse(text(files['config.json']));
    expect(Object.keys(cfg)).toEqual([...Object.keys(cfg)].sort());
    expect(cfg).toMatchObject({
      architectures: ['Qwen2ForCausalLM'],
      model_type: 'qwen2',
      torch_dtype: 'float32',
      hidden_act: 'silu',
      vocab_size: 288,
      hidden_size: 16,
      intermediate_size: 24,
      num_hidden_layers: 2,
      num_attention_heads: 4,
      num_key_value_heads: 2,
      max_position_embeddings: 128,
      tie_word_embeddings: true,
      rope_scaling: null,
      use_sliding_window: false,
      use_cache: true,
      bos_token_id: tokenizer.tokenId('<|endoftext|>'),
      eos_token_id: tokenizer.tokenId('<|im_end|>'),
    });
    const gen = JSON.parse(text(files['generation_config.json']));
    expect(gen.eos_token_id).toEqual([tokenizer.tokenId('<|im_end|>'), tokenizer.tokenId('<|endoftext|>')]);
    const tokCfg = JSON.parse(text(files['tokenizer_config.json']));
    expect(tokCfg.chat_template).toContain('<|im_start|>');
    expect(tokCfg.eos_token).toBe('<|im_end|>');
    disposeModel(model);
  });

  it('keeps lm_head for an untied model, and score.* for a critic (value head)', async () => {
    const untied = randomModel(tinyConfig({ tie_word_embeddings: false }), 7);
    const loaded = loadCheckpointFiles(await checkpointFiles(untied, tokenizer));
    expect(bits(loaded.weights['lm_head.weight'])).toEqual(bits(untied.variables['lm_head.weight']));
    Object.values(loaded.weights).forEach((t) => t.dispose());
    disposeModel(untied);

    const critic = randomModel(tinyConfig(), 9, true);
    const files = await checkpointFiles(critic, tokenizer);
    const cfg = JSON.parse(text(files['config.json']));
    expect(cfg.architectures).toEqual(['Qwen2ForTokenClassification']);
    expect(cfg.id2label).toEqual({ 0: 'LABEL_0' });
    const c = loadCheckpointFiles(files);
    expect(c.valueHead).toBe(true);
    expect(c.weights['score.weight'].shape).toEqual([1, 16]);
    expect(bits(c.weights['score.bias'])).toEqual(bits(critic.variables['score.bias']));
    expect(c.weights['lm_head.weight']).toBeUndefined();
    Object.values(c.weights).forEach((t) => t.dispose());
    disposeModel(critic);
  });

  it('loads a bf16 checkpoint as Hugging Face ships Qwen2.5 (tied, no lm_head, extra keys in config.json)', async () => {
    const config = tinyConfig();
    const shapes = qwen2WeightShapes(config);
    // Values k/16 in [-2, 2) are exact in bf16, so the expected f32 values are known without any rounding.
    const data: Uint8Array[] = [];
    const header: Record<string, unknown> = { __metadata__: { format: 'pt' } };
    const expected: Record<string, number[]> = {};
    let offset = 0;
    let k = 0;
    for (const name of Object.keys(shapes).sort()) {
      const n = shapes[name].reduce((a, b) => a * b, 1);
      const vals = Array.from({ length: n }, () => ((k++ * 7) % 64) / 16 - 2);
      expected[name] = vals;
      const f32 = new Float32Array(vals);
      const u32 = new Uint32Array(f32.buffer);
      const b = new Uint8Array(2 * n);
      u32.forEach((w, i) => {
        b[2 * i] = (w >>> 16) & 0xff;
        b[2 * i + 1] = w >>> 24;
      });
      header[name] = { dtype: 'BF16', shape: shapes[name], data_offsets: [offset, offset + b.length] };
      offset += b.length;
      data.push(b);
    }
    const json = new TextEncoder().encode(JSON.stringify(header));
    const file = new Uint8Array(8 + json.length + offset);
    new DataView(file.buffer).setBigUint64(0, BigInt(json.length), true);
    file.set(json, 8);
    let at = 8 + json.length;
    for (const b of data) {
      file.set(b, at);
      at += b.length;
    }

    const hfConfig = {
      ...config,
      architectures: ['Qwen2ForCausalLM'],
      torch_dtype: 'bfloat16',
      sliding_window: 32768,
      max_window_layers: 21,
      use_sliding_window: false,
      transformers_version: '4.43.1',
      bos_token_id: 151643,
    };
    const files = await checkpointFiles(randomModel(config), tokenizer);
    files['config.json'] = bytes(hfConfig);
    files['model.safetensors'] = file;
    const loaded = loadCheckpointFiles(files);
    for (const name of Object.keys(shapes)) {
      expect(Array.from(loaded.weights[name].dataSync()), name).toEqual(expected[name]);
    }
    expect(loaded.config.torch_dtype).toBe('bfloat16');
    expect(loaded.config.sliding_window).toBe(32768); // extra HF keys are kept
    Object.values(loaded.weights).forEach((t) => t.dispose());
  });

  it('ignores (and reports) an lm_head stored in a tied checkpoint', async () => {
    const config = tinyConfig();
    const model = randomModel(config);
    const files = await checkpointFiles(model, tokenizer);
    const { tensors } = parseSafetensors(files['model.safetensors']);
    tensors['lm_head.weight'] = { dtype: 'F32', shape: [288, 16], data: new Float32Array(288 * 16) };
    files['model.safetensors'] = serializeSafetensors(tensors);
    const loaded = loadCheckpointFiles(files);
    expect(loaded.unusedWeights).toEqual(['lm_head.weight']);
    expect(loaded.weights['lm_head.weight']).toBeUndefined();
    Object.values(loaded.weights).forEach((t) => t.dispose());
    disposeModel(model);
  });

  it('follows model.safetensors.index.json to sharded weights', async () => {
    const model = randomModel(tinyConfig());
    const files = await checkpointFiles(model, tokenizer);
    const { tensors } = parseSafetensors(files['model.safetensors']);
    delete files['model.safetensors'];
    const names = Object.keys(tensors).sort();
    const shards = [names.slice(0, 10), names.slice(10)];
    const weightMap: Record<string, string> = {};
    shards.forEach((group, i) => {
      const shard = `model-0000${i + 1}-of-00002.safetensors`;
      files[shard] = serializeSafetensors(Object.fromEntries(group.map((n) => [n, tensors[n]])));
      for (const n of group) weightMap[n] = shard;
    });
    files['model.safetensors.index.json'] = bytes({ metadata: {}, weight_map: weightMap });
    const loaded = loadCheckpointFiles(files);
    for (const n of names) expect(bits(loaded.weights[n])).toEqual(bits(tensors[n].data));
    Object.values(loaded.weights).forEach((t) => t.dispose());
    delete files['model-00002-of-00002.safetensors'];
    expect(() => loadCheckpointFiles(files)).toThrow(/shard 'model-00002-of-00002.safetensors'.*missing/);
    disposeModel(model);
  });
});

describe('broken checkpoints give errors that name the problem, and create no tensors', () => {
  let good: Record<string, Uint8Array>;
  let model: CheckpointableModel;
  beforeAll(async () => {
    model = randomModel(tinyConfig());
    good = await checkpointFiles(model, tokenizer);
  });
  afterAll(() => disposeModel(model));

  const broken = (change: (f: Record<string, Uint8Array>) => void) => {
    const f = { ...good };
    change(f);
    const before = tf.memory().numTensors;
    let message = '';
    try {
      loadCheckpointFiles(f);
    } catch (err) {
      message = (err as Error).message;
    }
    expect(tf.memory().numTensors).toBe(before);
    return message;
  };
  const config = () => JSON.parse(text(good['config.json']));
  const weights = () => parseSafetensors(good['model.safetensors']).tensors;

  it('missing files', () => {
    expect(broken((f) => delete f['config.json'])).toMatch(/config.json is missing/);
    expect(broken((f) => delete f['model.safetensors'])).toMatch(/model.safetensors is missing/);
    expect(broken((f) => delete f['tokenizer.json'])).toMatch(/tokenizer.json is missing/);
  });

  it('a config.json that is not Qwen2 or not valid', () => {
    expect(
      broken((f) => {
        f['config.json'] = bytes({ ...config(), model_type: 'llama' });
      }),
    ).toMatch(/model_type is "llama", expected "qwen2"/);
    expect(
      broken((f) => {
        f['config.json'] = new TextEncoder().encode('{"model_type": "qwen2",');
      }),
    ).toMatch(/config.json is not valid JSON/);
    const { hidden_size: _drop, ...noHidden } = config();
    expect(
      broken((f) => {
        f['config.json'] = bytes(noHidden);
      }),
    ).toMatch(/missing "hidden_size"/);
    expect(
      broken((f) => {
        f['config.json'] = bytes({ ...config(), num_key_value_heads: 3 });
      }),
    ).toMatch(/num_attention_heads 4 is not divisible by num_key_value_heads 3/);
    expect(
      broken((f) => {
        f['config.json'] = bytes({ ...config(), rope_scaling: { type: 'yarn', factor: 4 } });
      }),
    ).toMatch(/rope_scaling .* is not supported/);
  });

  it('a missing or mis-shaped weight is named', () => {
    expect(
      broken((f) => {
        const t = weights();
        delete t['model.layers.1.self_attn.q_proj.weight'];
        f['model.safetensors'] = serializeSafetensors(t);
      }),
    ).toMatch(/no tensor 'model.layers.1.self_attn.q_proj.weight' \(expected shape \[16,16\]/);
    expect(
      broken((f) => {
        const t = weights();
        t['model.layers.0.mlp.up_proj.weight'] = { dtype: 'F32', shape: [16, 24], data: new Float32Array(16 * 24) };
        f['model.safetensors'] = serializeSafetensors(t);
      }),
    ).toMatch(/tensor 'model.layers.0.mlp.up_proj.weight' has shape \[16,24\] but config.json implies \[24,16\]/);
    // An untied config needs lm_head.weight, which this (tied) file does not have.
    expect(
      broken((f) => {
        f['config.json'] = bytes({ ...config(), tie_word_embeddings: false });
      }),
    ).toMatch(/no tensor 'lm_head.weight'/);
  });

  it('a truncated or mislabelled model.safetensors', () => {
    expect(
      broken((f) => {
        f['model.safetensors'] = good['model.safetensors'].subarray(0, good['model.safetensors'].length - 100);
      }),
    ).toMatch(/model.safetensors: safetensors: truncated file: tensor '/);
    expect(
      broken((f) => {
        f['model.safetensors'] = good['model.safetensors'].subarray(0, 4);
      }),
    ).toMatch(/model.safetensors: .*truncated/);
  });

  it('a tokenizer larger than the model vocabulary', () => {
    expect(
      broken((f) => {
        f['config.json'] = bytes({ ...config(), vocab_size: 100 });
      }),
    ).toMatch(/no tensor|has shape/); // the embedding shape check fires first ...
    const letters = 'abcdefghijklmnopqrstuvwxyz';
    const pairs = [...letters].flatMap((a) => [...letters].map((b) => `${a}${b}${a}${b}`)); // 676 pairs, each seen twice
    const big = buildTinyTokenizer(pairs, { vocabSize: 300, specialTokens: DEFAULT_SPECIAL_TOKENS });
    expect(big.vocabSize).toBe(300);
    expect(
      broken((f) => {
        f['tokenizer.json'] = bytes(big.toJSON());
      }),
    ).toMatch(/tokenizer.json has 300 ids but config.json's vocab_size is 288/); // ... and this one with a bigger tokenizer
  });
});

describe('checkpoint directories (Node)', () => {
  let root: string;
  beforeAll(async () => {
    root = await fsp.mkdtemp(path.join(os.tmpdir(), 'ckpt-test-'));
  });
  afterAll(async () => {
    await fsp.rm(root, { recursive: true, force: true });
  });

  it('saves, loads, and replaces a checkpoint atomically', async () => {
    const dir = path.join(root, 'run', 'checkpoints', 'step-1');
    const a = randomModel(tinyConfig(), 11);
    await saveCheckpointDir(dir, a, tokenizer);
    expect((await fsp.readdir(dir)).sort()).toEqual([
      'config.json',
      'generation_config.json',
      'model.safetensors',
      'tokenizer.json',
      'tokenizer_config.json',
    ]);
    const la = await loadCheckpointDir(dir);
    expect(bits(la.weights['model.norm.weight'])).toEqual(bits(a.variables['model.norm.weight']));
    Object.values(la.weights).forEach((t) => t.dispose());

    const b = randomModel(tinyConfig(), 99);
    await saveCheckpointDir(dir, b, tokenizer);
    const lb = await loadCheckpointDir(dir);
    expect(bits(lb.weights['model.norm.weight'])).toEqual(bits(b.variables['model.norm.weight']));
    Object.values(lb.weights).forEach((t) => t.dispose());
    expect(await fsp.readdir(path.dirname(dir))).toEqual(['step-1']); // no temp or old directories left behind
    disposeModel(a);
    disposeModel(b);
  });

  it('a failed save leaves the previous checkpoint intact and no temp directory', async () => {
    const dir = path.join(root, 'keep');
    const a = randomModel(tinyConfig(), 3);
    await saveCheckpointDir(dir, a, tokenizer);
    const before = await fsp.readFile(path.join(dir, 'model.safetensors'));
    const bad = randomModel(tinyConfig(), 4);
    bad.variables['model.layers.0.self_attn.k_proj.bias'].dispose();
    delete bad.variables['model.layers.0.self_attn.k_proj.bias'];
    await expect(saveCheckpointDir(dir, bad, tokenizer)).rejects.toThrow(
      /no weight 'model.layers.0.self_attn.k_proj.bias'/,
    );
    expect(Buffer.compare(await fsp.readFile(path.join(dir, 'model.safetensors')), before)).toBe(0);
    expect(await fsp.readdir(root)).not.toContainEqual(expect.stringMatching(/keep\.(tmp|old)-/));
    disposeModel(a);
    disposeModel(bad);
  });

  it('loading a broken directory explains why and deletes nothing', async () => {
    const dir = path.join(root, 'broken');
    const a = randomModel(tinyConfig(), 5);
    await saveCheckpointDir(dir, a, tokenizer);
    const full = await fsp.readFile(path.join(dir, 'model.safetensors'));
    await fsp.writeFile(path.join(dir, 'model.safetensors'), full.subarray(0, full.length - 64));
    await expect(loadCheckpointDir(dir)).rejects.toThrow(/model.safetensors: safetensors: truncated.*\(in .*broken\)/);
    await fsp.rm(path.join(dir, 'config.json'));
    await expect(loadCheckpointDir(dir)).rejects.toThrow(/config.json is missing/);
    expect((await fsp.readdir(dir)).sort()).toEqual([
      'generation_config.json',
      'model.safetensors',
      'tokenizer.json',
      'tokenizer_config.json',
    ]);
    await expect(loadCheckpointDir(path.join(root, 'nope'))).rejects.toThrow(/does not exist/);
    disposeModel(a);
  });

  it('refuses to replace a directory that is not a checkpoint', async () => {
    const dir = path.join(root, 'notes');
    await fsp.mkdir(dir);
    await fsp.writeFile(path.join(dir, 'important.txt'), 'keep me');
    const a = randomModel(tinyConfig(), 6);
    await expect(saveCheckpointDir(dir, a, tokenizer)).rejects.toThrow(/refusing to replace .*notes/);
    expect(await fsp.readFile(path.join(dir, 'important.txt'), 'utf8')).toBe('keep me');
    disposeModel(a);
  });

  it('refuses a file in place of the directory and leaves no temp folder behind; names a directory in place of a file', async () => {
    const file = path.join(root, 'plain-file');
    await fsp.writeFile(file, 'keep me');
    const a = randomModel(tinyConfig(), 6);
    await expect(saveCheckpointDir(file, a, tokenizer)).rejects.toThrow(/plain-file exists and is not a directory/);
    await expect(saveCheckpointDir(path.join(file, 'sub'), a, tokenizer)).rejects.toThrow();
    expect(await fsp.readFile(file, 'utf8')).toBe('keep me');
    expect((await fsp.readdir(root)).filter((n) => /\.(tmp|old)-/.test(n))).toEqual([]);
    const odd = path.join(root, 'odd');
    await saveCheckpointDir(odd, a, tokenizer);
    await fsp.rm(path.join(odd, 'model.safetensors'));
    await fsp.mkdir(path.join(odd, 'model.safetensors'));
    await expect(loadCheckpointDir(odd)).rejects.toThrow(
      /odd\/model\.safetensors cannot be read: it is a directory, not a file/,
    );
    disposeModel(a);
  });
});

describe('the stacked layout (Qwen2Model keeps q/k/v and gate/up stacked; files keep HF names)', () => {
  it('a Qwen2Model made from an HF checkpoint saves the same bytes (model.safetensors, config.json), critic too', async () => {
    for (const [config, valueHead] of [
      [tinyConfig(), false],
      [tinyConfig({ tie_word_embeddings: false }), false],
      [tinyConfig(), true],
    ] as const) {
      const source = randomModel(config, 7, valueHead);
      const files = await checkpointFiles(source, tokenizer);
      disposeModel(source);
      const before = tf.memory().numTensors;
      const loaded = loadCheckpointFiles(files);
      const model = new Qwen2Model(loaded.config, loaded.weights, { valueHead: loaded.valueHead });
      // The variables are the stacked layout, each a single tensor: no q_proj etc. left, nothing leaked by stacking.
      expect(Object.keys(model.variables)).toEqual(Object.keys(qwen2VariableShapes(config, { valueHead })));
      expect(Object.keys(model.variables).some((n) => /\.(q|k|v|gate|up)_proj\./.test(n))).toBe(false);
      expect(model.variables['model.layers.1.self_attn.qkv_proj.weight'].shape).toEqual([(4 + 2 * 2) * 4, 16]);
      expect(model.variables['model.layers.1.self_attn.qkv_proj.bias'].shape).toEqual([(4 + 2 * 2) * 4]);
      expect(model.variables['model.layers.1.mlp.gate_up_proj.weight'].shape).toEqual([2 * 24, 16]);
      expect(tf.memory().numTensors - before).toBe(Object.keys(model.variables).length);
      const again = await checkpointFiles(model, tokenizer);
      for (const name of ['model.safetensors', 'config.json']) {
        expect(Buffer.from(again[name]).equals(Buffer.from(files[name])), name).toBe(true);
      }
      // hfWeights / mergedWeights give copies by HF name, bit for bit what was loaded.
      const hf = model.mergedWeights();
      const { tensors } = parseSafetensors(files['model.safetensors']);
      expect(Object.keys(hf).sort()).toEqual(Object.keys(tensors).sort());
      for (const [name, t] of Object.entries(hf)) expect(bits(t), name).toEqual(bits(tensors[name].data));
      tf.dispose(Object.values(hf));
      model.dispose();
      expect(tf.memory().numTensors).toBe(before);
    }
  });

  it('stackHfWeights and splitStackedWeights are inverses, bit for bit, and pass other names through untouched', () => {
    const config = tinyConfig();
    const hf: Record<string, tf.Tensor> = {};
    let s = 3;
    for (const [name, shape] of Object.entries(qwen2WeightShapes(config)))
      hf[name] = tf.randomNormal(shape, 0, 1, 'float32', s++);
    hf['model.layers.0.self_attn.q_proj.lora_A.weight'] = tf.ones([2, 16]); // not a stacked part: passes through
    const stacked = stackHfWeights(hf);
    expect(stacked['model.layers.0.self_attn.q_proj.lora_A.weight']).toBe(
      hf['model.layers.0.self_attn.q_proj.lora_A.weight'],
    );
    expect(stacked['model.norm.weight']).toBe(hf['model.norm.weight']);
    expect(bits(stacked['model.layers.0.mlp.gate_up_proj.weight'])).toEqual([
      ...bits(hf['model.layers.0.mlp.gate_proj.weight']),
      ...bits(hf['model.layers.0.mlp.up_proj.weight']),
    ]);
    const back = splitStackedWeights(config, stacked);
    expect(Object.keys(back).sort()).toEqual(Object.keys(hf).sort());
    for (const [name, t] of Object.entries(hf)) expect(bits(back[name]), name).toEqual(bits(t));
    // Partial groups are left as they are (the constructor then names what is missing).
    const partial = { ...hf };
    delete partial['model.layers.1.self_attn.v_proj.bias'];
    const p = stackHfWeights(partial);
    expect(p['model.layers.1.self_attn.q_proj.bias']).toBe(hf['model.layers.1.self_attn.q_proj.bias']);
    expect('model.layers.1.self_attn.qkv_proj.bias' in p).toBe(false);
    const made = new Set([...Object.values(stacked), ...Object.values(back), ...Object.values(p)]);
    for (const t of Object.values(hf)) made.add(t);
    tf.dispose([...made]);
  });
});
