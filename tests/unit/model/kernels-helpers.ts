// Shared by kernels-{cpu,wasm,webgpu}.test.ts: every fused kernel (src/model/kernels) against the stock tfjs
// composition it replaces (`unfused`), forward and gradient, on one backend. Inputs are random but seeded; shapes
// cover grouped-query heads (nH > nKV), padding (a row whose first keys are masked: left padding, and a query
// that sees no key at all) and vocabulary sizes that are not multiples of 4 (the SIMD tails).
import * as tf from '@tensorflow/tfjs';
import { describe, expect, it } from 'vitest';
import * as fused from '../../../src/model/kernels/index';
import { unfused, type HeadAttrs } from '../../../src/model/kernels/index';
import { seededUniform } from '../../../src/model/seeded';
import { AdamW, clipGradNormAsync } from '../../../src/model/adamw';

function rand(shape: number[], seed: number, scale = 1): tf.Tensor {
  const u = seededUniform(seed);
  const n = shape.reduce((a, b) => a * b, 1);
  return tf.tensor(
    Float32Array.from({ length: n }, () => (u() * 2 - 1) * scale),
    shape,
    'float32',
  );
}

async function maxAbsDiff(a: tf.Tensor, b: tf.Tensor): Promise<number> {
  expect(a.shape).toEqual(b.shape);
  const [x, y] = await Promise.all([a.data(), b.data()]);
  let m = 0;
  for (let i = 0; i < x.length; i++) m = Math.max(m, Math.abs(x[i] - y[i]));
  return m;
}

/** Gradients of sum(f(inputs) * w) with respect to every input, w a fixed random weighting of the output. */
function gradsOf(f: (...xs: tf.Tensor[]) => tf.Tensor, inputs: tf.Tensor[], seed: number): tf.Tensor[] {
  return tf.tidy(() => {
    const probe = f(...inputs);
    const w = rand(probe.shape, seed);
    probe.dispose();
    return tf.grads((...xs: tf.Tensor[]) =>
      f(...xs)
        .mul(w)
        .sum(),
    )(inputs);
  });
}

async function expectClose(
  fusedOut: tf.Tensor | tf.Tensor[],
  refOut: tf.Tensor | tf.Tensor[],
  tol: number,
): Promise<void> {
  const a = Array.isArray(fusedOut) ? fusedOut : [fusedOut];
  const b = Array.isArray(refOut) ? refOut : [refOut];
  expect(a.length).toBe(b.length);
  for (let i = 0; i < a.length; i++) expect(await maxAbsDiff(a[i], b[i])).toBeLessThan(tol);
  tf.dispose([...a, ...b]);
}

/** One kernel per layer of a real model: with `fused` the fused path must be taken (no fallback). */
/** The optimizer kernels (multi-tensor, in place): the sum of squares on every backend, AdamW in one of two layouts. */
export const OPTIMIZER_KERNELS: readonly string[] = [fused.K.sumSquares, fused.K.adamW];

/** AdamW over the flat moments, in place: cpu and wasm only (webgpu keeps its moments per variable). */
export const FLAT_ADAMW_KERNELS: readonly string[] = [fused.K.adamW];

/** Registered on webgpu only: the opt-in tiled matmul and its f16 packing (webgpuMatmul.ts), and AdamW's
 *  per-variable in-place kernels (webgpuAdamW.ts). */
export const WEBGPU_ONLY_KERNELS: readonly string[] = [
  fused.K.tiledMatMul,
  fused.K.packHalf,
  fused.K.adamWCheck,
  fused.K.adamWWrite,
];

/** Registered on wasm only: a whole decoder layer of generation in one kernel (tested in decode-layer.test.ts). */
export const WASM_ONLY_KERNELS: readonly string[] = [fused.K.decodeLayer];

export function describeFusedKernels(
  backend: string,
  opts: { tol?: number; setup: () => Promise<void>; optimizer?: boolean },
): void {
  const optimizer = opts.optimizer ?? true;
  const tol = opts.tol ?? 2e-5;
  describe(`fused kernels on ${backend}`, () => {
    const heads: HeadAttrs = { numHeads: 4, numKvHeads: 2, headDim: 8 };
    const [B, T] = [3, 7];
    const W = (heads.numHeads + 2 * heads.numKvHeads) * heads.headDim;
    // Row 0: all real. Row 1: two left-padding tokens (its first two queries see no key). Row 2: right padding.
    const maskRows = [
      [1, 1, 1, 1, 1, 1, 1],
      [0, 0, 1, 1, 1, 1, 1],
      [1, 1, 1, 1, 0, 0, 0],
    ];

    it('the fused kernels are registered for this backend', async () => {
      await opts.setup();
      expect(tf.getBackend()).toBe(backend);
      for (const name of Object.values(fused.K)) {
        const absent =
          (OPTIMIZER_KERNELS.includes(name) && !optimizer) ||
          (WEBGPU_ONLY_KERNELS.includes(name) && backend !== 'webgpu') ||
          (WASM_ONLY_KERNELS.includes(name) && backend !== 'wasm') ||
          (FLAT_ADAMW_KERNELS.includes(name) && backend === 'webgpu');
        if (absent) expect(tf.getKernel(name, backend), name).toBeUndefined();
        else expect(tf.getKernel(name, backend), name).toBeDefined();
      }
    });

    if (optimizer)
      it('clipping + AdamW in two kernels: the norm and the updated weights and moments of the stock path', async () => {
        const shapes = [[7, 5], [5], [3, 9]];
        const make = (seed: number) =>
          Object.fromEntries(shapes.map((sh, i) => [`w${i}`, tf.variable(rand(sh, seed + i), true)]));
        const grads = Object.fromEntries(shapes.map((sh, i) => [`w${i}`, rand(sh, 40 + i, 3)]));
        const results: { norm: number; weights: Float32Array[]; state: Float32Array[] }[] = [];
        for (const fusedPath of [true, false]) {
          const vars = make(30);
          const opt = new AdamW(vars, { lr: 0.01, weightDecay: 0.1 });
          let norm = NaN;
          for (let step = 0; step < 3; step++) {
            if (fusedPath)
              norm = (await opt.stepClipped(grads, 1.5)).norm; // the norm is ~20: clipping acts
            else {
              const c = await clipGradNormAsync(grads, 1.5);
              norm = c.norm;
              opt.step(c.grads);
              tf.dispose(Object.values(c.grads));
            }
          }
          const st = opt.getState();
          results.push({
            norm,
            weights: await Promise.all(Object.values(vars).map(async (v) => (await v.data()) as Float32Array)),
            state: await Promise.all(
              [...Object.values(st.m), ...Object.values(st.v)].map(async (t) => (await t.data()) as Float32Array),
            ),
          });
          tf.dispose([...Object.values(st.m), ...Object.values(st.v), ...Object.values(vars)]);
          opt.dispose();
        }
        const [a, b] = results;
        expect(a.norm).toBeGreaterThan(1.5);
        expect(Math.abs(a.norm - b.norm)).toBeLessThan(1e-4 * b.norm);
        a.weights.forEach((w, i) => w.forEach((x, j) => expect(Math.abs(x - b.weights[i][j])).toBeLessThan(1e-6)));
        a.state.forEach((w, i) => w.forEach((x, j) => expect(Math.abs(x - b.state[i][j])).toBeLessThan(1e-6)));
        tf.dispose(Object.values(grads));
      });

    // The Trainer builds the critic and the reference from clones of the actor's weights; on cpu (and webgpu) a
    // clone shares its data, and an in-place step must not write into the other model's weights.
    if (optimizer)
      it("AdamW in place leaves a variable built from a clone of the stepped one (another model's weight) alone", async () => {
        const w = tf.variable(rand([6, 5], 60), true);
        const c = w.clone();
        const other = tf.variable(c, true);
        c.dispose();
        const before = Array.from(await other.data());
        const opt = new AdamW({ w }, { lr: 0.1 });
        const g = { w: rand([6, 5], 61) };
        expect((await opt.stepClipped(g, 1.0)).applied).toBe(true);
        expect(Array.from(await other.data())).toEqual(before);
        expect(Array.from(await w.data())).not.toEqual(before);
        tf.dispose([w, other, g.w]);
        opt.dispose();
      });

    if (optimizer)
      it('AdamW writes nothing when an updated weight would not be finite (a learning rate of 1e39)', async () => {
        const vars = { w: tf.variable(rand([4, 4], 50), true) };
        const before = await vars.w.data();
        const opt = new AdamW(vars, { lr: 1e39, weightDecay: 0 });
        const g = { w: rand([4, 4], 51) };
        const r = await opt.stepClipped(g, 1.0);
        expect(Number.isFinite(r.norm)).toBe(true);
        expect(r.applied).toBe(false);
        expect(Array.from(await vars.w.data())).toEqual(Array.from(before));
        expect(opt.stepsTaken).toBe(0);
        tf.dispose([vars.w, g.w]);
        opt.dispose();
      });

    // tfjs-wasm's matmul keeps its right operand packed, per tensor, as it was when first multiplied (it takes that
    // operand for a constant weight); a weight AdamW changed in place must be multiplied as it is now. LoRA's merge
    // W + s B A, run before each step's generation, has the adapter A itself as that operand.
    if (optimizer)
      it('a matmul by a weight that AdamW updated in place multiplies by its new values', async () => {
        const w = tf.variable(rand([5, 6], 70), true);
        const x = rand([3, 5], 71);
        const g = { w: rand([5, 6], 72) };
        const opt = new AdamW({ w }, { lr: 0.1 });
        for (let step = 0; step < 3; step++) {
          tf.matMul(x, w).dispose();
          expect((await opt.stepClipped(g, 1.0)).applied).toBe(true);
          const copy = tf.tensor(await w.data(), w.shape); // new data: nothing cached about it
          const [now, expected] = [tf.matMul(x, w), tf.matMul(x, copy)];
          expect(Array.from(await now.data())).toEqual(Array.from(await expected.data()));
          tf.dispose([copy, now, expected]);
        }
        tf.dispose([w, x, g.w]);
        opt.dispose();
      });

    it('embedding lookup (repeated ids): forward and gradient', async () => {
      const table = rand([9, 12], 20);
      const ids = tf.tensor1d([3, 0, 8, 3, 3, 5], 'int32');
      await expectClose(fused.embed(table as tf.Tensor2D, ids), unfused.embed(table as tf.Tensor2D, ids), 1e-12); // a copy: exact
      await expectClose(
        gradsOf((t) => fused.embed(t as tf.Tensor2D, ids), [table], 21),
        gradsOf((t) => unfused.embed(t as tf.Tensor2D, ids), [table], 21),
        tol,
      );
      tf.dispose([table, ids]);
    });

    it('sampling by inverse CDF picks the tokens of the stock-op sampler', async () => {
      const logits = rand([64, 37], 22, 3) as tf.Tensor2D;
      const u = seededUniform(23);
      const uniforms = tf.tensor1d(Array.from({ length: 64 }, (_, i) => (i === 0 ? 0 : i === 1 ? 0.999999 : u())));
      for (const temperature of [1, 0.5]) {
        const a = Array.from(await fused.sample(logits, uniforms, temperature).data());
        const b = Array.from(await unfused.sample(logits, uniforms, temperature).data());
        expect(a).toEqual(b);
        expect(new Set(a).size).toBeGreaterThan(10);
      }
      tf.dispose([logits, uniforms]);
    });

    it('RMSNorm: forward and gradients match the composition', async () => {
      const x = rand([5, 12], 1, 3),
        w = rand([12], 2);
      await expectClose(
        fused.rmsNorm(x as tf.Tensor2D, w as tf.Tensor1D, 1e-6),
        unfused.rmsNorm(x as tf.Tensor2D, w as tf.Tensor1D, 1e-6),
        tol,
      );
      await expectClose(
        gradsOf((a, b) => fused.rmsNorm(a as tf.Tensor2D, b as tf.Tensor1D, 1e-6), [x, w], 3),
        gradsOf((a, b) => unfused.rmsNorm(a as tf.Tensor2D, b as tf.Tensor1D, 1e-6), [x, w], 3),
        tol,
      );
      tf.dispose([x, w]);
    });

    it('RoPE on the query and key heads of a packed row: forward and gradient', async () => {
      const hd = heads.headDim,
        rot = heads.numHeads + heads.numKvHeads;
      const x = rand([6, W], 4);
      const positions = tf.tensor1d([0, 3, 17, 5, 1, 30], 'int32');
      const angle = (p: number, i: number) => p * Math.pow(10000, -(2 * (i % (hd / 2))) / hd);
      const cos = tf.tensor2d(
        Array.from({ length: 32 * hd }, (_, k) => Math.cos(angle(Math.floor(k / hd), k % hd))),
        [32, hd],
      );
      const sin = tf.tensor2d(
        Array.from({ length: 32 * hd }, (_, k) => Math.sin(angle(Math.floor(k / hd), k % hd))),
        [32, hd],
      );
      const run = (impl: typeof unfused.rope) => (a: tf.Tensor) =>
        impl(a as tf.Tensor2D, positions, cos as tf.Tensor2D, sin as tf.Tensor2D, rot, hd);
      await expectClose(run(fused.rope)(x), run(unfused.rope)(x), tol);
      // The value heads pass through untouched.
      const y = run(fused.rope)(x);
      expect(
        await maxAbsDiff(y.slice([0, rot * hd], [6, W - rot * hd]), x.slice([0, rot * hd], [6, W - rot * hd])),
      ).toBe(0);
      await expectClose(gradsOf(run(fused.rope), [x], 5), gradsOf(run(unfused.rope), [x], 5), tol);
      tf.dispose([x, y, positions, cos, sin]);
    });

    it('SwiGLU: forward and gradient', async () => {
      const gu = rand([5, 2 * 10], 6, 4);
      await expectClose(fused.swiGlu(gu as tf.Tensor2D), unfused.swiGlu(gu as tf.Tensor2D), tol);
      await expectClose(
        gradsOf((a) => fused.swiGlu(a as tf.Tensor2D), [gu], 7),
        gradsOf((a) => unfused.swiGlu(a as tf.Tensor2D), [gu], 7),
        tol,
      );
      gu.dispose();
    });

    it('token log-probs and entropy (temperature 1 and 0.7, a row without target): forward and gradient', async () => {
      const logits = rand([6, 37], 8, 5);
      const targets = tf.tensor1d([0, 36, 5, -1, 17, 2], 'int32');
      for (const temperature of [1, 0.7]) {
        await expectClose(
          fused.tokenLogProbs(logits as tf.Tensor2D, targets, temperature),
          unfused.tokenLogProbs(logits as tf.Tensor2D, targets, temperature),
          tol,
        );
        const both = (impl: typeof unfused.tokenLogProbs) => (z: tf.Tensor) => {
          const [lp, ent] = impl(z as tf.Tensor2D, targets, temperature);
          return tf.concat([lp, ent.mul(0.37)]); // both outputs get a gradient
        };
        await expectClose(
          gradsOf(both(fused.tokenLogProbs), [logits], 9),
          gradsOf(both(unfused.tokenLogProbs), [logits], 9),
          tol,
        );
      }
      tf.dispose([logits, targets]);
    });

    it('causal grouped-query attention with padding: forward and gradient', async () => {
      const qkv = rand([B * T, W], 10, 2);
      const mask = tf.tensor2d(maskRows);
      const run = (impl: typeof unfused.attention) => (a: tf.Tensor) => impl(a as tf.Tensor2D, mask, heads);
      const out = run(fused.attention)(qkv);
      await expectClose(out.clone(), run(unfused.attention)(qkv), tol);
      // Row 1's first two queries see no key: zeros.
      expect(
        Array.from(await out.slice([T, 0], [2, heads.numHeads * heads.headDim]).data()).every((v) => v === 0),
      ).toBe(true);
      await expectClose(gradsOf(run(fused.attention), [qkv], 11), gradsOf(run(unfused.attention), [qkv], 11), tol);
      tf.dispose([qkv, mask, out]);
    });

    it('causal attention over a long sequence (160 positions, right padding): forward and gradient', async () => {
      // The warm starts' prompts are 200-600 tokens: a copy from the prompt into the reasoning needs exact attention
      // (and its gradient) far back, beyond every tile a kernel uses (webgpu's keys go by in tiles of 64: 160 is two
      // whole tiles and a partial one). Longer costs SwiftShader minutes and checks no other code path.
      const long = 160;
      const qkv = rand([2 * long, W], 15, 2);
      const mask = tf.tensor2d([Array(long).fill(1), Array.from({ length: long }, (_, i) => (i < long - 17 ? 1 : 0))]);
      const run = (impl: typeof unfused.attention) => (a: tf.Tensor) => impl(a as tf.Tensor2D, mask, heads);
      await expectClose(run(fused.attention)(qkv), run(unfused.attention)(qkv), tol);
      await expectClose(gradsOf(run(fused.attention), [qkv], 16), gradsOf(run(unfused.attention), [qkv], 16), tol);
      tf.dispose([qkv, mask]);
    });

    it('attention with a head size that is not a multiple of 8, three query heads per key head and a partial block of queries', async () => {
      // wasm's kernel takes the head dimension 8 at a time, then 4, and the queries 4 at a time: 12 and 9 leave
      // a remainder of each; one key head for three query heads shares its transposed keys across them.
      const odd: HeadAttrs = { numHeads: 3, numKvHeads: 1, headDim: 12 };
      const n = 9;
      const qkv = rand([2 * n, (odd.numHeads + 2 * odd.numKvHeads) * odd.headDim], 21, 2);
      const mask = tf.tensor2d([
        [0, 0, 0, 1, 1, 1, 1, 1, 1],
        [1, 1, 1, 1, 1, 1, 0, 0, 0],
      ]);
      const run = (impl: typeof unfused.attention) => (a: tf.Tensor) => impl(a as tf.Tensor2D, mask, odd);
      await expectClose(run(fused.attention)(qkv), run(unfused.attention)(qkv), tol);
      await expectClose(gradsOf(run(fused.attention), [qkv], 22), gradsOf(run(unfused.attention), [qkv], 22), tol);
      tf.dispose([qkv, mask]);
    });

    // wasm takes the query heads that share a key head two at a time: 4/2 heads make pairs; 3/1 a pair and one
    // alone, with a head size (12) that is not a multiple of 8.
    for (const [label, hs] of [
      ['', heads],
      [' (three query heads per key head, head size 12)', { numHeads: 3, numKvHeads: 1, headDim: 12 }],
    ] as [string, HeadAttrs][])
      it(`attention with a KV cache: prefill then decode steps equal full causal attention${label}`, async () => {
        const W = (hs.numHeads + 2 * hs.numKvHeads) * hs.headDim;
        const C = 12;
        const kw = hs.numKvHeads * hs.headDim;
        const qkv = rand([B * T, W], 12, 2);
        const mask = tf.tensor2d(maskRows);
        const full = unfused.attention(qkv as tf.Tensor2D, mask, hs);
        for (const impl of [fused.cachedAttention, unfused.cachedAttention]) {
          let k = tf.zeros([B, C, kw]) as tf.Tensor3D,
            v = tf.zeros([B, C, kw]) as tf.Tensor3D;
          const slotMask = tf.tensor2d(maskRows.map((r) => [...r, ...new Array(C - T).fill(0)]));
          const rows = tf.tidy(() => qkv.reshape([B, T, W]));
          const outs: tf.Tensor[] = [];
          // Prefill the first 4 positions, then one position at a time.
          const pieces: [number, number][] = [
            [0, 4],
            [4, 1],
            [5, 1],
            [6, 1],
          ];
          for (const [slot, n] of pieces) {
            const part = tf.tidy(() => rows.slice([0, slot, 0], [B, n, W]).reshape([B * n, W])) as tf.Tensor2D;
            const [out, nk, nv] = impl(part, k, v, slotMask, slot, hs);
            if (nk !== k) k.dispose();
            if (nv !== v) v.dispose();
            k = nk;
            v = nv;
            outs.push(tf.tidy(() => out.reshape([B, n, -1])));
            tf.dispose([part, out]);
          }
          const stitched = tf.tidy(() => tf.concat(outs, 1).reshape([B * T, -1]));
          expect(await maxAbsDiff(stitched, full)).toBeLessThan(tol);
          // The cache holds each real position's key.
          const keys = tf.tidy(() => rows.slice([0, 0, hs.numHeads * hs.headDim], [B, T, kw]));
          expect(
            await maxAbsDiff(
              tf.tidy(() => k.slice([0, 0, 0], [B, T, kw])),
              keys,
            ),
          ).toBe(0);
          tf.dispose([k, v, slotMask, rows, stitched, keys, ...outs]);
        }
        tf.dispose([qkv, mask, full]);
      });

    it('attention with a KV cache whose earlier turn is masked out (a context window): only the visible keys count', async () => {
      // A multi-turn rollout keeps every turn in the cache while the window shows the last: whole runs of masked
      // keys (the wasm kernel skips those four at a time), next to masked keys scattered among visible ones.
      const C = 16,
        prefill = 13;
      const kw = heads.numKvHeads * heads.headDim;
      const qkv = rand([B * prefill, W], 17, 3);
      const step = rand([B, W], 18, 3);
      const open = tf.tensor2d(
        Array.from({ length: B }, () => Array.from({ length: C }, (_, s) => (s <= prefill ? 1 : 0))),
      );
      const windowed = tf.tensor2d(
        Array.from({ length: B }, (_, b) =>
          Array.from({ length: C }, (_, s) =>
            s > prefill ? 0 : b === 0 ? (s >= 8 ? 1 : 0) : [0, 1, 2, 5, 9].includes(s) ? 0 : 1,
          ),
        ),
      );
      const decoded: tf.Tensor[] = [];
      for (const impl of [fused.cachedAttention, unfused.cachedAttention]) {
        const empty = [tf.zeros([B, C, kw]), tf.zeros([B, C, kw])] as tf.Tensor3D[];
        const [first, k, v] = impl(qkv as tf.Tensor2D, empty[0], empty[1], open, 0, heads);
        const [out, k2, v2] = impl(step as tf.Tensor2D, k, v, windowed, prefill, heads);
        decoded.push(out);
        tf.dispose([...empty, first, k, v, k2, v2]);
      }
      expect(await maxAbsDiff(decoded[0], decoded[1])).toBeLessThan(tol);
      tf.dispose([qkv, step, open, windowed, ...decoded]);
    });

    it('leaves no tensors behind', async () => {
      const before = tf.memory().numTensors;
      const qkv = rand([B * T, W], 13),
        mask = tf.tensor2d(maskRows);
      tf.dispose(gradsOf((a) => fused.attention(a as tf.Tensor2D, mask, heads), [qkv], 14));
      tf.dispose([qkv, mask]);
      expect(tf.memory().numTensors).toBe(before);
    });
  });
}
