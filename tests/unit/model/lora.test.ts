// LoRA on the tfjs Qwen2 (src/model/lora.ts): PEFT's initialisation and names, the base view (the reference policy
// under LoRA), generation with the adapters folded in, merging, and checkpoints in PEFT's format. The arithmetic
// itself is checked against PyTorch in lora-parity-*.test.ts.
import * as fsp from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../../src/model/backend';
import { checkpointFiles } from '../../../src/model/checkpoint';
import { readCheckpointDirFiles, saveCheckpointDir } from '../../../src/model/checkpointDir';
import type { Qwen2Config } from '../../../src/model/config';
import { generate } from '../../../src/model/generate';
import { hfModelFiles } from '../../../src/model/hfExport';
import {
  LORA_TARGET_MODULES,
  LoraAdapters,
  initLoraWeights,
  loadPeftAdapterFiles,
  loraWeightShapes,
  peftAdapterFiles,
} from '../../../src/model/lora';
import { loadPolicyFiles } from '../../../src/model/modelFiles';
import { initQwen2Weights, Qwen2Model } from '../../../src/model/qwen2';
import { indexSafetensors } from '../../../src/model/safetensors';
import { namedVariableGrads, tokenLogProbs } from '../../../src/model/scoring';
import { DEFAULT_SPECIAL_TOKENS, buildTinyTokenizer } from '../../../src/model/tokenizer';

const config: Qwen2Config = {
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
};
const settings = { rank: 4, alpha: 8, targetModules: [...LORA_TARGET_MODULES] };
const tokenizer = buildTinyTokenizer(
  ['<answer>Right</answer> State: #_P_O#'].flatMap((s) => [s, s, s]),
  { vocabSize: 280, specialTokens: DEFAULT_SPECIAL_TOKENS },
);

/** A LoRA model whose B matrices are random too (fresh B = 0 would make the adapters invisible). */
function adaptedModel(seed = 3): Qwen2Model {
  const model = new Qwen2Model(config, initQwen2Weights(config, seed));
  const w = initLoraWeights(config, settings, seed + 1);
  for (const name of Object.keys(w)) {
    if (name.endsWith('lora_B.weight')) {
      const shape = w[name].shape;
      w[name].dispose();
      w[name] = tf.randomNormal(shape, 0, 0.3, 'float32', seed + name.length);
    }
  }
  model.addAdapters(new LoraAdapters(config, settings, w));
  return model;
}

async function logProbsOf(model: Qwen2Model, ids: number[][]): Promise<Float32Array> {
  const t = tf.tensor2d(ids, undefined, 'int32');
  const { logProbs, entropy } = tokenLogProbs(model, t);
  const out = (await logProbs.data()) as Float32Array;
  tf.dispose([t, logProbs, entropy]);
  return out;
}

const maxDiff = (a: Float32Array, b: Float32Array) => a.reduce((m, x, i) => Math.max(m, Math.abs(x - b[i])), 0);
const ids = [[5, 17, 99, 3, 250, 41, 7, 8]];

describe('LoRA adapters (wasm)', () => {
  let dir: string;
  beforeAll(async () => {
    await initBackend('wasm');
    dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'lora-'));
  });
  afterAll(async () => {
    await fsp.rm(dir, { recursive: true, force: true });
  });

  it('initialises as PEFT: A [r, in] uniform within 1/sqrt(in), B [out, r] zero; PEFT names; scaling alpha / r', async () => {
    const shapes = loraWeightShapes(config, settings);
    expect(Object.keys(shapes)).toHaveLength(2 * 7 * config.num_hidden_layers);
    expect(shapes['model.layers.0.self_attn.k_proj.lora_A.weight']).toEqual([4, 16]);
    expect(shapes['model.layers.0.self_attn.k_proj.lora_B.weight']).toEqual([8, 4]); // 2 KV heads x head dim 4
    expect(shapes['model.layers.1.mlp.down_proj.lora_A.weight']).toEqual([4, 24]);
    const lora = LoraAdapters.init(config, settings, 9);
    expect(lora.scaling).toBe(2);
    const a = await lora.variables['model.layers.1.mlp.down_proj.lora_A.weight'].data();
    const bound = 1 / Math.sqrt(24);
    expect(Math.max(...a.map(Math.abs))).toBeLessThanOrEqual(bound);
    expect(Math.max(...a.map(Math.abs))).toBeGreaterThan(0.8 * bound); // spread over the whole range
    const b = await lora.variables['model.layers.1.mlp.down_proj.lora_B.weight'].data();
    expect(b.every((x) => x === 0)).toBe(true);
    lora.dispose();
  });

  it('fresh adapters leave the model exactly as its base; trained ones change it, and baseModel() turns them off', async () => {
    const before = tf.memory().numTensors;
    const plain = new Qwen2Model(config, initQwen2Weights(config, 3));
    const fresh = new Qwen2Model(config, initQwen2Weights(config, 3));
    fresh.addAdapters(LoraAdapters.init(config, settings, 4));
    expect(maxDiff(await logProbsOf(fresh, ids), await logProbsOf(plain, ids))).toBe(0);
    const adapted = adaptedModel(3);
    const base = adapted.baseModel();
    expect(base.lora).toBeNull();
    expect(base.variables).toBe(adapted.variables); // the same weights: no copy
    expect(maxDiff(await logProbsOf(adapted, ids), await logProbsOf(plain, ids))).toBeGreaterThan(1e-2);
    expect(maxDiff(await logProbsOf(base, ids), await logProbsOf(plain, ids))).toBe(0);
    base.dispose(); // a view frees nothing
    expect(Object.keys(adapted.trainableVariables).every((n) => n.includes('.lora_'))).toBe(true);
    expect(Object.values(adapted.variables).every((v) => !v.trainable)).toBe(true);
    [plain, fresh, adapted].forEach((m) => m.dispose());
    expect(tf.memory().numTensors).toBe(before);
  });

  it("generation folds the adapters in: greedy tokens are the full forward pass's argmax", async () => {
    const model = adaptedModel(5);
    const prompt = [5, 17, 99, 3];
    const g = await generate(model, [prompt], { maxNewTokens: 6, temperature: 0, seed: 0, padTokenId: 0 });
    const all = [...prompt, ...g.tokens[0]];
    const logits = model.forward(tf.tensor2d([all], undefined, 'int32')) as tf.Tensor3D;
    const argmax = Array.from(await logits.argMax(-1).data()).slice(prompt.length - 1, all.length - 1);
    expect(g.tokens[0]).toEqual(argmax);
    tf.dispose(logits);
    model.dispose();
  });

  it('the LM head in chunks and gradient checkpointing give the same adapter gradients (and none for the frozen head)', async () => {
    const model = adaptedModel(13);
    const x = tf.tensor2d([ids[0], [0, 0, 9, 9, 31, 2, 77, 5]], undefined, 'int32');
    const m = tf.tensor2d(
      [
        [1, 1, 1, 1, 1, 1, 1, 1],
        [0, 0, 1, 1, 1, 1, 1, 1],
      ],
      undefined,
      'int32',
    );
    const gradsOf = async (chunkRows?: number) => {
      const { value, grads } = namedVariableGrads(model.trainableVariables, () => {
        const { logProbs, entropy } = tokenLogProbs(model, x, m, 1, { chunkRows });
        return logProbs
          .mul(tf.linspace(-1, 1, logProbs.size).reshape(logProbs.shape))
          .sum()
          .sub(entropy.mean()) as tf.Scalar;
      });
      value.dispose();
      const out: Record<string, Float32Array> = {};
      for (const [k, g] of Object.entries(grads)) {
        out[k] = (await g.data()) as Float32Array;
        g.dispose();
      }
      return out;
    };
    const plain = await gradsOf();
    const before = tf.memory().numTensors; // after the first pass, which builds the model's RoPE tables
    const chunked = await gradsOf(3);
    model.gradientCheckpointing = true;
    const both = await gradsOf(3);
    expect(tf.memory().numTensors).toBe(before);
    expect(Object.keys(plain).every((k) => k.includes('.lora_'))).toBe(true);
    for (const k of Object.keys(plain)) {
      expect(maxDiff(chunked[k], plain[k]), k).toBeLessThan(1e-5);
      expect(maxDiff(both[k], plain[k]), k).toBeLessThan(1e-5);
    }
    tf.dispose([x, m]);
    model.dispose();
  });

  it('mergeAdapters() and mergedWeights() give a plain model computing the same', async () => {
    const model = adaptedModel(7);
    const want = await logProbsOf(model, ids);
    const copy = new Qwen2Model(config, model.mergedWeights());
    expect(maxDiff(await logProbsOf(copy, ids), want)).toBeLessThan(1e-5);
    model.mergeAdapters();
    expect(model.lora).toBeNull();
    expect(maxDiff(await logProbsOf(model, ids), want)).toBeLessThan(1e-5);
    copy.dispose();
    model.dispose();
  });

  it("checkpoints keep the base as model.safetensors and the adapters in PEFT's format under adapter/", async () => {
    const model = adaptedModel(11);
    const want = await logProbsOf(model, ids);
    const files = await checkpointFiles(model, tokenizer);
    const cfg = JSON.parse(new TextDecoder().decode(files['adapter/adapter_config.json']));
    expect(cfg).toMatchObject({
      peft_type: 'LORA',
      task_type: 'CAUSAL_LM',
      r: 4,
      lora_alpha: 8,
      lora_dropout: 0,
      bias: 'none',
      use_rslora: false,
    });
    expect(cfg.target_modules).toEqual([...LORA_TARGET_MODULES]);
    const keys = Object.keys(indexSafetensors(files['adapter/adapter_model.safetensors']).entries);
    expect(keys).toContain('base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight');
    expect(keys.every((k) => k.startsWith('base_model.model.model.layers.'))).toBe(true);
    expect(Object.keys(indexSafetensors(files['model.safetensors']).entries).some((k) => k.includes('lora'))).toBe(
      false,
    );

    const loaded = loadPolicyFiles(files).model;
    expect(loaded.lora).not.toBeNull();
    expect(maxDiff(await logProbsOf(loaded, ids), want)).toBe(0);
    loaded.dispose();

    await saveCheckpointDir(path.join(dir, 'ckpt'), model, tokenizer);
    const fromDisk = loadPolicyFiles(await readCheckpointDirFiles(path.join(dir, 'ckpt'))).model;
    expect(maxDiff(await logProbsOf(fromDisk, ids), want)).toBe(0);
    fromDisk.dispose();
    model.dispose();
  });

  it('exports to Hugging Face as one plain model with the adapters folded in (hfModelFiles)', async () => {
    const model = adaptedModel(17);
    const want = await logProbsOf(model, ids);
    const files = hfModelFiles(await checkpointFiles(model, tokenizer), 'f32');
    expect(Object.keys(files).some((n) => n.startsWith('adapter/'))).toBe(false);
    const plain = loadPolicyFiles(files).model;
    expect(plain.lora).toBeNull();
    expect(maxDiff(await logProbsOf(plain, ids), want)).toBeLessThan(1e-5);
    plain.dispose();
    model.dispose();
  });

  it("reads PEFT's own key names (with the adapter name) and refuses what it cannot compute", async () => {
    const lora = LoraAdapters.init(config, settings, 2);
    const files = await peftAdapterFiles(lora, { taskType: 'CAUSAL_LM' });
    const again = loadPeftAdapterFiles(config, files);
    expect(Object.keys(again.variables).sort()).toEqual(Object.keys(lora.variables).sort());
    again.dispose();
    const edit = (patch: object) => ({
      ...files,
      'adapter_config.json': new TextEncoder().encode(
        JSON.stringify({ ...JSON.parse(new TextDecoder().decode(files['adapter_config.json'])), ...patch }),
      ),
    });
    expect(() => loadPeftAdapterFiles(config, edit({ use_dora: true }))).toThrow(/DoRA/);
    expect(() => loadPeftAdapterFiles(config, edit({ r: 8 }))).toThrow(/shape/);
    expect(() => loadPeftAdapterFiles(config, edit({ target_modules: ['lm_head'] }))).toThrow(
      /unknown target module 'lm_head'/,
    );
    expect(loadPeftAdapterFiles(config, edit({ target_modules: 'all-linear' })).settings.targetModules).toHaveLength(7);
    lora.dispose();
  });
});
