// Shared by lora-parity-{cpu,wasm}.test.ts: LoRA (src/model/lora.ts) against PEFT's LoRA Linear forward written out
// in PyTorch (tools/parity/lora_reference.py; PEFT itself is not installable here). Same base weights and adapters
// -> same logits, same log-probs with the adapters off (the reference policy), same gradients of every adapter
// weight and none for the base, same 3 AdamW steps on the adapters. Tolerances as the model's parity suite.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { AdamW, clipGradNormAsync } from '../../../src/model/adamw';
import { initBackend, type BackendName } from '../../../src/model/backend';
import type { Qwen2Config } from '../../../src/model/config';
import { LoraAdapters, type LoraSettings } from '../../../src/model/lora';
import { Qwen2Model, type WeightMap } from '../../../src/model/qwen2';
import { namedVariableGrads, tokenLogProbs } from '../../../src/model/scoring';
import { maxAbsDiff, TOL, worstRatio, type Arr } from './parity-helpers';

interface LoraFixture {
  config: Qwen2Config;
  lora: LoraSettings;
  adamw: { lr: number; betas: [number, number]; eps: number; weightDecay: number; clipNorm: number; steps: number };
  entropyCoef: number;
  weights: Record<string, Arr>;
  adapters: Record<string, Arr>;
  ids: number[][];
  mask: number[][];
  lossMask: Arr;
  advantages: Arr;
  logits: Arr;
  logProbs: Arr;
  baseLogProbs: Arr;
  loss: number;
  grads: Record<string, Arr>;
  stepLosses: number[];
  stepGradNorms: number[];
  adaptersAfterAdamW: Record<string, Arr>;
}

export const LORA_FIXTURES = ['lora-all-linear', 'lora-some'] as const;

const decode = (a: { shape: number[]; f32: string }): Arr => {
  const bytes = Buffer.from(a.f32, 'base64');
  return { shape: a.shape, data: new Float32Array(new Uint8Array(bytes).buffer) };
};

export function loadLoraFixture(name: string): LoraFixture {
  const raw = JSON.parse(
    readFileSync(fileURLToPath(new URL(`../../fixtures/parity/${name}.json`, import.meta.url)), 'utf8'),
  );
  const out: Record<string, unknown> = { ...raw };
  for (const [k, v] of Object.entries(raw))
    if (v && typeof v === 'object' && 'f32' in (v as object)) out[k] = decode(v as never);
  for (const k of ['weights', 'adapters', 'grads', 'adaptersAfterAdamW']) {
    out[k] = Object.fromEntries(Object.entries(raw[k] as Record<string, never>).map(([n, v]) => [n, decode(v)]));
  }
  return out as unknown as LoraFixture;
}

const tensors = (m: Record<string, Arr>): WeightMap =>
  Object.fromEntries(Object.entries(m).map(([k, a]) => [k, tf.tensor(a.data, a.shape)]));

export function loraModelOf(fx: LoraFixture): Qwen2Model {
  const model = new Qwen2Model(fx.config, tensors(fx.weights));
  model.addAdapters(new LoraAdapters(fx.config, fx.lora, tensors(fx.adapters)));
  return model;
}

interface Ours {
  logits: Float32Array;
  logProbs: Float32Array;
  baseLogProbs: Float32Array;
  loss: number;
  grads: Record<string, Float32Array>;
  checkpointedGrads: Record<string, Float32Array>;
  stepLosses: number[];
  stepGradNorms: number[];
  adaptersAfter: Record<string, Float32Array>;
  baseChanged: string[];
  tensorsLeaked: number;
}

async function runOurs(fx: LoraFixture): Promise<Ours> {
  const before = tf.memory().numTensors;
  const model = loraModelOf(fx);
  const ids = tf.tensor2d(fx.ids, undefined, 'int32');
  const mask = tf.tensor2d(fx.mask, undefined, 'int32');
  const [b, t] = ids.shape;
  const lossMask = tf.tensor2d(fx.lossMask.data, [b, t - 1]);
  const adv = tf.tensor2d(fx.advantages.data, [b, t - 1]);
  const read = async (x: tf.Tensor) => {
    const d = (await x.data()) as Float32Array;
    x.dispose();
    return d;
  };
  const o: Partial<Ours> = { logits: await read(model.forward(ids, mask)) };
  const lp = tokenLogProbs(model, ids, mask);
  o.logProbs = await read(lp.logProbs);
  lp.entropy.dispose();
  const ref = tokenLogProbs(model.baseModel(), ids, mask);
  o.baseLogProbs = await read(ref.logProbs);
  ref.entropy.dispose();

  const mean = (x: tf.Tensor) => x.mul(lossMask).sum().div(lossMask.sum());
  const lossFn = () => {
    const { logProbs, entropy } = tokenLogProbs(model, ids, mask);
    return mean(logProbs.neg().mul(adv)).sub(mean(entropy).mul(fx.entropyCoef)) as tf.Scalar;
  };
  const first = namedVariableGrads(model.trainableVariables, lossFn);
  o.loss = (await read(first.value))[0];
  o.grads = {};
  for (const [k, g] of Object.entries(first.grads)) o.grads[k] = await read(g);
  // Again with gradient checkpointing per layer (the op then differentiates the adapters only).
  model.gradientCheckpointing = true;
  const again = namedVariableGrads(model.trainableVariables, lossFn);
  again.value.dispose();
  o.checkpointedGrads = {};
  for (const [k, g] of Object.entries(again.grads)) o.checkpointedGrads[k] = await read(g);
  model.gradientCheckpointing = false;

  const baseBefore = Object.fromEntries(
    await Promise.all(Object.entries(model.variables).map(async ([k, v]) => [k, (await v.data()).slice()] as const)),
  );
  const opt = new AdamW(model.trainableVariables, {
    lr: fx.adamw.lr,
    betas: fx.adamw.betas,
    eps: fx.adamw.eps,
    weightDecay: fx.adamw.weightDecay,
  });
  o.stepLosses = [];
  o.stepGradNorms = [];
  for (let s = 0; s < fx.adamw.steps; s++) {
    const { value, grads } = namedVariableGrads(model.trainableVariables, lossFn);
    const clipped = await clipGradNormAsync(grads, fx.adamw.clipNorm);
    opt.step(clipped.grads);
    o.stepLosses.push((await read(value))[0]);
    o.stepGradNorms.push(clipped.norm);
    tf.dispose([...Object.values(grads), ...Object.values(clipped.grads)]);
  }
  o.adaptersAfter = {};
  for (const [k, v] of Object.entries(model.lora!.variables)) o.adaptersAfter[k] = (await v.data()) as Float32Array;
  o.baseChanged = [];
  for (const [k, v] of Object.entries(model.variables)) {
    const now = await v.data();
    if (now.some((x, i) => x !== baseBefore[k][i])) o.baseChanged.push(k);
  }
  opt.dispose();
  model.dispose();
  tf.dispose([ids, mask, lossMask, adv]);
  o.tensorsLeaked = tf.memory().numTensors - before;
  return o as Ours;
}

export function defineLoraParitySuite(backend: BackendName): void {
  beforeAll(async () => {
    expect((await initBackend(backend)).name).toBe(backend);
  });
  for (const name of LORA_FIXTURES) {
    describe(`${name} on ${backend} vs PEFT's LoRA forward in PyTorch`, () => {
      const fx = loadLoraFixture(name);
      const [b, t] = [fx.ids.length, fx.ids[0].length];
      let ours: Ours;
      beforeAll(async () => {
        ours = await runOurs(fx);
      });
      const realTarget = (i: number) => {
        const row = Math.floor(i / (t - 1)),
          j = i % (t - 1);
        return fx.mask[row][j] === 1 && fx.mask[row][j + 1] === 1;
      };

      it(`logits, log-probs, and the log-probs with adapters off match (abs ${TOL.output})`, () => {
        const v = fx.logits.data.length / (b * t);
        const real = (i: number) => fx.mask[Math.floor(i / v / t)][Math.floor(i / v) % t] === 1;
        expect(maxAbsDiff(ours.logits, fx.logits.data, real)).toBeLessThan(TOL.output);
        expect(maxAbsDiff(ours.logProbs, fx.logProbs.data, realTarget)).toBeLessThan(TOL.output);
        expect(maxAbsDiff(ours.baseLogProbs, fx.baseLogProbs.data, realTarget)).toBeLessThan(TOL.output);
        // The adapters change the policy (else the check above would not tell the two apart).
        expect(maxAbsDiff(ours.logProbs, ours.baseLogProbs, realTarget)).toBeGreaterThan(1e-2);
      });

      it('the loss and the gradient of every adapter weight match; the base gets none', () => {
        expect(Math.abs(ours.loss - fx.loss)).toBeLessThanOrEqual(TOL.scalarRel * Math.max(1, Math.abs(fx.loss)));
        expect(Object.keys(ours.grads).sort()).toEqual(Object.keys(fx.grads).sort());
        for (const [k, g] of Object.entries(fx.grads)) {
          expect(worstRatio(ours.grads[k], g.data, TOL.gradAbs, TOL.gradRel), `gradient of ${k}`).toBeLessThanOrEqual(
            1,
          );
        }
      });

      it('gradient checkpointing gives the same adapter gradients', () => {
        expect(Object.keys(ours.checkpointedGrads).sort()).toEqual(Object.keys(fx.grads).sort());
        for (const [k, g] of Object.entries(fx.grads)) {
          expect(
            worstRatio(ours.checkpointedGrads[k], g.data, TOL.gradAbs, TOL.gradRel),
            `gradient of ${k}`,
          ).toBeLessThanOrEqual(1);
        }
      });

      it(`3 AdamW steps on the adapters match (abs ${TOL.adamwAbs}) and leave the base weights bit for bit`, () => {
        expect(fx.stepGradNorms[0]).toBeGreaterThan(fx.adamw.clipNorm);
        ours.stepLosses.forEach((l, s) =>
          expect(Math.abs(l - fx.stepLosses[s]), `loss ${s}`).toBeLessThanOrEqual(
            TOL.scalarRel * Math.max(1, Math.abs(fx.stepLosses[s])),
          ),
        );
        ours.stepGradNorms.forEach((n, s) =>
          expect(Math.abs(n - fx.stepGradNorms[s]), `norm ${s}`).toBeLessThanOrEqual(
            TOL.scalarRel * Math.max(1, fx.stepGradNorms[s]),
          ),
        );
        for (const [k, w] of Object.entries(fx.adaptersAfterAdamW))
          expect(maxAbsDiff(ours.adaptersAfter[k], w.data), k).toBeLessThan(TOL.adamwAbs);
        expect(ours.baseChanged).toEqual([]);
      });

      it('leaks no tensors', () => {
        expect(ours.tensorsLeaked).toBe(0);
      });
    });
  }
}
