// The model keeps q/k/v and gate/up stacked (qkv_proj, gate_up_proj), but AdamW's global gradient norm sums the
// squares in HF's per-tensor segments (hfSumOrder), so the norm, and with clipping every update, has the bits it had
// when the weights were separate HF tensors (the tiny presets' results and warm starts stay byte for byte).
import * as tf from '@tensorflow/tfjs';
import { describe, expect, it } from 'vitest';
import { initBackend } from '../../../src/model/backend';
import type { Qwen2Config } from '../../../src/model/config';
import { AdamW } from '../../../src/model/adamw';
import {
  Qwen2Model,
  hfSumOrder,
  initQwen2Weights,
  qwen2WeightShapes,
  splitStackedWeights,
} from '../../../src/model/qwen2';

const config: Qwen2Config = {
  model_type: 'qwen2',
  vocab_size: 40,
  hidden_size: 32,
  intermediate_size: 48,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  max_position_embeddings: 64,
  rope_theta: 10000,
  rms_norm_eps: 1e-6,
  tie_word_embeddings: false,
};

describe.each(['cpu', 'wasm'] as const)('the global gradient norm with stacked weights (%s)', (backend) => {
  it('is the norm over HF separate tensors, bit for bit, and clipping updates the same', async () => {
    await initBackend(backend);
    const model = new Qwen2Model(config, initQwen2Weights(config, 2));
    const order = hfSumOrder(Object.keys(model.variables), model.variables)!;
    expect(order).not.toBeNull();
    // One segment per HF tensor, every element once.
    expect(order.length / 3).toBe(Object.keys(qwen2WeightShapes(config)).length);
    expect(order.filter((_, i) => i % 3 === 2).reduce((a, b) => a + b, 0)).toBe(
      Object.values(model.variables).reduce((a, v) => a + v.size, 0),
    );
    const grads: Record<string, tf.Tensor> = {};
    let seed = 5;
    for (const [name, v] of Object.entries(model.variables))
      grads[name] = tf.randomNormal(v.shape, 0, 1, 'float32', seed++);
    const hfGrads = splitStackedWeights(config, grads);
    // The same weights as separate HF variables (the layout before stacking), in HF order.
    const hfWeights = model.hfWeights();
    const hfVars: Record<string, tf.Variable> = {};
    for (const name of Object.keys(qwen2WeightShapes(config))) hfVars[name] = tf.variable(hfWeights[name]);
    tf.dispose(Object.values(hfWeights));
    const ordered = Object.fromEntries(Object.keys(hfVars).map((n) => [n, hfGrads[n]]));
    const stacked = new AdamW(model.variables, { lr: 1e-3 }),
      separate = new AdamW(hfVars, { lr: 1e-3 });
    // Norms alone over many draws (a changed summation order shows in some of them), with lr 0 (no update).
    stacked.lr = 0;
    separate.lr = 0;
    for (let k = 0; k < 12; k++) {
      const g: Record<string, tf.Tensor> = {};
      for (const [name, v] of Object.entries(model.variables))
        g[name] = tf.randomNormal(v.shape, 0, 10 ** ((k % 4) - 2), 'float32', seed++);
      const h = splitStackedWeights(config, g);
      const x = await stacked.stepClipped(g, 1e9),
        y = await separate.stepClipped(Object.fromEntries(Object.keys(hfVars).map((n) => [n, h[n]])), 1e9);
      expect(Math.fround(x.norm), `draw ${k}`).toBe(Math.fround(y.norm));
      tf.dispose([...new Set([...Object.values(g), ...Object.values(h)])]);
    }
    stacked.lr = 1e-3;
    separate.lr = 1e-3;
    const a = await stacked.stepClipped(grads, 1.0),
      b = await separate.stepClipped(ordered, 1.0);
    expect(a.applied && b.applied).toBe(true);
    expect(Math.fround(a.norm)).toBe(Math.fround(b.norm));
    expect(a.norm).toBeGreaterThan(1); // clipping acted
    const after = splitStackedWeights(config, model.variables);
    for (const [name, v] of Object.entries(hfVars)) {
      expect(Array.from(await after[name].data()), name).toEqual(Array.from(await v.data()));
    }
    for (const [name, t] of Object.entries(after)) if (t !== model.variables[name]) t.dispose();
    tf.dispose([
      ...Object.values(grads),
      ...Object.values(hfGrads).filter((t) => !Object.values(grads).includes(t)),
      ...Object.values(hfVars),
    ]);
    stacked.dispose();
    separate.dispose();
    model.dispose();
  });
});
