// Every fused kernel of src/model/kernels against the stock tfjs composition it replaces, on the webgpu backend
// through Dawn in Node. On a machine without a GPU the adapter is Chromium's SwiftShader (Debian's chromium
// package; VK_ICD_FILENAMES is set to it unless already set). It never skips: if WebGPU cannot start, it fails.
import * as tf from '@tensorflow/tfjs';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { initBackend, SWIFTSHADER_ICD } from '../../../src/model/backend';
import * as fused from '../../../src/model/kernels/index';
import { groupFits, setWebGpuAttentionGrouping, softmaxGroupFits } from '../../../src/model/kernels/webgpu';
import { unfused } from '../../../src/model/kernels/index';
import { AdamW, clipGradNormAsync } from '../../../src/model/adamw';
import { describeFusedKernels } from './kernels-helpers';

const setup = async () => {
  process.env.VK_ICD_FILENAMES ??= SWIFTSHADER_ICD;
  await initBackend('webgpu');
};

describeFusedKernels('webgpu', { setup });

/**
 * KV-cache attention over the 2 sequences of `qkv` [2 n, W] fed in `pieces` ([first slot, positions]: a prefill, then
 * decode steps), into a cache as wide as `slotMask`; the outputs stitched back to [2 n, nH hd].
 */
async function cachedInPieces(
  qkv: tf.Tensor2D,
  slotMask: tf.Tensor2D,
  heads: { numHeads: number; numKvHeads: number; headDim: number },
  pieces: readonly (readonly [number, number])[],
): Promise<tf.Tensor> {
  const [rows2, w] = qkv.shape,
    n = rows2 / 2,
    kw = heads.numKvHeads * heads.headDim;
  const rows = qkv.reshape([2, n, w]);
  let k = tf.zeros([2, slotMask.shape[1], kw]) as tf.Tensor3D,
    v = tf.zeros([2, slotMask.shape[1], kw]) as tf.Tensor3D;
  const outs: tf.Tensor[] = [];
  for (const [slot, len] of pieces) {
    const part = rows.slice([0, slot, 0], [2, len, w]).reshape([2 * len, w]) as tf.Tensor2D;
    const [out, nk, nv] = fused.cachedAttention(part, k, v, slotMask, slot, heads);
    if (nk !== k) k.dispose();
    if (nv !== v) v.dispose();
    k = nk;
    v = nv;
    outs.push(out.reshape([2, len, -1]));
    tf.dispose([part, out]);
  }
  const stitched = tf.concat(outs, 1).reshape([2 * n, -1]);
  tf.dispose([rows, k, v, ...outs]);
  return stitched;
}

describe('the tiled attention programs, past one tile and with two head dimensions per invocation', () => {
  beforeAll(setup);
  // headDim 128 (Qwen2.5-3B's): each of a workgroup's 64 invocations owns two dimensions; 150 positions: three
  // tiles of keys, the last one partial; row 1 left-padded (its first queries see no key).
  const heads = { numHeads: 4, numKvHeads: 2, headDim: 128 };
  const T = 150,
    W = (4 + 2 * 2) * 128;
  const maskRows = [Array(T).fill(1), Array.from({ length: T }, (_, i) => (i < 5 ? 0 : 1))];
  const maxDiff = async (a: tf.Tensor, b: tf.Tensor) => (await tf.tidy(() => a.sub(b).abs().max()).data())[0];

  it('forward and gradient equal the stock composition', async () => {
    const qkv = tf.randomUniform([2 * T, W], -2, 2, 'float32', 21) as tf.Tensor2D;
    const mask = tf.tensor2d(maskRows);
    const dy = tf.randomUniform([2 * T, 4 * 128], -1, 1, 'float32', 22);
    const run = (impl: typeof unfused.attention) =>
      tf.valueAndGrad(
        (x: tf.Tensor) =>
          impl(x as tf.Tensor2D, mask, heads)
            .mul(dy)
            .sum() as tf.Scalar,
      );
    const a = run(fused.attention)(qkv),
      b = run(unfused.attention)(qkv);
    expect(await maxDiff(a.grad, b.grad)).toBeLessThan(2e-5);
    expect(Math.abs((await a.value.data())[0] - (await b.value.data())[0])).toBeLessThan(1e-3);
    const out = fused.attention(qkv, mask, heads),
      ref = unfused.attention(qkv, mask, heads);
    expect(await maxDiff(out, ref)).toBeLessThan(2e-5);
    expect(Array.from(await out.slice([T, 0], [5, 4 * 128]).data()).every((v) => v === 0)).toBe(true);
    tf.dispose([qkv, mask, dy, a.value, a.grad, b.value, b.grad, out, ref]);
  });

  // The attention programs (forward, dq of the backward, KV cache) run one workgroup per (position, KV head) for all
  // the query heads of the group, reading each key and value row once, where the group's rows fit in workgroup memory
  // (Qwen2.5-0.5B: 7 heads of 64), and one per (position, query head) where they do not (16 heads of 128 on one KV
  // head). Two tiles of keys; row 1 left-padded. RAGEN_WEBGPU_ATTENTION's modes are set per test, then reset.
  afterEach(() => setWebGpuAttentionGrouping('auto'));
  for (const [name, layout, grouped] of [
    ["Qwen2.5-0.5B's heads (7 per KV head, size 64)", { numHeads: 14, numKvHeads: 2, headDim: 64 }, true],
    ['16 heads of 128 on one KV head', { numHeads: 16, numKvHeads: 1, headDim: 128 }, false],
  ] as const) {
    it.each(grouped ? (['auto', 'per-head'] as const) : (['auto'] as const))(
      `${name}: attention forward and gradient (%s)`,
      async (mode) => {
        setWebGpuAttentionGrouping(mode);
        expect(groupFits(layout.numHeads / layout.numKvHeads, layout.headDim)).toBe(grouped);
        expect(softmaxGroupFits(layout.numHeads / layout.numKvHeads, layout.headDim)).toBe(grouped);
        const n = 70,
          w = (layout.numHeads + 2 * layout.numKvHeads) * layout.headDim,
          q = layout.numHeads * layout.headDim;
        const mask = tf.tensor2d([Array(n).fill(1), Array.from({ length: n }, (_, i) => (i < 9 ? 0 : 1))]);
        const qkv = tf.randomUniform([2 * n, w], -2, 2, 'float32', 24) as tf.Tensor2D;
        const dy = tf.randomUniform([2 * n, q], -1, 1, 'float32', 25);
        const grad = (impl: typeof unfused.attention) =>
          tf.grad(
            (x: tf.Tensor) =>
              impl(x as tf.Tensor2D, mask, layout)
                .mul(dy)
                .sum() as tf.Scalar,
          )(qkv);
        const a = grad(fused.attention),
          b = grad(unfused.attention);
        expect(await maxDiff(a, b)).toBeLessThan(2e-5);
        const out = fused.attention(qkv, mask, layout),
          ref = unfused.attention(qkv, mask, layout);
        expect(await maxDiff(out, ref)).toBeLessThan(2e-5);
        tf.dispose([out, ref]);
        const dq = a.slice([0, 0], [2 * n, q]);
        expect(await maxDiff(dq, tf.zerosLike(dq))).toBeGreaterThan(0.1); // dq is really there
        tf.dispose([qkv, mask, dy, a, b, dq]);
      },
    );

    // 'auto' groups the prefill and keeps decode steps per head; the other two force one kind for both.
    it.each(grouped ? (['auto', 'grouped', 'per-head'] as const) : (['auto'] as const))(
      `${name}: KV-cache attention (%s), a prefill then decode steps, equals full attention`,
      async (mode) => {
        expect(softmaxGroupFits(layout.numHeads / layout.numKvHeads, layout.headDim)).toBe(grouped);
        setWebGpuAttentionGrouping(mode);
        const n = 70,
          w = (layout.numHeads + 2 * layout.numKvHeads) * layout.headDim;
        const rowsMask = [Array(n).fill(1), Array.from({ length: n }, (_, i) => (i < 9 ? 0 : 1))];
        const qkv = tf.randomUniform([2 * n, w], -2, 2, 'float32', 26) as tf.Tensor2D;
        const full = unfused.attention(qkv, tf.tensor2d(rowsMask), layout);
        const slotMask = tf.tensor2d(rowsMask.map((r) => [...r, 0, 0]));
        const stitched = await cachedInPieces(qkv, slotMask, layout, [
          [0, 66],
          [66, 1],
          [67, 3],
        ]);
        expect(await maxDiff(stitched, full)).toBeLessThan(2e-5);
        tf.dispose([qkv, full, slotMask, stitched]);
      },
    );
  }

  it('a 100-position prefill then decode steps through the KV cache equal full attention', async () => {
    const qkv = tf.randomUniform([2 * T, W], -2, 2, 'float32', 23) as tf.Tensor2D;
    const slotMask = tf.tensor2d(maskRows.map((r) => [...r, 0, 0, 0, 0, 0, 0]));
    const full = unfused.attention(qkv, tf.tensor2d(maskRows), heads);
    const stitched = await cachedInPieces(qkv, slotMask, heads, [
      [0, 100],
      [100, 1],
      [101, 49],
    ]);
    expect(await maxDiff(stitched, full)).toBeLessThan(2e-5);
    tf.dispose([qkv, slotMask, full, stitched]);
  });
});

describe("AdamW's per-variable kernels write in place, and nothing else changes", () => {
  beforeAll(setup);

  it('a clone, a moment snapshot and a read-back copy stay as they were; the weight reads back updated', async () => {
    const w = tf.variable(tf.randomUniform([300, 7], -1, 1, 'float32', 11), true);
    const g = { w: tf.randomUniform([300, 7], -1, 1, 'float32', 12) };
    const opt = new AdamW({ w }, { lr: 0.01 });
    expect(opt.perVariable).toBe(true);
    await opt.stepClipped(g, 1.0);
    const clone = w.clone(); // shares w's data
    const before = Array.from(await w.data()); // tfjs now keeps a CPU copy of w
    const state = opt.getState(); // clones of the moments, sharing their data
    const m = Array.from(await state.m.w.data()),
      v = Array.from(await state.v.w.data());
    const tensors = tf.memory().numTensors;
    const r = await opt.stepClipped(g, 1.0);
    expect(r.applied).toBe(true);
    expect(tf.memory().numTensors).toBe(tensors);
    expect(Array.from(await clone.data())).toEqual(before);
    expect(Array.from(await state.m.w.data())).toEqual(m);
    expect(Array.from(await state.v.w.data())).toEqual(v);
    const after = Array.from(await w.data());
    expect(after.filter((x, i) => x !== before[i]).length).toBeGreaterThan(2000);
    // The in-place step is the op chain's step, run from the same state.
    const ref = tf.variable(tf.tensor(before, [300, 7]), true);
    const chain = new AdamW({ w: ref }, { lr: 0.01 });
    chain.setState(state);
    const c = await clipGradNormAsync(g, 1.0);
    chain.step(c.grads);
    const expected = await ref.data();
    after.forEach((x, i) => expect(Math.abs(x - expected[i])).toBeLessThan(1e-6));
    tf.dispose([w, g.w, clone, ref, ...Object.values(state.m), ...Object.values(state.v), ...Object.values(c.grads)]);
    opt.dispose();
    chain.dispose();
  });
});

describe('fused webgpu kernels with a mask held in an int32 buffer', () => {
  beforeAll(setup);

  // tfjs-webgpu casts int32 to float32 by relabelling the same buffer, so `intMask.toFloat()` (as the model does
  // with an int mask) reaches the shader as array<i32>: reading it as f32 would see every 1 as ~1e-45.
  it('attention and KV-cache attention give the same output as with a float mask', async () => {
    const heads = { numHeads: 4, numKvHeads: 2, headDim: 8 };
    const W = (heads.numHeads + 2 * heads.numKvHeads) * heads.headDim,
      kw = heads.numKvHeads * heads.headDim;
    const rows = [
      [0, 0, 1, 1, 1],
      [1, 1, 1, 0, 0],
    ];
    const qkv = tf.randomUniform([10, W], -2, 2, 'float32', 3) as tf.Tensor2D;
    const floatMask = tf.tensor2d(rows, undefined, 'float32');
    const intMask = tf.tensor2d(rows, undefined, 'int32');
    const relabelled = intMask.toFloat() as tf.Tensor2D;
    const a = fused.attention(qkv, floatMask, heads),
      b = fused.attention(qkv, relabelled, heads);
    const caches = [0, 1, 2, 3].map(() => tf.zeros([2, 5, kw]) as tf.Tensor3D);
    const [c, ck, cv] = fused.cachedAttention(qkv, caches[0], caches[1], floatMask, 0, heads);
    const [d, dk, dv] = fused.cachedAttention(qkv, caches[2], caches[3], relabelled, 0, heads);
    const [x, y, u, v] = await Promise.all([a.data(), b.data(), c.data(), d.data()]);
    expect(Array.from(y)).toEqual(Array.from(x));
    expect(Array.from(v)).toEqual(Array.from(u));
    expect(Array.from(x).some((e) => e !== 0)).toBe(true);
    tf.dispose([qkv, floatMask, intMask, relabelled, a, b, c, ck, cv, d, dk, dv, ...caches]);
  });

  // The KV-cache kernel writes the caches in place on the GPU; tfjs-webgpu keeps a CPU copy of a tensor once it has
  // been read back, which would then be stale.
  it("a KV cache read back before a decode step shows that step's new row afterwards", async () => {
    const heads = { numHeads: 2, numKvHeads: 1, headDim: 4 };
    const W = (heads.numHeads + 2 * heads.numKvHeads) * heads.headDim,
      kw = heads.numKvHeads * heads.headDim;
    const mask = tf.ones([1, 4]) as tf.Tensor2D;
    const k0 = tf.zeros([1, 4, kw]) as tf.Tensor3D,
      v0 = tf.zeros([1, 4, kw]) as tf.Tensor3D;
    const first = tf.randomUniform([1, W], -1, 1, 'float32', 5) as tf.Tensor2D;
    const [o1, k1, v1] = fused.cachedAttention(first, k0, v0, mask, 0, heads);
    expect(Array.from(await k1.data()).slice(kw)).toEqual(new Array(3 * kw).fill(0)); // read: cached on the CPU
    const second = tf.randomUniform([1, W], -1, 1, 'float32', 6) as tf.Tensor2D;
    const [o2, k2, v2] = fused.cachedAttention(second, k1, v1, mask, 1, heads);
    const newKey = Array.from(await second.slice([0, heads.numHeads * heads.headDim], [1, kw]).data());
    expect(Array.from(await k2.data()).slice(kw, 2 * kw)).toEqual(newKey);
    expect(Array.from(await k1.data()).slice(kw, 2 * kw)).toEqual(newKey); // the same buffer, as on cpu and wasm
    tf.dispose([mask, k0, v0, first, o1, k1, v1, second, o2, k2, v2]);
  });
});

// The shared suite's shapes fit one WGSL invocation per vocabulary entry and one workgroup; these do not.
describe('fused webgpu kernels on larger shapes', () => {
  beforeAll(setup);

  it('sampling over 1000 tokens (16 per invocation) picks the tokens of the stock-op sampler', async () => {
    const rows = 32,
      vocab = 1000;
    const logits = tf.randomNormal([rows, vocab], 0, 2, 'float32', 30) as tf.Tensor2D;
    const draws = Array.from({ length: rows }, (_, i) => (i === 0 ? 0 : i === 1 ? 0.9999 : (i * 0.6180339887) % 1));
    const uniforms = tf.tensor1d(draws);
    for (const temperature of [1, 0.3]) {
      const a = fused.sample(logits, uniforms, temperature),
        b = fused.unfused.sample(logits, uniforms, temperature);
      const [x, y] = [Array.from(await a.data()), Array.from(await b.data())];
      expect(x).toEqual(y);
      expect(new Set(x).size).toBeGreaterThan(rows / 2);
      expect(Math.max(...x)).toBeGreaterThan(vocab / 2); // crossings well past the first invocation's chunk
      tf.dispose([a, b]);
    }
    tf.dispose([logits, uniforms]);
  });

  it("embedding gradient with 300 lookups of 7 ids sums each id's rows", async () => {
    const table = tf.randomNormal([7, 40], 0, 1, 'float32', 31) as tf.Tensor2D;
    const ids = tf.tensor1d(
      Array.from({ length: 300 }, (_, i) => (i * i) % 7),
      'int32',
    );
    const w = tf.randomNormal([300, 40], 0, 1, 'float32', 32);
    const grad = (impl: typeof fused.embed) =>
      tf.grad((t: tf.Tensor) =>
        impl(t as tf.Tensor2D, ids)
          .mul(w)
          .sum(),
      )(table);
    const [a, b] = [grad(fused.embed), grad(fused.unfused.embed)];
    const [x, y] = [await a.data(), await b.data()];
    let worst = 0;
    for (let i = 0; i < x.length; i++) worst = Math.max(worst, Math.abs(x[i] - y[i]));
    expect(worst).toBeLessThan(1e-4); // sums of ~40-120 terms of size ~1 in different orders
    expect(Array.from(x.slice(5 * 40, 6 * 40)).every((v) => v === 0)).toBe(true); // 5 is never a square mod 7
    tf.dispose([table, ids, w, a, b]);
  });
});

// Why fuse on WebGPU: each dispatch costs ~0.3-0.5 ms through Dawn on a real GPU. Pins how many compute programs
// each kernel runs (webgpu.ts explains each one), so the count cannot silently grow back.
describe('GPU programs per fused webgpu kernel', () => {
  beforeAll(setup);

  it('each kernel runs its pinned number of compute programs', () => {
    const backend = tf.backend() as unknown as { runWebGPUProgram: (...a: unknown[]) => unknown };
    const original = backend.runWebGPUProgram;
    let programs = 0;
    const tensorsBefore = tf.memory().numTensors;
    backend.runWebGPUProgram = function (this: unknown, ...a: unknown[]) {
      programs++;
      return original.apply(this, a);
    };
    try {
      const heads = { numHeads: 4, numKvHeads: 2, headDim: 8 };
      const W = (heads.numHeads + 2 * heads.numKvHeads) * heads.headDim;
      const x = tf.ones([4, 16]),
        w = tf.ones([16]),
        qkv = tf.ones([6, W]),
        mask = tf.ones([2, 3]);
      const out = tf.ones([6, 32]),
        lse = tf.zeros([2, 4, 3]),
        cache = tf.zeros([2, 5, 16]),
        cacheMask = tf.ones([2, 5]);
      const logits = tf.ones([3, 11]),
        targets = tf.tensor1d([1, -1, 4], 'int32'),
        r = tf.ones([3]);
      const positions = tf.tensor1d([0, 1, 2, 3], 'int32'),
        table = tf.ones([4, 8]),
        rows = tf.ones([4, W]);
      const half = tf.ones([4, 8]),
        cacheV = tf.zeros([2, 5, 16]),
        ids = tf.tensor1d([1, 0, 4], 'int32'),
        draws = tf.fill([3], 0.5);
      const cases: [string, tf.NamedTensorMap, object, number][] = [
        [fused.K.rmsNorm, { x, weight: w }, { eps: 1e-6 }, 1],
        [fused.K.rmsNormGrad, { dy: x, x, weight: w }, { eps: 1e-6 }, 3],
        [
          fused.K.rope,
          { x: rows, positions, cos: table, sin: table },
          { rotatedHeads: 6, headDim: 8, inverse: false },
          1,
        ],
        [fused.K.swiGlu, { gu: x }, {}, 1],
        [fused.K.swiGluGrad, { dy: half, gu: x }, {}, 1],
        [fused.K.attention, { qkv, mask }, heads, 2],
        [fused.K.attentionGrad, { dOut: out, qkv, mask, out, lse }, heads, 3],
        [fused.K.cachedAttention, { qkv, cacheK: cache, cacheV, mask: cacheMask }, { ...heads, slot: 0 }, 3],
        [fused.K.logProbs, { logits, targets }, { temperature: 1 }, 3],
        [fused.K.logProbsGrad, { dLogProbs: r, dEntropy: r, logits, targets }, { temperature: 1 }, 2],
        [fused.K.embed, { table: x, ids }, {}, 1],
        [fused.K.embedGrad, { dy: half, ids: positions }, { vocabSize: 6 }, 3],
        [fused.K.sample, { logits, uniforms: draws }, { temperature: 1 }, 1],
      ];
      for (const [name, inputs, attrs, expected] of cases) {
        programs = 0;
        tf.tidy(() => {
          tf.engine().runKernel(name, inputs, attrs as tf.NamedAttrMap);
        });
        expect(programs, name).toBe(expected);
      }
      tf.dispose([
        x,
        w,
        qkv,
        mask,
        out,
        lse,
        cache,
        cacheV,
        cacheMask,
        logits,
        targets,
        r,
        positions,
        table,
        rows,
        half,
        ids,
        draws,
      ]);
      expect(tf.memory().numTensors).toBe(tensorsBefore);
    } finally {
      backend.runWebGPUProgram = original;
    }
  });
});
