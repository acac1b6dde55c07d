// AdamW's per-variable layout (what webgpu uses, where there is no fused in-place kernel) against the flat layout's
// chain of tfjs ops (clipGradNormAsync + stepIfFinite, webgpu's path before): the same numbers bit for bit, over stepClipped, stepIfFinite, step, a variable without a gradient, a refused
// non-finite update and a getState/setState round trip; and no tensor left behind.
import { beforeAll, describe, expect, it } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../../../src/model/backend';
import { AdamW, clipGradNormAsync } from '../../../src/model/adamw';

beforeAll(async () => {
  await initBackend('cpu');
});

const init = {
  a: [
    [0.5, -1, 0.25],
    [2, 3, -0.125],
  ],
  b: [0.25, -0.75, 1.5, 4],
};
const makeVars = () => ({ a: tf.variable(tf.tensor2d(init.a)), b: tf.variable(tf.tensor1d(init.b)) });
const grads = (k: number) => ({
  a: tf.tensor2d([
    [1 + k, -2, 0.5],
    [0.5 * k, 4, -3],
  ]),
  b: tf.tensor1d([k - 1, 0.3, -2.5 * k, 7]),
});

describe('AdamW per-variable layout', () => {
  it('gives bit-identical weights and moments to the flat layout, and leaks nothing', async () => {
    const flatVars = makeVars(),
      perVars = makeVars();
    const opts = { lr: 0.05, weightDecay: 0.1, betas: [0.8, 0.95] as [number, number] };
    const flat = new AdamW(flatVars, { ...opts, perVariable: false });
    const per = new AdamW(perVars, { ...opts, perVariable: true });
    expect(per.perVariable).toBe(true);
    expect(flat.perVariable).toBe(false);
    const before = tf.memory().numTensors;
    for (let k = 0; k < 3; k++) {
      const g = grads(k);
      // The flat layout's op chain, as webgpu ran it before (cpu's fused kernel rounds its scalars differently).
      const clipped = await clipGradNormAsync(g, 2.0); // norm > 2: clipped
      const applied = await flat.stepIfFinite(clipped.grads);
      expect(await per.stepClipped(g, 2.0)).toEqual({ norm: clipped.norm, applied });
      tf.dispose([...Object.values(g), ...Object.values(clipped.grads)]);
    }
    // A step with one gradient missing leaves that variable (and its moments) alone in both layouts.
    const g5 = grads(5);
    const onlyA = { a: g5.a };
    flat.step(onlyA);
    per.step(onlyA);
    const g = grads(7);
    expect(await per.stepIfFinite(g)).toBe(await flat.stepIfFinite(g));
    tf.dispose([...Object.values(g), ...Object.values(g5)]);
    expect(tf.memory().numTensors).toBe(before);

    for (const n of ['a', 'b'] as const)
      expect(Array.from(await perVars[n].data())).toEqual(Array.from(await flatVars[n].data()));
    const s1 = flat.getState(),
      s2 = per.getState();
    expect(s2.step).toBe(s1.step);
    for (const n of ['a', 'b']) {
      expect(Array.from(await s2.m[n].data())).toEqual(Array.from(await s1.m[n].data()));
      expect(Array.from(await s2.v[n].data())).toEqual(Array.from(await s1.v[n].data()));
    }
    // setState restores the trajectory in the per-variable layout too.
    const again = makeVars();
    const restored = new AdamW(again, { ...opts, perVariable: true });
    restored.setState(s2);
    for (const n of ['a', 'b'] as const) (again[n] as tf.Variable).assign(perVars[n] as tf.Tensor);
    const g2 = grads(2);
    per.step(g2);
    restored.step(g2);
    for (const n of ['a', 'b'] as const)
      expect(Array.from(await again[n].data())).toEqual(Array.from(await perVars[n].data()));
    tf.dispose([...Object.values(g2), ...[s1, s2].flatMap((s) => [...Object.values(s.m), ...Object.values(s.v)])]);
    [flat, per, restored].forEach((o) => o.dispose());
    tf.dispose([...Object.values(flatVars), ...Object.values(perVars), ...Object.values(again)]);
  });

  it('writes nothing when an updated weight would not be finite', async () => {
    const huge = tf.variable(tf.tensor1d([1e30, -2])),
      small = tf.variable(tf.tensor1d([1, 2]));
    const opt = new AdamW({ small, huge }, { lr: 1e10, weightDecay: 1e10, perVariable: true });
    const g = { small: tf.tensor1d([1, 1]), huge: tf.tensor1d([1, 1]) };
    const before = tf.memory().numTensors;
    expect((await opt.stepClipped(g, 1)).applied).toBe(false);
    expect(tf.memory().numTensors).toBe(before);
    expect(Array.from(await huge.data())).toEqual([1e30, -2].map(Math.fround));
    expect(Array.from(await small.data())).toEqual([1, 2]); // the finite variable was not written either
    expect(opt.stepsTaken).toBe(0);
    tf.dispose([huge, small, ...Object.values(g)]);
    opt.dispose();
  });
});
