// PyTorch parity of what vanilla StarPO depends on beyond the model: the PPO clipped policy loss (upper, lower and
// dual clip, every aggregation mode, and its gradient), the clipped value loss and GAE with whitening. The fixture
// comes from tools/parity/ppo_reference.py, written from veRL's definitions (tools/parity/make_fixtures.py).
// Tolerances: losses and statistics 1e-5 relative; gradients |d| <= 1e-6 + 1e-4 |ref| elementwise; GAE outputs
// 1e-5 absolute (both sides compute in float64 and store float32).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../../src/model/backend';
import { gae, whiten } from '../../../src/starpo/advantages';
import { LOSS_AGG_MODES } from '../../../src/starpo/config';
import { policyLoss, valueLoss } from '../../../src/starpo/losses';

interface Arr {
  shape: [number, number];
  data: Float32Array;
}
interface Fixture {
  mask: Arr;
  policy: {
    logProbs: Arr;
    oldLogProbs: Arr;
    advantages: Arr;
    clipLow: number;
    clipHigh: number;
    clipRatioC: number;
    clipfrac: number;
    clipfracLower: number;
    ppoKl: number;
    byAggMode: Record<string, { loss: number; grad: Arr }>;
  };
  value: { values: Arr; oldValues: Arr; returns: Arr; clipRange: number; loss: number; clipfrac: number; grad: Arr };
  gae: {
    rewards: Arr;
    values: Arr;
    cases: { gamma: number; lambda: number; advantages: Arr; returns: Arr; whitened: Arr }[];
  };
}

/** Every {shape, f32} object of the JSON becomes {shape, data: Float32Array}. */
function decode(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(decode);
  if (value === null || typeof value !== 'object') return value;
  const o = value as Record<string, unknown>;
  if (typeof o.f32 === 'string') {
    const bytes = Buffer.from(o.f32, 'base64');
    return { shape: o.shape, data: new Float32Array(new Uint8Array(bytes).buffer) };
  }
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, decode(v)]));
}

const fx = decode(
  JSON.parse(readFileSync(fileURLToPath(new URL('../../fixtures/parity/ppo-gae.json', import.meta.url)), 'utf8')),
) as Fixture;
const tensor = (a: Arr) => tf.tensor2d(a.data, a.shape);
const rows = (a: Arr) =>
  Array.from({ length: a.shape[0] }, (_, r) => a.data.slice(r * a.shape[1], (r + 1) * a.shape[1]));
const relClose = (a: number, b: number, rel = 1e-5) => Math.abs(a - b) <= rel * Math.max(1, Math.abs(b));
function worstGradRatio(ours: ArrayLike<number>, ref: ArrayLike<number>): number {
  let worst = 0;
  for (let i = 0; i < ref.length; i++)
    worst = Math.max(worst, Math.abs(ours[i] - ref[i]) / (1e-6 + 1e-4 * Math.abs(ref[i])));
  return worst;
}
function maxAbsDiff(a: ArrayLike<number>[], b: ArrayLike<number>[]): number {
  let worst = 0;
  a.forEach((row, r) => {
    for (let j = 0; j < row.length; j++) worst = Math.max(worst, Math.abs(row[j] - b[r][j]));
  });
  return worst;
}

beforeAll(async () => {
  await initBackend('cpu');
});

describe('PPO clipped policy loss vs PyTorch (veRL definitions)', () => {
  const p = fx.policy;
  it('the fixture exercises the upper, lower and dual clip', () => {
    expect(p.clipfrac).toBeGreaterThan(0);
    expect(p.clipfracLower).toBeGreaterThan(0);
  });

  for (const mode of LOSS_AGG_MODES) {
    it(`${mode}: loss, clip fractions, ppo_kl and the gradient w.r.t. the log-probs match`, async () => {
      const before = tf.memory().numTensors;
      const [mask, old, adv, logProbs] = [
        tensor(fx.mask),
        tensor(p.oldLogProbs),
        tensor(p.advantages),
        tensor(p.logProbs),
      ];
      const args = {
        oldLogProbs: old,
        advantages: adv,
        mask,
        clipLow: p.clipLow,
        clipHigh: p.clipHigh,
        clipRatioC: p.clipRatioC,
        aggMode: mode,
      };
      const out = policyLoss({ logProbs, ...args });
      const grad = tf.grad((lp: tf.Tensor) => policyLoss({ logProbs: lp, ...args }).loss)(logProbs);
      const [loss, clipfrac, clipfracLower, ppoKl] = await Promise.all(
        [out.loss, out.clipfrac, out.clipfracLower, out.ppoKl].map(async (t) => (await t.data())[0]),
      );
      const g = await grad.data();
      tf.dispose([mask, old, adv, logProbs, grad, out.loss, out.clipfrac, out.clipfracLower, out.ppoKl]);

      expect(relClose(loss, p.byAggMode[mode].loss), `loss ${loss} vs ${p.byAggMode[mode].loss}`).toBe(true);
      expect(relClose(clipfrac, p.clipfrac)).toBe(true);
      expect(relClose(clipfracLower, p.clipfracLower)).toBe(true);
      expect(relClose(ppoKl, p.ppoKl)).toBe(true);
      expect(worstGradRatio(g, p.byAggMode[mode].grad.data)).toBeLessThanOrEqual(1);
      expect(tf.memory().numTensors).toBe(before);
    });
  }
});

describe('clipped value loss vs PyTorch', () => {
  it('loss, clip fraction and the gradient w.r.t. the values match', async () => {
    const v = fx.value;
    const [mask, values, oldValues, returns] = [
      tensor(fx.mask),
      tensor(v.values),
      tensor(v.oldValues),
      tensor(v.returns),
    ];
    const args = { oldValues, returns, mask, clipRange: v.clipRange };
    const out = valueLoss({ values, ...args });
    const grad = tf.grad((x: tf.Tensor) => valueLoss({ values: x, ...args }).loss)(values);
    const loss = (await out.loss.data())[0];
    const clipfrac = (await out.clipfrac.data())[0];
    const g = await grad.data();
    tf.dispose([mask, values, oldValues, returns, grad, out.loss, out.clipfrac]);
    expect(v.clipfrac).toBeGreaterThan(0);
    expect(relClose(loss, v.loss)).toBe(true);
    expect(relClose(clipfrac, v.clipfrac)).toBe(true);
    expect(worstGradRatio(g, v.grad.data)).toBeLessThanOrEqual(1);
  });
});

describe('GAE and whitening vs PyTorch', () => {
  for (const c of fx.gae.cases) {
    it(`gamma ${c.gamma}, lambda ${c.lambda}: advantages, returns and whitened advantages match on the mask (abs 1e-5)`, () => {
      const mask = rows(fx.mask);
      const ours = gae(rows(fx.gae.rewards), rows(fx.gae.values), mask, c.gamma, c.lambda);
      expect(maxAbsDiff(ours.advantages, rows(c.advantages))).toBeLessThan(1e-5);
      expect(maxAbsDiff(ours.returns, rows(c.returns))).toBeLessThan(1e-5);
      expect(maxAbsDiff(whiten(ours.advantages, mask), rows(c.whitened))).toBeLessThan(1e-5);
    });
  }
});
