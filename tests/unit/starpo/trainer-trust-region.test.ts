// The actor's trust region (actor.maxStepKl, actor.maxSuccessLogProbDrop): what it measures, a step it undoes leaving
// weights and AdamW exactly as before, and a bound never reached changing nothing.
import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../../src/model/backend';
import { stepKl, stepWithinTrustRegion, successLogProbChange } from '../../../src/starpo/stepTrustRegion';
import { AdamW } from '../../../src/model/adamw';
import { namedVariableGrads, tokenLogProbs } from '../../../src/model/scoring';
import { disposeBatch, padBatch, type TokenizedTrajectory } from '../../../src/starpo/batch';
import { makeTrainer, tensorCountsPerStep, tinyBanditConfig, tinyPolicy, weightsOf } from './trainer-fixture';

beforeAll(async () => {
  await initBackend('wasm');
});

const config = (maxStepKl: number, totalSteps = 2) =>
  tinyBanditConfig({ actor: { maxStepKl }, trainer: { totalSteps, testFreq: 0, valBeforeTrain: false } });

describe('stepKl', () => {
  it('is 0 when nothing moved, k3 on the loss tokens otherwise, and ignores tokens off the mask', () => {
    const before = [Float32Array.from([-1, -2, -0.5])];
    expect(stepKl(before, before, [Uint8Array.from([1, 1, 1])])).toBe(0);
    const after = [Float32Array.from([-1.5, -2, -5])];
    const d = -0.5; // the one loss token that moved; the last one moved more but is off the mask
    expect(stepKl(before, after, [Uint8Array.from([1, 1, 0])])).toBeCloseTo((Math.exp(d) - 1 - d) / 2, 7);
    expect(stepKl(before, after, [Uint8Array.from([0, 0, 0])])).toBe(0);
  });
});

describe('successLogProbChange', () => {
  it("sums each successful rollout's log-prob change over its loss tokens and averages over the successes only", () => {
    const before = [Float32Array.from([-1, -1, -1]), Float32Array.from([-1, -1, -1]), Float32Array.from([-1, -1, -1])];
    const after = [
      Float32Array.from([-2, -1.5, -9]),
      Float32Array.from([-0.5, -1, -1]),
      Float32Array.from([-9, -9, -9]),
    ];
    const masks = [Uint8Array.from([1, 1, 0]), Uint8Array.from([1, 1, 1]), Uint8Array.from([1, 1, 1])];
    // Rollout 0: -1 - 0.5 (its third token is off the mask); rollout 1: +0.5; rollout 2 failed and does not count.
    expect(successLogProbChange(before, after, masks, [true, true, false])).toBeCloseTo((-1.5 + 0.5) / 2, 7);
    expect(successLogProbChange(before, after, masks, [false, false, false])).toBeNaN();
  });
});

describe('stepWithinTrustRegion with actor.maxSuccessLogProbDrop', () => {
  // Two rollouts, the first a success. A step that lowers its likelihood (gradient ascent on its log-prob's negative)
  // is undone by a bound of 1e-3 nats; the same step with the bound off, or a step that raises it, is kept.
  const setup = (perVariable: boolean) => {
    const { model, tokenizer } = tinyPolicy();
    const seqs: TokenizedTrajectory[] = ['<answer>Dragon</answer>', '<answer>Phoenix</answer>'].map((text) => {
      const ids = tokenizer.encode(text);
      return { ids, lossMask: new Uint8Array(ids.length - 1).fill(1) };
    });
    const optimizer = new AdamW(model.trainableVariables, { lr: 1e-2, perVariable });
    const step = (sign: 1 | -1) => async () => {
      const batch = padBatch(seqs.slice(0, 1), 0);
      const { value, grads } = namedVariableGrads(model.trainableVariables, () =>
        tf.tidy(() => {
          const { logProbs } = tokenLogProbs(model, batch.ids, batch.attention);
          return tf.mul(sign, tf.sum(tf.mul(logProbs, batch.lossMask))) as tf.Scalar; // sign -1: make it likelier
        }),
      );
      const r = await optimizer.stepClipped(grads, 1);
      tf.dispose([value, ...Object.values(grads)]);
      disposeBatch(batch);
      return r;
    };
    const options = (maxSuccessDrop: number) => ({
      model,
      optimizer,
      maxKl: 0,
      maxSuccessDrop,
      probe: { seqs, success: [true, false] },
      microBatchSize: 2,
      padId: 0,
      temperature: 1,
    });
    return { model, optimizer, step, options };
  };

  // Both AdamW layouts: one flat buffer of moments (wasm, cpu) and moments per variable (webgpu's).
  it.each([false, true])(
    'undoes a step that makes the successes less likely, and keeps one that makes them likelier (moments per variable: %s)',
    async (perVariable) => {
      const { model, optimizer, step, options } = setup(perVariable);
      // With the bound off the same kind of step is measured and kept (and the first forward pass has grown the
      // model's position tables, so the tensor count below is steady).
      const off = await stepWithinTrustRegion(options(0), step(1));
      expect(off.successChange).toBeLessThan(0);
      expect(off.undone).toBe(false);
      expect(optimizer.stepsTaken).toBe(1);

      const before = await weightsOf(model.trainableVariables);
      const momentsOf = async () => {
        const state = optimizer.getState();
        const out = {
          m: await weightsOf(state.m as Record<string, tf.Variable>),
          v: await weightsOf(state.v as Record<string, tf.Variable>),
        };
        tf.dispose([...Object.values(state.m), ...Object.values(state.v)]);
        return out;
      };
      const momentsBefore = await momentsOf();
      const tensors = tf.memory().numTensors;
      const worse = await stepWithinTrustRegion(options(1e-3), step(1));
      expect(worse.result.applied).toBe(true);
      expect(worse.successChange).toBeLessThan(-1e-3);
      expect(worse.undone).toBe(true);
      expect(optimizer.stepsTaken).toBe(1);
      const after = await weightsOf(model.trainableVariables);
      for (const name of Object.keys(before)) expect(after[name], name).toEqual(before[name]);
      expect(tf.memory().numTensors).toBe(tensors);
      expect(await momentsOf()).toEqual(momentsBefore);

      const better = await stepWithinTrustRegion(options(1e-3), step(-1));
      expect(better.successChange).toBeGreaterThan(0);
      expect(better.undone).toBe(false);
      expect(optimizer.stepsTaken).toBe(2);
    },
  );
});

describe('Trainer with actor.maxStepKl', () => {
  it('undoes every actor step past the bound: the actor unchanged, counted and logged, the critic trained, tensors flat', async () => {
    const { trainer, sink, lines } = await makeTrainer(config(1e-12, 3));
    const before = await weightsOf(trainer.actor.variables);
    const criticBefore = await weightsOf(trainer.critic!.variables);
    const counts = await tensorCountsPerStep(trainer);
    expect(counts[2]).toBe(counts[1]);
    expect(counts[1]).toBe(counts[0]);
    const after = await weightsOf(trainer.actor.variables);
    for (const name of Object.keys(before)) expect(after[name], name).toEqual(before[name]);
    const criticAfter = await weightsOf(trainer.critic!.variables);
    expect(Object.keys(criticBefore).some((n) => criticAfter[n].some((x, i) => x !== criticBefore[n][i]))).toBe(true);
    for (const row of sink.rows) {
      expect(row['actor/steps_undone'], `step ${row.step}`).toBe(1);
      expect(row['actor/step_kl'], `step ${row.step}`).toBeGreaterThan(1e-12);
    }
    expect(lines.some((l) => /step 1: undid 1 actor update\(s\) .*trust region/.test(l))).toBe(true);
    trainer.dispose();
  });

  it('leaves AdamW as it was: a step undone, then one taken, gives the weights of the first step skipped', async () => {
    // Run A: step 1 undone by the bound, step 2 taken (bound lifted). Run B: step 1 skipped by a NaN loss, which
    // never touches the optimizer, step 2 taken. Their actors match only if the undo restored AdamW's moments and
    // step count along with the weights.
    const a = await makeTrainer(config(1e-12));
    await a.trainer.step();
    a.trainer.config.actor.maxStepKl = 0;
    await a.trainer.step();
    const b = await makeTrainer(config(0), {
      lossHook: (kind, step, loss) => (kind === 'actor' && step === 1 ? tf.mul(loss, NaN) : loss),
    });
    await b.trainer.step();
    await b.trainer.step();
    expect(a.sink.rows[0]['actor/steps_undone']).toBe(1);
    expect(b.sink.rows[0]['actor/nan_skipped']).toBe(1);
    const wa = await weightsOf(a.trainer.actor.variables);
    const wb = await weightsOf(b.trainer.actor.variables);
    const initial = await weightsOf(tinyPolicy().model.variables);
    for (const name of Object.keys(wa)) expect(wa[name], name).toEqual(wb[name]);
    expect(Object.keys(wa).some((n) => wa[n].some((x, i) => x !== initial[n][i]))).toBe(true);
    a.trainer.dispose();
    b.trainer.dispose();
  });

  it('a bound never reached changes nothing: the same metrics and weights as without it, and the KL it measured', async () => {
    const on = await makeTrainer(config(1e6));
    const off = await makeTrainer(config(0));
    for (const t of [on.trainer, off.trainer]) while (!t.finished) await t.step();
    const strip = (row: Record<string, unknown>) =>
      Object.fromEntries(
        Object.entries(row).filter(
          ([k]) =>
            !k.startsWith('timing_s/') &&
            k !== 'perf/throughput' &&
            k !== 'actor/step_kl' &&
            k !== 'actor/steps_undone',
        ),
      );
    expect(on.sink.rows.map(strip)).toEqual(off.sink.rows.map(strip));
    for (const row of on.sink.rows) {
      expect(row['actor/steps_undone']).toBe(0);
      expect(row['actor/step_kl']).toBeGreaterThan(0);
    }
    expect(off.sink.rows[0]).not.toHaveProperty(['actor/step_kl']);
    const w1 = await weightsOf(on.trainer.actor.variables);
    const w2 = await weightsOf(off.trainer.actor.variables);
    for (const name of Object.keys(w1)) expect(w1[name], name).toEqual(w2[name]);
    on.trainer.dispose();
    off.trainer.dispose();
  });
});
