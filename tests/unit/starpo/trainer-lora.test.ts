// The Trainer with LoRA (config.lora, RAGEN's base-lora.yaml) on a tiny random policy (Bandit, wasm): only the
// adapters train (the base weights stay byte for byte), the reference policy is the actor with its adapters off
// (its log-probs are the base model's), tensors stay flat, and a checkpoint (adapters in PEFT's format) resumes
// exactly.
import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../../src/model/backend';
import { withHfWeights, type Qwen2Model } from '../../../src/model/qwen2';
import { floatToBf16Bits, indexSafetensors } from '../../../src/model/safetensors';
import { tokenLogProbs } from '../../../src/model/scoring';
import { MemorySink } from '../../../src/metrics/sink';
import { Trainer } from '../../../src/starpo/trainer';
import { tensorCountsPerStep, tinyBanditConfig, tinyPolicy } from './trainer-fixture';

beforeAll(async () => {
  await initBackend('wasm');
});

const withoutTiming = (row: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(row).filter(([k]) => !k.startsWith('timing_s/') && k !== 'perf/throughput'));

/** A model's weights by HF name (its stacked q/k/v and gate/up split), as the checkpoint files hold them. */
async function arrays(model: Qwen2Model): Promise<Record<string, Float32Array>> {
  return withHfWeights(model.config, model.variables, async (hf) => {
    const out: Record<string, Float32Array> = {};
    for (const [name, v] of Object.entries(hf)) out[name] = ((await v.data()) as Float32Array).slice();
    return out;
  });
}

/** `x` rounded to the nearest bfloat16 (ties to even), as float32. */
function roundedToBf16(x: tf.Tensor): tf.Tensor {
  const bits = new Uint32Array((x.dataSync() as Float32Array).slice().buffer);
  for (let i = 0; i < bits.length; i++) bits[i] = (floatToBf16Bits(bits[i]) << 16) >>> 0;
  return tf.tensor(new Float32Array(bits.buffer), x.shape);
}

async function logProbs(model: Trainer['actor'], ids: number[]): Promise<Float32Array> {
  const t = tf.tensor2d([ids], undefined, 'int32');
  const r = tokenLogProbs(model, t);
  const out = (await r.logProbs.data()) as Float32Array;
  tf.dispose([t, r.logProbs, r.entropy]);
  return out;
}

// PPO with a KL loss, so the reference policy is built and used; lr high enough that the adapters move visibly.
const config = (over: Parameters<typeof tinyBanditConfig>[0] = {}) =>
  tinyBanditConfig({
    lora: { enabled: true, rank: 4, alpha: 8 },
    actor: { useKlLoss: true, klLossCoef: 0.01, lr: 1e-2 },
    critic: { lr: 1e-2 },
    trainer: { totalSteps: 3, testFreq: 0, valBeforeTrain: false },
    ...over,
  });

describe('Trainer with LoRA (wasm)', () => {
  it('trains only the adapters; the reference is the base model; tensors stay flat', async () => {
    const { model, tokenizer } = tinyPolicy();
    const base = await arrays(model);
    const ids = tokenizer.encode('<think>I pick Phoenix.</think><answer>Phoenix</answer>');
    const baseLogProbs = await logProbs(model, ids);
    const sink = new MemorySink();
    const trainer = await Trainer.create(config(), { model, tokenizer, sink });
    expect(trainer.actor.lora).not.toBeNull();
    expect(trainer.critic!.lora).not.toBeNull();
    expect(trainer.ref!.variables).toBe(trainer.actor.variables); // no copy of the weights
    const counts = await tensorCountsPerStep(trainer);
    expect(counts[2]).toBe(counts[1]);
    expect(counts[1]).toBe(counts[0]);
    for (const row of sink.rows) {
      for (const key of ['actor/pg_loss', 'actor/kl_loss', 'actor/grad_norm', 'critic/vf_loss'])
        expect(Number.isFinite(row[key]), key).toBe(true);
      expect(row['actor/nan_skipped']).toBe(0);
    }
    // The KL loss is 0 before the adapters move (B starts at zero) and nonzero once they have.
    expect(sink.rows[0]['actor/kl_loss']).toBe(0);
    expect(Math.abs(sink.rows[2]['actor/kl_loss'] as number)).toBeGreaterThan(0);

    // The base weights are untouched, byte for byte; the adapters moved (B away from zero).
    const after = await arrays(trainer.actor);
    for (const [name, data] of Object.entries(base))
      expect(Buffer.from(after[name].buffer).equals(Buffer.from(data.buffer)), name).toBe(true);
    const b = await trainer.actor.lora!.variables['model.layers.0.mlp.down_proj.lora_B.weight'].data();
    expect(b.some((x) => x !== 0)).toBe(true);
    // The reference's log-probs are the base model's; the actor's are not any more.
    expect(Array.from(await logProbs(trainer.ref!, ids))).toEqual(Array.from(baseLogProbs));
    const actorNow = await logProbs(trainer.actor, ids);
    expect(actorNow.some((x, i) => Math.abs(x - baseLogProbs[i]) > 1e-4)).toBe(true);
    trainer.dispose();
  });

  it("checkpoints hold the adapters in PEFT's format (no ref.safetensors) and a bf16 base in bf16, and resume exactly", async () => {
    const c = config({ trainer: { totalSteps: 4, testFreq: 0, valBeforeTrain: false } });
    const sink = new MemorySink();
    // A base whose every weight is a bfloat16, as when it is loaded from Qwen2.5's own bf16 files.
    const policy = tinyPolicy();
    for (const v of Object.values(policy.model.variables)) v.assign(tf.tidy(() => roundedToBf16(v)));
    const baseBits = await arrays(policy.model);
    const trainer = await Trainer.create(c, { ...policy, sink });
    await trainer.step();
    await trainer.step();
    const files = await trainer.checkpointFiles();
    expect(Object.keys(files)).toEqual(
      expect.arrayContaining([
        'adapter/adapter_config.json',
        'adapter/adapter_model.safetensors',
        'critic/adapter/adapter_model.safetensors',
        'model.safetensors',
        'optimizer.safetensors',
      ]),
    );
    expect(files['ref.safetensors']).toBeUndefined();
    // The frozen base is written in bf16 (exactly: it reads back bit for bit); what trains (the critic's value head,
    // the adapters) stays f32.
    const actorFile = indexSafetensors(files['model.safetensors']).entries;
    const criticFile = indexSafetensors(files['critic/model.safetensors']).entries;
    for (const [name, e] of Object.entries(actorFile)) {
      expect(e.dtype, name).toBe('BF16');
      expect(Buffer.from(e.read().buffer).equals(Buffer.from(baseBits[name].buffer)), name).toBe(true);
    }
    for (const [name, e] of Object.entries(criticFile))
      expect(e.dtype, name).toBe(name.startsWith('score.') ? 'F32' : 'BF16');
    for (const e of Object.values(indexSafetensors(files['adapter/adapter_model.safetensors']).entries))
      expect(e.dtype).toBe('F32');
    while (!trainer.finished) await trainer.step();
    trainer.dispose();

    // Every step after the checkpoint equals the uninterrupted run's, not only the first: each step's generation
    // merges the adapters as AdamW has just updated them (in place), in both runs.
    const resumedSink = new MemorySink();
    const resumed = await Trainer.create(c, { resumeFiles: files, sink: resumedSink });
    while (!resumed.finished) await resumed.step();
    resumed.dispose();
    expect(resumedSink.rows.map(withoutTiming)).toEqual(sink.rows.slice(2).map(withoutTiming));

    // A run cannot switch LoRA off (or change its rank) on resume.
    await expect(
      Trainer.create(tinyBanditConfig({ actor: { useKlLoss: true, klLossCoef: 0.01 } }), {
        resumeFiles: files,
        sink: new MemorySink(),
      }),
    ).rejects.toThrow(/has LoRA adapters but lora.enabled is false/);
    await expect(
      Trainer.create(config({ lora: { enabled: true, rank: 2, alpha: 8 } }), {
        resumeFiles: files,
        sink: new MemorySink(),
      }),
    ).rejects.toThrow(/rank 4.*asks for rank 2/);
  });

  it('a base weight that is not all bfloat16 (random float32 matrices) is written in f32; bit for bit either way', async () => {
    const trainer = await Trainer.create(config(), { ...tinyPolicy(), sink: new MemorySink() });
    const base = await arrays(trainer.actor);
    const files = await trainer.checkpointFiles();
    trainer.dispose();
    const entries = indexSafetensors(files['model.safetensors']).entries;
    // The random matrices are float32; the norms' initial ones are bfloat16 values.
    expect(entries['model.embed_tokens.weight'].dtype).toBe('F32');
    expect(entries['model.layers.0.input_layernorm.weight'].dtype).toBe('BF16');
    for (const [name, e] of Object.entries(entries))
      expect(Buffer.from(e.read().buffer).equals(Buffer.from(base[name].buffer)), name).toBe(true);
  });
});
