// trainer.stopAfterCollapse on a tiny Bandit run (wasm): the trainer hands each step's training success to the early
// stopper, and ends the run K steps after the success collapsed. The tiny policy's own success does not collapse on
// cue, so the second test lays a collapsing curve over what the trainer hands on; the stop itself is the trainer's.
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { initBackend } from '../../../src/model/backend';
import { MemorySink } from '../../../src/metrics/sink';
import { vanillaVerdict } from '../../../src/metrics/lessonVerdict';
import { EarlyStopper } from '../../../src/starpo/earlyStop';
import { Trainer } from '../../../src/starpo/trainer';
import { tinyBanditConfig, tinyPolicy } from './trainer-fixture';

beforeAll(async () => {
  await initBackend('wasm');
});
afterEach(() => vi.restoreAllMocks());

describe('trainer.stopAfterCollapse', () => {
  it("hands the early stopper each step's number and training success", async () => {
    const seen = vi.spyOn(EarlyStopper.prototype, 'observeStep');
    const sink = new MemorySink();
    const trainer = await Trainer.create(
      tinyBanditConfig({ trainer: { totalSteps: 2, testFreq: 0, stopAfterCollapse: 3 } }),
      { ...tinyPolicy(), sink },
    );
    while (!trainer.finished) await trainer.step();
    trainer.dispose();
    const steps = sink.rows.filter((r) => r.step > 0); // (step 0 is the validation before training)
    expect(steps.map((r) => r.step)).toEqual([1, 2]);
    expect(steps.every((r) => typeof r['train/Bandit/success'] === 'number')).toBe(true);
    expect(seen.mock.calls.map(([s]) => [s.step, s.trainSuccess])).toEqual(
      steps.map((r) => [r.step, r['train/Bandit/success']]),
    );
  }, 120_000);

  it('ends the run K steps after the collapse, says why, and logs early_stopped/success_collapse', async () => {
    const curve = [0, 1, 1, ...Array(17).fill(0)];
    const collapseStep = vanillaVerdict(
      curve.map((v, i) => ({ step: i + 1, 'train/Bandit/success': v })),
    ).collapseStep!;
    expect(collapseStep).toBe(7);
    const observe = EarlyStopper.prototype.observeStep;
    vi.spyOn(EarlyStopper.prototype, 'observeStep').mockImplementation(function (this: EarlyStopper, s) {
      return observe.call(this, { ...s, trainSuccess: curve[s.step! - 1] });
    });
    const sink = new MemorySink();
    const lines: string[] = [];
    const config = tinyBanditConfig({ trainer: { totalSteps: 20, testFreq: 0, stopAfterCollapse: 2 } });
    const trainer = await Trainer.create(config, { ...tinyPolicy(), sink, log: (l) => lines.push(l) });
    while (!trainer.finished) await trainer.step();
    expect(trainer.stepsDone).toBe(collapseStep + 2);
    expect(trainer.stoppedBy).toBe('success_collapse');
    expect(sink.rows.at(-1)).toMatchObject({ step: collapseStep + 2, 'early_stopped/success_collapse': 1 });
    expect(lines.join('\n')).toContain(`early stop at step 9: the training success collapsed at step ${collapseStep}`);
    trainer.dispose();
  }, 120_000);
});
