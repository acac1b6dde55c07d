// The Qwen2 model's own behaviour on wasm (the CI backend): weight init, input checks, shapes, padding,
// causality, scoring, AdamW and gradient clipping against hand-computed values. Numerical parity with PyTorch is
// in parity-*.test.ts.
import { beforeAll, describe, expect, it } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../../../src/model/backend';
import type { Qwen2Config } from '../../../src/model/config';
import { Qwen2Model, initQwen2Weights, qwen2WeightShapes } from '../../../src/model/qwen2';
import { namedVariableGrads, tokenLogProbs } from '../../../src/model/scoring';
import { AdamW, clipGradNorm, clipGradNormAsync } from '../../../src/model/adamw';

const config: Qwen2Config = {
  model_type: 'qwen2',
  vocab_size: 40,
  hidden_size: 16,
  intermediate_size: 24,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  max_position_embeddings: 64,
  rope_theta: 10000,
  rms_norm_eps: 1e-6,
  tie_word_embeddings: true,
  initializer_range: 0.3, // larger than HF's 0.02 so logits depend visibly on the input
};

beforeAll(async () => {
  await initBackend('wasm');
});

async function values(t: tf.Tensor): Promise<number[]> {
  const out = Array.from(await t.data());
  t.dispose();
  return out;
}

describe('initQwen2Weights', () => {
  it('gives every HF weight its shape, ones for norms, zeros for biases, normal(0, initializer_range) elsewhere', async () => {
    const w = initQwen2Weights({ ...config, tie_word_embeddings: false }, 1);
    const shapes = qwen2WeightShapes({ ...config, tie_word_embeddings: false });
    expect(Object.keys(w)).toEqual(Object.keys(shapes));
    expect(w['lm_head.weight'].shape).toEqual([40, 16]);
    expect(w['model.layers.1.self_attn.k_proj.weight'].shape).toEqual([8, 16]); // 2 KV heads x head dim 4
    expect(new Set(await values(w['model.norm.weight'].clone()))).toEqual(new Set([1]));
    expect(new Set(await values(w['model.layers.0.self_attn.q_proj.bias'].clone()))).toEqual(new Set([0]));
    const emb = await values(w['model.embed_tokens.weight'].clone());
    const mean = emb.reduce((a, b) => a + b, 0) / emb.length;
    const std = Math.sqrt(emb.reduce((a, b) => a + (b - mean) ** 2, 0) / emb.length);
    expect(Math.abs(mean)).toBeLessThan(0.05); // 640 samples of N(0, 0.3^2): mean's std is 0.012
    expect(Math.abs(std - 0.3)).toBeLessThan(0.03);
    tf.dispose(Object.values(w));
  });

  it('is deterministic in the seed', async () => {
    const a = initQwen2Weights(config, 7),
      b = initQwen2Weights(config, 7),
      c = initQwen2Weights(config, 8);
    const name = 'model.layers.0.mlp.up_proj.weight';
    expect(await values(a[name].clone())).toEqual(await values(b[name].clone()));
    expect(await values(a[name].clone())).not.toEqual(await values(c[name].clone()));
    tf.dispose([...Object.values(a), ...Object.values(b), ...Object.values(c)]);
  });

  it('adds score.weight/score.bias and drops lm_head for a value head', () => {
    const shapes = qwen2WeightShapes({ ...config, tie_word_embeddings: false }, { valueHead: true });
    expect(shapes['score.weight']).toEqual([1, 16]);
    expect(shapes['score.bias']).toEqual([1]);
    expect(shapes['lm_head.weight']).toBeUndefined();
  });
});

describe('Qwen2Model input checks', () => {
  it('rejects configs it cannot run, naming the field', () => {
    expect(() => initQwen2Weights({ ...config, num_key_value_heads: 3 }, 1)).toThrow(/num_key_value_heads/);
    expect(() => initQwen2Weights({ ...config, hidden_size: 18 }, 1)).toThrow(/hidden_size/);
    expect(() => initQwen2Weights({ ...config, vocab_size: 0 }, 1)).toThrow(/vocab_size/);
  });

  it('rejects missing, unexpected and misshapen weights, naming them', () => {
    const missing = initQwen2Weights(config, 1);
    missing['model.norm.weight'].dispose();
    delete missing['model.norm.weight'];
    expect(() => new Qwen2Model(config, missing)).toThrow(/missing model\.norm\.weight/);
    tf.dispose(Object.values(missing));

    const extra = initQwen2Weights(config, 1);
    extra['lm_head.weight'] = tf.zeros([40, 16]);
    expect(() => new Qwen2Model(config, extra)).toThrow(/unexpected lm_head\.weight/);
    tf.dispose(Object.values(extra));

    const bad = initQwen2Weights(config, 1);
    bad['model.layers.1.mlp.down_proj.weight'].dispose();
    bad['model.layers.1.mlp.down_proj.weight'] = tf.zeros([24, 16]);
    expect(() => new Qwen2Model(config, bad)).toThrow(/down_proj\.weight has shape \[24,16\], expected \[16,24\]/);
    tf.dispose(Object.values(bad));
  });
});

describe('Qwen2Model.forward', () => {
  let model: Qwen2Model;
  beforeAll(() => {
    model = new Qwen2Model(config, initQwen2Weights(config, 3));
  });

  it('returns logits [B, T, V]', () => {
    const ids = tf.tensor2d(
      [
        [1, 2, 3],
        [4, 5, 6],
      ],
      undefined,
      'int32',
    );
    const logits = model.forward(ids);
    expect(logits.shape).toEqual([2, 3, 40]);
    tf.dispose([ids, logits]);
  });

  it('is causal: changing a later token leaves earlier logits unchanged', async () => {
    const a = tf.tensor2d([[5, 9, 2, 7, 1]], undefined, 'int32');
    const b = tf.tensor2d([[5, 9, 2, 30, 31]], undefined, 'int32');
    const la = await values(model.forward(a).slice([0, 0, 0], [1, 3, 40]));
    const lb = await values(model.forward(b).slice([0, 0, 0], [1, 3, 40]));
    const lastA = await values(model.forward(a).slice([0, 4, 0], [1, 1, 40]));
    const lastB = await values(model.forward(b).slice([0, 4, 0], [1, 1, 40]));
    expect(lb).toEqual(la);
    expect(lastB).not.toEqual(lastA);
    tf.dispose([a, b]);
  });

  it('gives a left- or right-padded row the logits it has alone (positions count real tokens)', async () => {
    const seq = [3, 14, 15, 9, 2, 6];
    const alone = tf.tensor2d([seq], undefined, 'int32');
    const ref = await values(model.forward(alone));
    const batch = tf.tensor2d(
      [
        [0, 0, 0, ...seq],
        [...seq, 0, 0, 0],
        [1, 2, 3, 4, 5, 6, 7, 8, 9],
      ],
      undefined,
      'int32',
    );
    const mask = tf.tensor2d(
      [
        [0, 0, 0, 1, 1, 1, 1, 1, 1],
        [1, 1, 1, 1, 1, 1, 0, 0, 0],
        [1, 1, 1, 1, 1, 1, 1, 1, 1],
      ],
      undefined,
      'int32',
    );
    const logits = model.forward(batch, mask);
    const left = await values(logits.slice([0, 3, 0], [1, 6, 40]));
    const right = await values(logits.slice([1, 0, 0], [1, 6, 40]));
    for (let i = 0; i < ref.length; i++) {
      expect(Math.abs(left[i] - ref[i])).toBeLessThan(1e-5);
      expect(Math.abs(right[i] - ref[i])).toBeLessThan(1e-5);
    }
    // Without the mask the padding is read as tokens and the answer changes.
    const unmasked = await values(model.forward(batch).slice([0, 3, 0], [1, 6, 40]));
    expect(Math.max(...unmasked.map((v, i) => Math.abs(v - ref[i])))).toBeGreaterThan(1e-3);
    tf.dispose([alone, batch, mask, logits]);
  });

  it('rejects a mask whose shape differs from ids', () => {
    const ids = tf.tensor2d([[1, 2, 3]], undefined, 'int32');
    const mask = tf.tensor2d([[1, 1]], undefined, 'int32');
    expect(() => model.forward(ids, mask)).toThrow(/mask shape/);
    tf.dispose([ids, mask]);
  });

  it('returns values [B, T] for a value-head model', () => {
    const critic = new Qwen2Model(config, initQwen2Weights(config, 4, { valueHead: true }), { valueHead: true });
    const ids = tf.tensor2d([[1, 2, 3, 4]], undefined, 'int32');
    const v = critic.forward(ids);
    expect(v.shape).toEqual([1, 4]);
    expect(() => tokenLogProbs(critic, ids)).toThrow(/value head/);
    tf.dispose([ids, v]);
    critic.dispose();
  });
});

describe('tokenLogProbs', () => {
  it('scores ids[t+1] at position t: equals log softmax of the logits, summed along a sequence', async () => {
    const model = new Qwen2Model(config, initQwen2Weights(config, 5));
    const seq = [7, 3, 3, 12, 39, 0];
    const ids = tf.tensor2d([seq], undefined, 'int32');
    const { logProbs, entropy } = tokenLogProbs(model, ids);
    expect(logProbs.shape).toEqual([1, 5]);
    const lp = await values(logProbs);
    const ent = await values(entropy);
    const logits = await values(model.forward(ids));
    for (let t = 0; t < 5; t++) {
      const row = logits.slice(t * 40, (t + 1) * 40);
      const max = Math.max(...row);
      const lse = max + Math.log(row.reduce((a, x) => a + Math.exp(x - max), 0));
      expect(lp[t]).toBeCloseTo(row[seq[t + 1]] - lse, 4);
      const h = -row.reduce((a, x) => a + Math.exp(x - lse) * (x - lse), 0);
      expect(ent[t]).toBeCloseTo(h, 4);
    }
    expect(() => tokenLogProbs(model, ids, undefined, 0)).toThrow(/temperature/);
    expect(() => tokenLogProbs(model, tf.tensor2d([[1.5, 2]]))).toThrow(/int32/);
    ids.dispose();
    model.dispose();
  });

  it('with fromTarget, runs the LM head from there on: the same log-probs, entropies and masked gradients, 0 before it', async () => {
    const model = new Qwen2Model(config, initQwen2Weights(config, 7));
    const ids = tf.tensor2d(
      [
        [7, 3, 3, 12, 39, 0, 5],
        [1, 2, 3, 4, 5, 6, 7],
      ],
      undefined,
      'int32',
    );
    const from = 3;
    const lossMask = tf.tensor2d([
      [0, 0, 0, 1, 1, 0],
      [0, 0, 0, 0, 1, 1],
    ]);
    const full = tokenLogProbs(model, ids);
    const cut = tokenLogProbs(model, ids, undefined, 1, { fromTarget: from });
    expect(cut.logProbs.shape).toEqual([2, 6]);
    for (const key of ['logProbs', 'entropy'] as const) {
      const a = await full[key].array(),
        b = await cut[key].array();
      for (let r = 0; r < 2; r++) {
        expect(b[r].slice(0, from)).toEqual([0, 0, 0]);
        b[r].slice(from).forEach((x, j) => expect(x).toBeCloseTo(a[r][from + j], 5));
      }
    }
    // A masked loss (as the actor's) has the same gradient for every weight, the LM head's included.
    const grads = (opts: { fromTarget?: number }) =>
      namedVariableGrads(model.variables, () => {
        const { logProbs, entropy } = tokenLogProbs(model, ids, undefined, 1, opts);
        return logProbs.add(entropy.mul(0.1)).mul(lossMask).sum() as tf.Scalar;
      });
    const g0 = grads({}),
      g1 = grads({ fromTarget: from });
    for (const name of Object.keys(g0.grads)) {
      const a = await g0.grads[name].data(),
        b = await g1.grads[name].data();
      const scale = Math.max(1e-6, ...Array.from(a, Math.abs));
      a.forEach((x, i) => expect(Math.abs(x - b[i]) / scale, name).toBeLessThan(1e-4));
    }
    expect(() => tokenLogProbs(model, ids, undefined, 1, { fromTarget: 6 })).toThrow(
      /fromTarget must be an integer in \[0, 5\], got 6/,
    );
    tf.dispose([
      ids,
      lossMask,
      full.logProbs,
      full.entropy,
      cut.logProbs,
      cut.entropy,
      g0.value,
      g1.value,
      ...Object.values(g0.grads),
      ...Object.values(g1.grads),
    ]);
    model.dispose();
  });

  it('has gradients for every weight on wasm (the embedding gradient avoids UnsortedSegmentSum)', () => {
    const model = new Qwen2Model(config, initQwen2Weights(config, 6));
    const ids = tf.tensor2d([[1, 5, 5, 5, 2]], undefined, 'int32'); // a repeated id: its rows must accumulate
    const { value, grads } = namedVariableGrads(
      model.variables,
      () => tokenLogProbs(model, ids).logProbs.sum() as tf.Scalar,
    );
    expect(Object.keys(grads).sort()).toEqual(Object.keys(model.variables).sort());
    tf.dispose([value, ids, ...Object.values(grads)]);
    model.dispose();
  });
});

describe('AdamW', () => {
  it('follows PyTorch AdamW for a hand-computed scalar over two steps', async () => {
    const p = tf.variable(tf.scalar(1.0));
    const opt = new AdamW({ p }, { lr: 0.1, betas: [0.9, 0.999], eps: 1e-8, weightDecay: 0.5 });
    // step 1, g = 2: p = 1 * (1 - 0.1 * 0.5) = 0.95; m = 0.2, v = 0.004; mhat = 2, vhat = 4 -> p -= 0.1 * 2 / 2
    let g = tf.scalar(2);
    opt.step({ p: g });
    expect((await p.data())[0]).toBeCloseTo(0.95 - 0.1, 6);
    // step 2, g = -1: p *= 0.95; m = 0.18 - 0.1 = 0.08; v = 0.003996 + 0.001 = 0.004996
    g.dispose();
    g = tf.scalar(-1);
    opt.step({ p: g });
    const m = 0.08 / (1 - 0.81),
      v = 0.004996 / (1 - 0.999 ** 2);
    expect((await p.data())[0]).toBeCloseTo(0.85 * 0.95 - (0.1 * m) / (Math.sqrt(v) + 1e-8), 5);
    expect(opt.stepsTaken).toBe(2);
    tf.dispose([g, p]);
    opt.dispose();
  });

  it('restores from getState/setState to the same trajectory', async () => {
    const make = () => tf.variable(tf.tensor1d([0.5, -1, 2]));
    const a = make(),
      b = make();
    const grads = [tf.tensor1d([1, 2, 3]), tf.tensor1d([-1, 0.5, 0]), tf.tensor1d([0.1, 0.1, -4])];
    const optA = new AdamW({ w: a }, { lr: 0.01 });
    optA.step({ w: grads[0] });
    optA.step({ w: grads[1] });
    const state = optA.getState();
    b.assign(a);
    const optB = new AdamW({ w: b }, { lr: 0.01 });
    optB.setState(state);
    optA.step({ w: grads[2] });
    optB.step({ w: grads[2] });
    expect(await a.data()).toEqual(await b.data());
    expect(() => optB.setState({ step: 1, m: {}, v: {} })).toThrow(/missing 'w'/);
    expect(() => optB.step({ other: grads[0] })).toThrow(/unknown variable 'other'/);
    tf.dispose([a, b, ...grads, ...Object.values(state.m), ...Object.values(state.v)]);
    optA.dispose();
    optB.dispose();
  });
});

describe('AdamW.stepIfFinite', () => {
  it('applies a finite update exactly as step() does, and writes nothing when an updated weight would not be finite', async () => {
    const a = tf.variable(tf.tensor1d([0.5, -1, 2])),
      b = tf.variable(tf.tensor1d([0.5, -1, 2]));
    const g = tf.tensor1d([1, 2, 3]);
    const optA = new AdamW({ w: a }, { lr: 0.01 }),
      optB = new AdamW({ w: b }, { lr: 0.01 });
    optA.step({ w: g });
    expect(await optB.stepIfFinite({ w: g })).toBe(true);
    expect(await b.data()).toEqual(await a.data());
    // A finite gradient, but a weight decay so large that the decayed weights overflow float32.
    const huge = tf.variable(tf.tensor1d([1e30, -2]));
    const opt = new AdamW({ huge }, { lr: 1e10, weightDecay: 1e10 });
    const before = Array.from(await huge.data());
    const stateBefore = opt.getState();
    const leak = tf.memory().numTensors;
    expect(await opt.stepIfFinite({ huge: tf.tensor1d([1, 1]) })).toBe(false);
    expect(tf.memory().numTensors).toBe(leak + 1); // only the gradient made here
    expect(Array.from(await huge.data())).toEqual(before);
    const stateAfter = opt.getState();
    expect(stateAfter.step).toBe(0);
    expect(Array.from(await stateAfter.m.huge.data())).toEqual(Array.from(await stateBefore.m.huge.data()));
    // The same update through step() writes Inf/NaN: the case stepIfFinite exists for.
    opt.step({ huge: tf.tensor1d([1, 1]) });
    expect(Array.from(await huge.data()).every(Number.isFinite)).toBe(false);
    tf.dispose([
      a,
      b,
      g,
      huge,
      ...[stateBefore, stateAfter].flatMap((st) => [...Object.values(st.m), ...Object.values(st.v)]),
    ]);
    [optA, optB, opt].forEach((o) => o.dispose());
  });
});

describe('AdamW over several variables (one flat buffer)', () => {
  it('updates each variable as a lone AdamW would, and leaves one without a gradient untouched', async () => {
    const init = {
      a: [
        [0.5, -1],
        [2, 3],
      ],
      b: [0.25, -0.75, 1.5],
    };
    const a = tf.variable(tf.tensor2d(init.a)),
      b = tf.variable(tf.tensor1d(init.b));
    const soloA = tf.variable(tf.tensor2d(init.a)),
      soloB = tf.variable(tf.tensor1d(init.b));
    const opt = new AdamW({ a, b }, { lr: 0.05, weightDecay: 0.1 });
    const optA = new AdamW({ a: soloA }, { lr: 0.05, weightDecay: 0.1 });
    const optB = new AdamW({ b: soloB }, { lr: 0.05, weightDecay: 0.1 });
    const ga = [
      tf.tensor2d([
        [1, -2],
        [0.5, 4],
      ]),
      tf.tensor2d([
        [-1, 1],
        [1, -1],
      ]),
    ];
    const gb = [tf.tensor1d([3, 0.1, -2]), tf.tensor1d([0, 1, 1])];
    for (let i = 0; i < 2; i++) {
      opt.step({ a: ga[i], b: gb[i] });
      optA.step({ a: ga[i] });
      optB.step({ b: gb[i] });
    }
    expect(Array.from(await a.data())).toEqual(Array.from(await soloA.data()));
    expect(Array.from(await b.data())).toEqual(Array.from(await soloB.data()));
    // A step with a gradient for `a` only: `b` and its moments stay as they were.
    const bBefore = Array.from(await b.data());
    const mBefore = opt.getState();
    opt.step({ a: ga[0] });
    optA.step({ a: ga[0] });
    expect(Array.from(await b.data())).toEqual(bBefore);
    expect(Array.from(await a.data())).toEqual(Array.from(await soloA.data()));
    const mAfter = opt.getState();
    expect(Array.from(await mAfter.m.b.data())).toEqual(Array.from(await mBefore.m.b.data()));
    expect(mAfter.m.a.shape).toEqual([2, 2]);
    tf.dispose([
      a,
      b,
      soloA,
      soloB,
      ...ga,
      ...gb,
      ...[mBefore, mAfter].flatMap((st) => [...Object.values(st.m), ...Object.values(st.v)]),
    ]);
    [opt, optA, optB].forEach((o) => o.dispose());
  });
});

describe('clipGradNorm', () => {
  it('scales to the max norm and returns the norm before clipping', async () => {
    const grads = { a: tf.tensor1d([3, 0]), b: tf.tensor2d([[0, 4]]) }; // global norm 5
    const { grads: clipped, norm } = clipGradNorm(grads, 1);
    expect(norm).toBeCloseTo(5, 5);
    expect(Array.from(await clipped.a.data())[0]).toBeCloseTo(0.6, 5);
    expect(Array.from(await clipped.b.data())[1]).toBeCloseTo(0.8, 5);
    const loose = await clipGradNormAsync(grads, 10); // below the max: unchanged
    expect(loose.norm).toBeCloseTo(5, 5);
    expect(Array.from(await loose.grads.b.data())).toEqual([0, 4]);
    const nan = clipGradNorm({ a: tf.tensor1d([NaN, 1]) }, 1);
    expect(nan.norm).toBeNaN();
    expect(() => clipGradNorm(grads, 0)).toThrow(/maxNorm/);
    tf.dispose([
      ...Object.values(grads),
      ...Object.values(clipped),
      ...Object.values(loose.grads),
      ...Object.values(nan.grads),
    ]);
  });
});
