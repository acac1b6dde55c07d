import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  actorLoss,
  aggregateLoss,
  entropyLoss,
  maskedMean,
  policyLoss,
  valueLoss,
  type LossAggMode,
} from '../../../src/starpo/losses';

beforeAll(async () => {
  await tf.setBackend('cpu');
});

const t2 = (rows: number[][]) => tf.tensor2d(rows, undefined, 'float32');
const val = (s: tf.Tensor) => s.dataSync()[0];
const STARPO_S = { clipLow: 0.2, clipHigh: 0.28, clipRatioC: 3 };
const VANILLA = { clipLow: 0.2, clipHigh: 0.2, clipRatioC: 3 };

/** Policy loss of a single loss token with advantage a and importance ratio rho. */
function oneToken(a: number, rho: number, clip = STARPO_S) {
  return tf.tidy(() => {
    const r = policyLoss({
      logProbs: t2([[Math.log(rho)]]),
      oldLogProbs: t2([[0]]),
      advantages: t2([[a]]),
      mask: t2([[1]]),
      ...clip,
    });
    return { loss: val(r.loss), clipfrac: val(r.clipfrac), lower: val(r.clipfracLower), kl: val(r.ppoKl) };
  });
}

describe('policyLoss', () => {
  it('with ratio 1 is minus the token-mean advantage', () => {
    // Loss tokens hold A = 1, -2, 3, 0.5 -> loss = -(1 - 2 + 3 + 0.5) / 4 = -0.625.
    const r = tf.tidy(() => {
      const lp = t2([
        [-1, -2, -3],
        [-0.5, -4, -9],
      ]);
      const out = policyLoss({
        logProbs: lp,
        oldLogProbs: lp,
        advantages: t2([
          [1, -2, 3],
          [0.5, 4, 9],
        ]),
        mask: t2([
          [1, 1, 1],
          [1, 0, 0],
        ]),
        ...STARPO_S,
      });
      return [val(out.loss), val(out.clipfrac), val(out.clipfracLower), val(out.ppoKl)];
    });
    expect(r[0]).toBeCloseTo(-0.625, 6);
    expect(r.slice(1)).toEqual([0, 0, 0]);
  });

  it('clips a ratio above 1 + eps_high for A > 0 at 1.28 with clip-higher, at 1.2 without', () => {
    expect(oneToken(1, 1.5, STARPO_S).loss).toBeCloseTo(-1.28, 5);
    expect(oneToken(1, 1.5, VANILLA).loss).toBeCloseTo(-1.2, 5);
    // 1.25 lies inside the clip-higher range but outside the symmetric one.
    expect(oneToken(1, 1.25, STARPO_S)).toMatchObject({ clipfrac: 0 });
    expect(oneToken(1, 1.25, STARPO_S).loss).toBeCloseTo(-1.25, 5);
    expect(oneToken(1, 1.25, VANILLA).loss).toBeCloseTo(-1.2, 5);
    expect(oneToken(1, 1.5).clipfrac).toBe(1);
    // A high ratio with A < 0 is NOT clipped by eps_high (the unclipped term is the pessimistic one): -A*rho = 1.5.
    expect(oneToken(-1, 1.5).loss).toBeCloseTo(1.5, 5);
  });

  it('clips a ratio below 1 - eps_low for A < 0, and not for A > 0', () => {
    // A = -1, rho = 0.5: max(0.5, 1 * 0.8) = 0.8, clipped.
    const neg = oneToken(-1, 0.5);
    expect(neg.loss).toBeCloseTo(0.8, 5);
    expect(neg.clipfrac).toBe(1);
    // A = +1, rho = 0.5: max(-0.5, -0.8) = -0.5, the unclipped term.
    const pos = oneToken(1, 0.5);
    expect(pos.loss).toBeCloseTo(-0.5, 5);
    expect(pos.clipfrac).toBe(0);
  });

  it('dual clip caps -A * rho at -A * c for A < 0 and a huge ratio', () => {
    // A = -1, rho = 10: max(10, 1.28) = 10 > 3 -> 3.
    const huge = oneToken(-1, 10);
    expect(huge.loss).toBeCloseTo(3, 5);
    expect(huge.lower).toBe(1);
    expect(huge.clipfrac).toBe(0);
    // rho = 2 stays below the cap: loss 2, dual clip inactive.
    const moderate = oneToken(-1, 2);
    expect(moderate.loss).toBeCloseTo(2, 5);
    expect(moderate.lower).toBe(0);
    // A > 0 is never dual-clipped: rho = 10 -> -1.28.
    expect(oneToken(1, 10).loss).toBeCloseTo(-1.28, 5);
  });

  it('counts clip fractions exactly over loss tokens only', () => {
    // Row 0: rho 1.5 A+ (clipped), rho 1 (not), rho 10 A- (dual clipped, not clipfrac), rho 0.5 A- (clipped).
    // Row 1: one loss token rho 1; one MASKED token rho 1.5 A+ that would count if the mask leaked.
    // Loss tokens: 5. clipfrac = 2/5, clipfracLower = 1/5.
    const out = tf.tidy(() => {
      const r = policyLoss({
        logProbs: t2([
          [Math.log(1.5), 0, Math.log(10), Math.log(0.5)],
          [0, Math.log(1.5), 0, 0],
        ]),
        oldLogProbs: t2([
          [0, 0, 0, 0],
          [0, 0, 0, 0],
        ]),
        advantages: t2([
          [1, 1, -1, -1],
          [1, 1, 0, 0],
        ]),
        mask: t2([
          [1, 1, 1, 1],
          [1, 0, 0, 0],
        ]),
        ...STARPO_S,
      });
      return [val(r.clipfrac), val(r.clipfracLower), val(r.ppoKl)];
    });
    expect(out[0]).toBeCloseTo(2 / 5, 6);
    expect(out[1]).toBeCloseTo(1 / 5, 6);
    // ppo_kl = mean(old - new) = -(ln 1.5 + 0 + ln 10 + ln 0.5 + 0) / 5
    expect(out[2]).toBeCloseTo(-(Math.log(1.5) + Math.log(10) + Math.log(0.5)) / 5, 5);
  });

  it('has zero gradient in the clipped regions and -A * rho / N elsewhere', () => {
    // Tokens: (A+, rho 1.5: clipped), (A+, rho 1: free), (A-, rho 10: dual clipped), (A-, rho 0.5: clipped),
    // (A-, rho 1.1: free). token-mean over N = 5: d loss / d logp = -A * rho / 5 on free tokens.
    const rhos = [1.5, 1, 10, 0.5, 1.1];
    const adv = [1, 1, -1, -1, -2];
    const grad = tf.tidy(() => {
      const g = tf.grad(
        (lp: tf.Tensor) =>
          policyLoss({
            logProbs: lp,
            oldLogProbs: t2([[0, 0, 0, 0, 0]]),
            advantages: t2([adv]),
            mask: t2([[1, 1, 1, 1, 1]]),
            ...STARPO_S,
          }).loss,
      );
      return Array.from(g(t2([rhos.map(Math.log)])).dataSync());
    });
    expect(Math.abs(grad[0])).toBe(0);
    expect(grad[1]).toBeCloseTo(-1 / 5, 6);
    expect(Math.abs(grad[2])).toBe(0);
    expect(Math.abs(grad[3])).toBe(0);
    expect(grad[4]).toBeCloseTo((2 * 1.1) / 5, 5);
  });

  it('is unaffected by finite garbage on masked positions, which also get a zero gradient', () => {
    const mask = t2([
      [1, 0, 1],
      [0, 1, 0],
    ]);
    const clean = {
      lp: [
        [-1, 0, -2],
        [0, -0.5, 0],
      ],
      old: [
        [-1.1, 0, -1.9],
        [0, -0.6, 0],
      ],
      adv: [
        [0.7, 0, -0.3],
        [0, 1.2, 0],
      ],
    };
    const dirty = {
      lp: [
        [-1, 55, -2],
        [-3e4, -0.5, 90],
      ],
      old: [
        [-1.1, -70, -1.9],
        [8, -0.6, -1e5],
      ],
      adv: [
        [0.7, 1e6, -0.3],
        [-1e6, 1.2, 3e3],
      ],
    };
    const run = (x: typeof clean) =>
      tf.tidy(() => {
        const args = { oldLogProbs: t2(x.old), advantages: t2(x.adv), mask, ...STARPO_S };
        const r = policyLoss({ logProbs: t2(x.lp), ...args });
        const g = tf.grad((lp: tf.Tensor) => policyLoss({ logProbs: lp, ...args }).loss)(t2(x.lp));
        return { loss: val(r.loss), cf: val(r.clipfrac), kl: val(r.ppoKl), grad: Array.from(g.dataSync()) };
      });
    const a = run(clean);
    const b = run(dirty);
    expect(b.loss).toBeCloseTo(a.loss, 6);
    expect(b.cf).toBe(a.cf);
    expect(b.kl).toBeCloseTo(a.kl, 6);
    expect(b.grad.every(Number.isFinite)).toBe(true);
    expect([b.grad[1], b.grad[3], b.grad[5]].map(Math.abs)).toEqual([0, 0, 0]); // -0 is still zero
    b.grad.forEach((g, i) => expect(g).toBeCloseTo(a.grad[i], 6));
    mask.dispose();
  });

  it('leaves no tensor behind but its four outputs', () => {
    const inputs = [t2([[-1, -2]]), t2([[-1.2, -1.9]]), t2([[1, -1]]), t2([[1, 1]])];
    const before = tf.memory().numTensors;
    tf.tidy(() => {
      policyLoss({ logProbs: inputs[0], oldLogProbs: inputs[1], advantages: inputs[2], mask: inputs[3], ...STARPO_S });
    });
    expect(tf.memory().numTensors).toBe(before);
    const r = policyLoss({
      logProbs: inputs[0],
      oldLogProbs: inputs[1],
      advantages: inputs[2],
      mask: inputs[3],
      ...STARPO_S,
    });
    expect(tf.memory().numTensors).toBe(before + 4);
    tf.dispose([r.loss, r.clipfrac, r.clipfracLower, r.ppoKl]);
    const v = valueLoss({
      values: inputs[0],
      oldValues: inputs[1],
      returns: inputs[2],
      mask: inputs[3],
      clipRange: 0.5,
    });
    expect(tf.memory().numTensors).toBe(before + 2);
    tf.dispose([v.loss, v.clipfrac, ...inputs]);
  });

  it('rejects mismatched shapes and a dual-clip constant <= 1', () => {
    const a = t2([[0, 0]]);
    const b = t2([[0, 0, 0]]);
    expect(() => policyLoss({ logProbs: b, oldLogProbs: a, advantages: a, mask: a, ...STARPO_S })).toThrow(
      /logProbs has shape \[1, 3\], expected \[1, 2\]/,
    );
    expect(() =>
      policyLoss({ logProbs: a, oldLogProbs: a, advantages: a, mask: a, ...STARPO_S, clipRatioC: 1 }),
    ).toThrow(/clipRatioC/);
    tf.dispose([a, b]);
  });
});

describe('aggregateLoss', () => {
  // Ragged mask: row 0 has 2 loss tokens (1, 2), row 1 has 4 (10, 20, 30, 40), row 2 is padding (no loss token).
  const loss = [
    [1, 2, 99, 99],
    [10, 20, 30, 40],
    [5, 5, 5, 5],
  ];
  const mask = [
    [1, 1, 0, 0],
    [1, 1, 1, 1],
    [0, 0, 0, 0],
  ];
  const agg = (mode: LossAggMode, div?: number) => tf.tidy(() => val(aggregateLoss(t2(loss), t2(mask), mode, div)));

  it('differs between modes exactly as computed by hand', () => {
    expect(agg('token-mean')).toBeCloseTo(103 / 6, 5); // (1+2+10+20+30+40) / 6 tokens
    expect(agg('seq-mean-token-mean')).toBeCloseTo((1.5 + 25) / 2, 5); // per-row means 1.5 and 25; padding row left out
    expect(agg('seq-mean-token-sum')).toBeCloseTo((3 + 100) / 2, 5); // per-row sums 3 and 100
    expect(agg('seq-mean-token-sum-norm')).toBeCloseTo(103 / 4, 5); // total / T (4)
    expect(agg('seq-mean-token-sum-norm', 10)).toBeCloseTo(10.3, 5); // total / fixed divisor
  });

  it('gives 0 when nothing is masked in', () => {
    expect(tf.tidy(() => val(aggregateLoss(t2([[3, 4]]), t2([[0, 0]]), 'token-mean')))).toBe(0);
    expect(tf.tidy(() => val(aggregateLoss(t2([[3, 4]]), t2([[0, 0]]), 'seq-mean-token-mean')))).toBe(0);
  });

  it('rejects an unknown mode', () => {
    expect(() => tf.tidy(() => aggregateLoss(t2([[1]]), t2([[1]]), 'mean' as never))).toThrow(
      /unknown loss aggregation mode 'mean'/,
    );
  });

  it('entropyLoss aggregates token entropies the same way', () => {
    const ent = [
      [0.5, 1.5, 7, 7],
      [2, 2, 2, 2],
      [0, 0, 0, 0],
    ];
    // token-mean: (0.5 + 1.5 + 4 x 2) / 6 = 10 / 6; seq-mean-token-mean: (1 + 2) / 2 = 1.5.
    expect(tf.tidy(() => val(entropyLoss(t2(ent), t2(mask))))).toBeCloseTo(10 / 6, 5);
    expect(tf.tidy(() => val(entropyLoss(t2(ent), t2(mask), 'seq-mean-token-mean')))).toBeCloseTo(1.5, 5);
  });

  it('maskedMean divides by the number of loss tokens', () => {
    expect(tf.tidy(() => val(maskedMean(t2([[1, 100, 3]]), t2([[1, 0, 1]]))))).toBeCloseTo(2, 6);
  });
});

describe('actorLoss', () => {
  it('is pg_loss - entropy_coeff x entropy (+ kl_coef x kl)', () => {
    const r = tf.tidy(() => [
      val(actorLoss({ pgLoss: tf.scalar(0.5), entropyLoss: tf.scalar(2), entropyCoeff: 0.001 })),
      val(
        actorLoss({
          pgLoss: tf.scalar(0.5),
          entropyLoss: tf.scalar(2),
          entropyCoeff: 0.001,
          klLoss: tf.scalar(3),
          klCoef: 0.01,
        }),
      ),
    ]);
    expect(r[0]).toBeCloseTo(0.5 - 0.002, 6);
    expect(r[1]).toBeCloseTo(0.5 - 0.002 + 0.03, 6);
  });
});

describe('valueLoss', () => {
  it('takes the larger of the clipped and unclipped squared errors, halves it, and counts clipping', () => {
    // Token 1: V 2, Vold 1, R 3 -> clip(V) = 1.5; errors 1 vs 2.25 -> 2.25 (clipped one active).
    // Token 2: V 1.2, Vold 1, R 3 -> inside the range; both errors 3.24 -> 3.24 (not counted as clipped).
    // Token 3: V 2, Vold 1, R 0 -> clip(V) = 1.5; errors 4 vs 2.25 -> 4 (unclipped).
    // Token 4: masked garbage.
    // loss = 0.5 x (2.25 + 3.24 + 4) / 3; clipfrac = 1/3.
    const args = (values: tf.Tensor) => ({
      values,
      oldValues: t2([[1, 1, 1, -50]]),
      returns: t2([[3, 3, 0, 1e4]]),
      mask: t2([[1, 1, 1, 0]]),
      clipRange: 0.5,
    });
    const out = tf.tidy(() => {
      const V = t2([[2, 1.2, 2, 77]]);
      const r = valueLoss(args(V));
      const g = tf.grad((v: tf.Tensor) => valueLoss(args(v)).loss)(V);
      return { loss: val(r.loss), cf: val(r.clipfrac), grad: Array.from(g.dataSync()) };
    });
    expect(out.loss).toBeCloseTo((0.5 * (2.25 + 3.24 + 4)) / 3, 5);
    expect(out.cf).toBeCloseTo(1 / 3, 6);
    // Token 1 is held by the clipped term, whose value no longer moves with V: zero gradient.
    expect(Math.abs(out.grad[0])).toBe(0);
    // Token 2: d/dV 0.5 x (V - R)^2 / 3 = (1.2 - 3) / 3.
    expect(out.grad[1]).toBeCloseTo((1.2 - 3) / 3, 5);
    // Token 3: (2 - 0) / 3.
    expect(out.grad[2]).toBeCloseTo(2 / 3, 5);
    expect(Math.abs(out.grad[3])).toBe(0);
  });
});
