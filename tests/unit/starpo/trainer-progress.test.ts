// The Trainer's progress hook (what the playground's `step-progress` shows and its Stop button uses): every phase
// reports a count that moves inside a step, and a throw from the hook before the update abandons the step without
// keeping anything, so the same step runs again to the same result.
import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../../src/model/backend';
import { MemorySink } from '../../../src/metrics/sink';
import { Trainer, type StepPhase } from '../../../src/starpo/trainer';
import { tinyBanditConfig, tinyPolicy } from './trainer-fixture';

beforeAll(async () => {
  await initBackend('wasm');
});

/** Every metric except wall-clock ones, for comparing runs. */
function withoutTiming(row: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(row).filter(([k]) => !k.startsWith('timing_s/') && k !== 'perf/throughput'));
}

class Abandon extends Error {}

describe('Trainer onProgress', () => {
  it('reports validation, rollout tokens, scored micro-batches and optimizer steps, in order, with counts that move', async () => {
    const seen: { phase: StepPhase; done: number; total: number; clean: boolean }[] = [];
    const sink = new MemorySink();
    let trainer: Trainer | null = null;
    trainer = await Trainer.create(tinyBanditConfig({ trainer: { totalSteps: 1, testFreq: 1 } }), {
      ...tinyPolicy(),
      sink,
      reuseUpdateForward: false, // score first (RAGEN's order), so the scoring phase shows

      onProgress: (phase, done, total) => {
        seen.push({ phase, done, total, clean: trainer!.canAbandonStep });
      },
    });
    await trainer.step();
    trainer.dispose();

    // Phases in step order: validation before training, rollout, scoring, update (the run validates at its end too).
    const order = seen.map((s) => s.phase).filter((p, i, all) => i === 0 || all[i - 1] !== p);
    expect(order).toEqual(['validation', 'rollout', 'scoring', 'update', 'validation']);
    // Rollout: tokens of 1 turn x 10 new tokens, counted up one by one, never past the total.
    const rollout = seen.filter((s) => s.phase === 'rollout');
    expect(rollout.every((s) => s.total === 10 && s.done <= s.total)).toBe(true);
    expect(rollout.length).toBeGreaterThan(2);
    expect(rollout.map((s) => s.done)).toEqual([...rollout.map((s) => s.done)].sort((a, b) => a - b));
    // Scoring: old log-probs + critic values (no reference: no KL term in this config), 2 micro-batches of 2 each.
    expect(seen.filter((s) => s.phase === 'scoring').map((s) => `${s.done}/${s.total}`)).toEqual([
      '0/4',
      '1/4',
      '2/4',
      '3/4',
      '4/4',
    ]);
    // Update: one mini-batch, critic then actor = 2 optimizer steps.
    expect(seen.filter((s) => s.phase === 'update').map((s) => `${s.done}/${s.total}`)).toEqual(['0/2', '1/2', '2/2']);
    // The step can be abandoned until its first optimizer step, never after.
    const firstUpdate = seen.findIndex((s) => s.phase === 'update');
    expect(seen.slice(0, firstUpdate + 1).every((s) => s.clean)).toBe(true);
    expect(seen.slice(firstUpdate + 1).every((s) => !s.clean)).toBe(true);
    // Sample rollouts carry the state each episode ended on (the viewer's final frame, e.g. a solved board).
    const sample = sink.rollouts.find((r) => r.split === 'train')!;
    expect(sample.finalState).toEqual(expect.stringContaining('bandit'));
  });

  it('a throw during the rollout abandons the step: nothing kept, no tensor leaked, and the step reruns identically', async () => {
    const config = tinyBanditConfig({ trainer: { totalSteps: 2, testFreq: 0, valBeforeTrain: false } });
    // Reference: two uninterrupted steps.
    const refSink = new MemorySink();
    const ref = await Trainer.create(config, { ...tinyPolicy(), sink: refSink, reuseUpdateForward: false });
    await ref.step();
    await ref.step();
    ref.dispose();

    const sink = new MemorySink();
    let abandonAt: { phase: StepPhase; call: number } | null = null;
    let calls = 0;
    const trainer = await Trainer.create(config, {
      ...tinyPolicy(),
      sink,
      reuseUpdateForward: false,
      onProgress: (phase) => {
        if (abandonAt && phase === abandonAt.phase && ++calls === abandonAt.call) throw new Abandon('stop pressed');
      },
    });
    await trainer.step();
    const tensorsAfterStep1 = tf.memory().numTensors;
    // Abandon step 2 in the middle of its generation, then in its scoring pass.
    for (const at of [
      { phase: 'rollout' as const, call: 4 },
      { phase: 'scoring' as const, call: 2 },
    ]) {
      abandonAt = at;
      calls = 0;
      await expect(trainer.step()).rejects.toBeInstanceOf(Abandon);
      expect(trainer.stepsDone).toBe(1);
      expect(trainer.canAbandonStep).toBe(true);
      expect(sink.rows.map((r) => r.step)).toEqual([1]);
      expect(sink.rollouts.every((r) => r.step === 1)).toBe(true);
      expect(tf.memory().numTensors).toBe(tensorsAfterStep1);
    }
    abandonAt = null;
    await trainer.step();
    trainer.dispose();
    expect(sink.rows.map(withoutTiming)).toEqual(refSink.rows.map(withoutTiming));
  });

  it('with the update taking its old log-probs from its own forward pass, there is no scoring phase, and the update stays unabandonable', async () => {
    const seen: { phase: StepPhase; done: number; total: number; clean: boolean }[] = [];
    let trainer: Trainer | null = null;
    trainer = await Trainer.create(
      tinyBanditConfig({ trainer: { totalSteps: 1, testFreq: 0, valBeforeTrain: false } }),
      {
        ...tinyPolicy(),
        sink: new MemorySink(),
        onProgress: (phase, done, total) => {
          seen.push({ phase, done, total, clean: trainer!.canAbandonStep });
        },
      },
    );
    await trainer.step();
    trainer.dispose();
    expect([...new Set(seen.map((s) => s.phase))]).toEqual(['rollout', 'update']);
    // Critic (its update gives the values) then actor: 2 optimizer steps, the first counted while still clean.
    expect(seen.filter((s) => s.phase === 'update').map((s) => `${s.done}/${s.total}:${s.clean}`)).toEqual([
      '0/2:true',
      '1/2:false',
      '2/2:false',
    ]);
  });
});
