// Shared by parity-{cpu,wasm,webgpu}.test.ts: loads the PyTorch fixtures (tools/parity/make_fixtures.py) and
// computes the same quantities with our tfjs model. Only `await data()` reads (webgpu in Node has no sync read).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend, SWIFTSHADER_ICD, type BackendName } from '../../../src/model/backend';
import type { Qwen2Config } from '../../../src/model/config';
import { Qwen2Model, withHfWeights, type WeightMap } from '../../../src/model/qwen2';
import { namedVariableGrads, tokenLogProbs } from '../../../src/model/scoring';
import { AdamW, clipGradNormAsync } from '../../../src/model/adamw';
import { generate } from '../../../src/model/generate';

interface F32Json {
  shape: number[];
  f32: string;
}
export interface Arr {
  shape: number[];
  data: Float32Array;
}

export interface ParityFixture {
  name: string;
  config: Qwen2Config;
  valueHead: boolean;
  adamw: { lr: number; betas: [number, number]; eps: number; weightDecay: number; clipNorm: number; steps: number };
  entropyCoef: number;
  weights: Record<string, Arr>;
  ids: number[][];
  mask: number[][];
  lossMask: Arr;
  advantages?: Arr;
  returns?: Arr;
  logits?: Arr;
  values?: Arr;
  logProbs?: Arr;
  entropy?: Arr;
  logProbsT07?: Arr;
  entropyT07?: Arr;
  greedy?: { prompt: number[]; tokens: number[]; minMargin: number };
  loss: number;
  grads: Record<string, Arr>;
  stepLosses: number[];
  stepGradNorms: number[];
  weightsAfterAdamW: Record<string, Arr>;
}

export const FIXTURE_NAMES = ['qwen2-tied', 'qwen2-untied', 'qwen2-value'] as const;

function decode(a: F32Json): Arr {
  const bytes = Buffer.from(a.f32, 'base64');
  const copy = new Uint8Array(bytes.length);
  copy.set(bytes);
  return { shape: a.shape, data: new Float32Array(copy.buffer) };
}

export function loadFixture(name: string): ParityFixture {
  const url = new URL(`../../fixtures/parity/${name}.json`, import.meta.url);
  const raw = JSON.parse(readFileSync(fileURLToPath(url), 'utf8'));
  const out: Record<string, unknown> = { ...raw, name };
  for (const [key, value] of Object.entries(raw)) {
    if (value && typeof value === 'object' && 'f32' in (value as object)) out[key] = decode(value as F32Json);
  }
  for (const key of ['weights', 'grads', 'weightsAfterAdamW']) {
    out[key] = Object.fromEntries(Object.entries(raw[key] as Record<string, F32Json>).map(([k, v]) => [k, decode(v)]));
  }
  return out as unknown as ParityFixture;
}

export function weightsOf(fx: ParityFixture): WeightMap {
  return Object.fromEntries(Object.entries(fx.weights).map(([k, a]) => [k, tf.tensor(a.data, a.shape)]));
}

/** Largest |a - b| over the entries where `keep` is true. */
export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>, keep?: (i: number) => boolean): number {
  if (a.length !== b.length) throw new Error(`length ${a.length} vs ${b.length}`);
  let worst = 0;
  for (let i = 0; i < a.length; i++) if (!keep || keep(i)) worst = Math.max(worst, Math.abs(a[i] - b[i]));
  return worst;
}

/** Largest |a - b| / (atol + rtol * |b|): <= 1 means within tolerance everywhere. */
export function worstRatio(a: ArrayLike<number>, b: ArrayLike<number>, atol: number, rtol: number): number {
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]) / (atol + rtol * Math.abs(b[i])));
  return worst;
}

function maskedMean(x: tf.Tensor, m: tf.Tensor): tf.Scalar {
  return x.mul(m).sum().div(m.sum()) as tf.Scalar;
}

/** What our implementation computes for a fixture (all read back to plain arrays). */
export interface OurResults {
  output: Float32Array; // logits [B,T,V] or values [B,T]
  logProbs?: Float32Array;
  entropy?: Float32Array;
  logProbsT07?: Float32Array;
  entropyT07?: Float32Array;
  loss: number;
  grads: Record<string, Float32Array>;
  stepLosses: number[];
  stepGradNorms: number[];
  weightsAfterAdamW: Record<string, Float32Array>;
  greedyTokens?: number[];
  tensorsLeaked: number;
}

export async function runOurs(fx: ParityFixture): Promise<OurResults> {
  const before = tf.memory().numTensors;
  const model = new Qwen2Model(fx.config, weightsOf(fx), { valueHead: fx.valueHead });
  const ids = tf.tensor2d(fx.ids, undefined, 'int32');
  const mask = tf.tensor2d(fx.mask, undefined, 'int32');
  const [b, t] = ids.shape;
  const lossMask = tf.tensor2d(fx.lossMask.data, [b, t - 1]);
  const target = tf.tensor2d((fx.advantages ?? fx.returns)!.data, [b, t - 1]);

  const out = model.forward(ids, mask);
  const results: Partial<OurResults> = { output: (await out.data()) as Float32Array };
  out.dispose();
  if (!fx.valueHead) {
    for (const [temperature, suffix] of [
      [1, ''],
      [0.7, 'T07'],
    ] as const) {
      const { logProbs, entropy } = tokenLogProbs(model, ids, mask, temperature);
      (results as Record<string, unknown>)['logProbs' + suffix] = await logProbs.data();
      (results as Record<string, unknown>)['entropy' + suffix] = await entropy.data();
      tf.dispose([logProbs, entropy]);
    }
  }
  const lossFn = (): tf.Scalar => {
    if (fx.valueHead) {
      const values = model.forward(ids, mask).slice([0, 0], [b, t - 1]);
      return maskedMean(values.sub(target).square(), lossMask).mul(0.5) as tf.Scalar;
    }
    const { logProbs, entropy } = tokenLogProbs(model, ids, mask);
    return maskedMean(logProbs.neg().mul(target), lossMask).sub(
      maskedMean(entropy, lossMask).mul(fx.entropyCoef),
    ) as tf.Scalar;
  };

  const first = namedVariableGrads(model.variables, lossFn);
  results.loss = (await first.value.data())[0];
  results.grads = {};
  // The model's variables hold q/k/v and gate/up stacked: compared with PyTorch's per HF weight.
  await withHfWeights(fx.config, first.grads, async (hf) => {
    for (const [k, g] of Object.entries(hf)) results.grads![k] = (await g.data()) as Float32Array;
  });
  tf.dispose([first.value, ...Object.values(first.grads)]);

  const opt = new AdamW(model.variables, {
    lr: fx.adamw.lr,
    betas: fx.adamw.betas,
    eps: fx.adamw.eps,
    weightDecay: fx.adamw.weightDecay,
  });
  results.stepLosses = [];
  results.stepGradNorms = [];
  for (let s = 0; s < fx.adamw.steps; s++) {
    const { value, grads } = namedVariableGrads(model.variables, lossFn);
    const clipped = await clipGradNormAsync(grads, fx.adamw.clipNorm);
    opt.step(clipped.grads);
    results.stepLosses.push((await value.data())[0]);
    results.stepGradNorms.push(clipped.norm);
    tf.dispose([value, ...Object.values(grads), ...Object.values(clipped.grads)]);
  }
  results.weightsAfterAdamW = {};
  await withHfWeights(fx.config, model.variables, async (hf) => {
    for (const [k, v] of Object.entries(hf)) results.weightsAfterAdamW![k] = (await v.data()) as Float32Array;
  });
  opt.dispose();
  model.dispose();

  if (fx.greedy) {
    // Greedy decoding through the KV cache, from the fixture's original weights.
    const fresh = new Qwen2Model(fx.config, weightsOf(fx));
    const g = await generate(fresh, [fx.greedy.prompt], {
      maxNewTokens: fx.greedy.tokens.length,
      temperature: 0,
      seed: 0,
      padTokenId: 0,
    });
    results.greedyTokens = g.tokens[0];
    fresh.dispose();
  }
  tf.dispose([ids, mask, lossMask, target]);
  results.tensorsLeaked = tf.memory().numTensors - before;
  return results as OurResults;
}

// ---------------------------------------------------------------------------------------------------------------
// The suite, registered by each backend's test file. Tolerances (float32 throughout; PyTorch on CPU):
//   logits / values, log-probs, entropy: max abs difference 1e-4 at real positions (padding outputs are
//     meaningless by contract; measured ~5e-6 on cpu, wasm and webgpu/SwiftShader)
//   loss: 1e-5 relative; gradient of every weight: |ours - ref| <= 1e-5 + 1e-4 |ref| elementwise (measured worst
//     ratio ~0.06 of that bound)
//   AdamW: per-step losses 1e-5 abs-rel, pre-clip gradient norms 1e-5 relative, weights after 3 steps 1e-4 abs
//     (lr is 1e-2, so 1e-4 is 1% of one step; measured worst 3e-5: Adam's m/sqrt(v) amplifies tiny gradients)
//   greedy decoding through the KV cache: token-exact (the fixture's top-2 margins are >= 1e-3)

export const TOL = { output: 1e-4, gradAbs: 1e-5, gradRel: 1e-4, adamwAbs: 1e-4, scalarRel: 1e-5 };

const relClose = (a: number, b: number, rel: number) => Math.abs(a - b) <= rel * Math.max(1, Math.abs(b));

export function defineParitySuite(backend: BackendName, names: readonly string[] = FIXTURE_NAMES): void {
  beforeAll(async () => {
    if (backend === 'webgpu') process.env.VK_ICD_FILENAMES ??= SWIFTSHADER_ICD;
    const info = await initBackend(backend);
    expect(info.name).toBe(backend);
    expect(tf.getBackend()).toBe(backend);
  });

  for (const name of names) {
    describe(`${name} on ${backend} vs PyTorch`, () => {
      const fx = loadFixture(name);
      const [b, t] = [fx.ids.length, fx.ids[0].length];
      let ours: OurResults;
      beforeAll(async () => {
        ours = await runOurs(fx);
      });

      it(`${fx.valueHead ? 'values' : 'logits'} match at real positions (abs ${TOL.output})`, () => {
        const ref = (fx.valueHead ? fx.values : fx.logits)!;
        const perToken = ref.data.length / (b * t);
        const real = (i: number) => fx.mask[Math.floor(i / perToken / t)][Math.floor(i / perToken) % t] === 1;
        expect(ours.output.length).toBe(ref.data.length);
        expect(maxAbsDiff(ours.output, ref.data, real)).toBeLessThan(TOL.output);
      });

      if (!fx.valueHead) {
        it(`log-probs and entropy match at temperature 1 and 0.7 (abs ${TOL.output})`, () => {
          // position j scores token j+1: compare where both are real tokens
          const real = (i: number) => {
            const row = Math.floor(i / (t - 1)),
              j = i % (t - 1);
            return fx.mask[row][j] === 1 && fx.mask[row][j + 1] === 1;
          };
          expect(maxAbsDiff(ours.logProbs!, fx.logProbs!.data, real)).toBeLessThan(TOL.output);
          expect(maxAbsDiff(ours.entropy!, fx.entropy!.data, real)).toBeLessThan(TOL.output);
          expect(maxAbsDiff(ours.logProbsT07!, fx.logProbsT07!.data, real)).toBeLessThan(TOL.output);
          expect(maxAbsDiff(ours.entropyT07!, fx.entropyT07!.data, real)).toBeLessThan(TOL.output);
        });

        it("greedy decoding through the KV cache gives PyTorch's full-sequence greedy tokens", () => {
          expect(ours.greedyTokens).toEqual(fx.greedy!.tokens);
        });
      }

      it(`loss and the gradient of every weight match (|d| <= ${TOL.gradAbs} + ${TOL.gradRel}|ref|)`, () => {
        expect(relClose(ours.loss, fx.loss, TOL.scalarRel)).toBe(true);
        expect(Object.keys(ours.grads).sort()).toEqual(Object.keys(fx.grads).sort());
        for (const [k, g] of Object.entries(fx.grads)) {
          const ratio = worstRatio(ours.grads[k], g.data, TOL.gradAbs, TOL.gradRel);
          expect(ratio, `gradient of ${k}`).toBeLessThanOrEqual(1);
        }
      });

      it(`3 AdamW steps with clipping at 1.0 match (weights abs ${TOL.adamwAbs})`, () => {
        expect(fx.stepGradNorms[0]).toBeGreaterThan(fx.adamw.clipNorm); // the clipping branch is exercised
        ours.stepLosses.forEach((l, s) => expect(relClose(l, fx.stepLosses[s], TOL.scalarRel), `loss ${s}`).toBe(true));
        ours.stepGradNorms.forEach((n, s) =>
          expect(relClose(n, fx.stepGradNorms[s], TOL.scalarRel), `norm ${s}`).toBe(true),
        );
        for (const [k, w] of Object.entries(fx.weightsAfterAdamW)) {
          expect(maxAbsDiff(ours.weightsAfterAdamW[k], w.data), k).toBeLessThan(TOL.adamwAbs);
        }
      });

      it('leaks no tensors', () => {
        expect(ours.tensorsLeaked).toBe(0);
      });
    });
  }
}
