import { describe, expect, it } from 'vitest';
import { EchoTrapDetector, type EchoTrapConfig, type EchoTrapState } from '../../../src/metrics/echoTrap';
import { defaultRunConfig } from '../../../src/starpo/config';

/** A run's default echo-trap settings, with some changed. */
const settings = (over: Partial<EchoTrapConfig> = {}): EchoTrapConfig => ({ ...defaultRunConfig().echoTrap, ...over });

type Step = { std: number; ent: number; grad?: number; success?: number };
const row = (s: Step): Record<string, number> => ({
  'rollout/in_group_std': s.std,
  'actor/entropy_loss': s.ent,
  ...(s.grad !== undefined ? { 'actor/grad_norm': s.grad } : {}),
  ...(s.success !== undefined ? { 'train/SimpleSokoban/success': s.success } : {}),
});

function feed(detector: EchoTrapDetector, steps: Step[], first = 0) {
  return steps.map((s, i) => detector.update(first + i, row(s)));
}

// Baseline over steps 0..4: std mean (1 + 1.2 + 0.8 + 1 + 1) / 5 = 1.0; entropy 2.0.
const BASELINE: Step[] = [
  { std: 1.0, ent: 2 },
  { std: 1.2, ent: 2 },
  { std: 0.8, ent: 2 },
  { std: 1.0, ent: 2 },
  { std: 1.0, ent: 2 },
];

describe('EchoTrapDetector', () => {
  it('fires exactly when both signals stayed below 30% of baseline for 2 steps', () => {
    const d = new EchoTrapDetector(settings());
    const out = feed(d, [
      ...BASELINE,
      { std: 0.5, ent: 1.0 }, // step 5: ratios 0.5 / 0.5, healthy
      { std: 0.2, ent: 0.5 }, // step 6: 0.2 / 0.25, low #1
      { std: 0.25, ent: 0.4 }, // step 7: 0.25 / 0.2, low #2 -> fires
      { std: 0.9, ent: 1.9 }, // step 8: recovered, but the warning stays on
    ]);
    expect(out.slice(0, 5).every((m) => Number.isNaN(m['echo_trap/reward_std_ratio']))).toBe(true);
    expect(out[6]['echo_trap/reward_std_ratio']).toBeCloseTo(0.2, 12);
    expect(out[6]['echo_trap/entropy_ratio']).toBeCloseTo(0.25, 12);
    expect(out.map((m) => m['echo_trap/warning'])).toEqual([0, 0, 0, 0, 0, 0, 0, 1, 1]);
    const r = d.report();
    expect(r.fired).toBe(true);
    expect(r.firstFiredStep).toBe(7);
    expect(r.reason).toMatch(/step 7/);
    expect(r.reason).toMatch(/rollout\/in_group_std at 25%/);
    expect(r.reason).toMatch(/actor\/entropy_loss at 20%/);
  });

  it('needs BOTH signals low, and a consecutive streak', () => {
    const onlyStd = new EchoTrapDetector(settings());
    feed(onlyStd, [...BASELINE, ...Array.from({ length: 10 }, () => ({ std: 0.05, ent: 1.5 }))]);
    expect(onlyStd.report().fired).toBe(false);

    const broken = new EchoTrapDetector(settings());
    const out = feed(broken, [
      ...BASELINE,
      { std: 0.1, ent: 0.1 }, // 5 low
      { std: 0.1, ent: 0.9 }, // 6 entropy ratio 0.45: streak broken
      { std: 0.1, ent: 0.1 }, // 7 low #1
      { std: 0.1, ent: 0.1 }, // 8 low #2 -> fires
    ]);
    expect(out.map((m) => m['echo_trap/warning'])).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 1]);
    expect(broken.report().firstFiredStep).toBe(8);
  });

  it('stays quiet on a healthy, noisy run', () => {
    const d = new EchoTrapDetector(settings());
    for (let step = 0; step < 200; step++) {
      const noise = Math.sin(step * 1.7);
      d.update(step, row({ std: 1 + 0.4 * noise, ent: 2 + 0.6 * Math.cos(step), grad: 1 + 0.3 * noise }));
    }
    expect(d.report()).toEqual({ fired: false, firstFiredStep: null, reason: null, firstGradNormSpikeStep: null });
  });

  it('skips NaN in the baseline and in the streak', () => {
    const d = new EchoTrapDetector(settings());
    const out = feed(d, [
      { std: NaN, ent: 1 }, // 0: std skipped
      { std: 2, ent: 1 },
      { std: 2, ent: 1 },
      { std: 2, ent: 1 },
      { std: 2, ent: 1 }, // 4: entropy baseline complete (5 values), std has 4
      { std: 2, ent: 1 }, // 5: std baseline complete -> still a baseline step
      { std: 0.5, ent: 0.2 }, // 6: ratios 0.25 / 0.2 -> low #1
      { std: NaN, ent: 0.2 }, // 7: unusable, skipped
      { std: 0.4, ent: 0.1 }, // 8: low #2 -> fires
    ]);
    expect(out[5]['echo_trap/reward_std_ratio']).toBeNaN();
    expect(out[6]['echo_trap/reward_std_ratio']).toBeCloseTo(0.25, 12);
    expect(out[6]['echo_trap/entropy_ratio']).toBeCloseTo(0.2, 12);
    expect(out[7]['echo_trap/warning']).toBe(0);
    expect(d.report().firstFiredStep).toBe(8);
    expect(d.report().reason).toMatch(/complete at step 5/);
  });

  it('cannot fire against a zero baseline', () => {
    const d = new EchoTrapDetector(settings());
    feed(d, Array.from({ length: 20 }, () => ({ std: 0, ent: 0 })));
    expect(d.report().fired).toBe(false);
  });

  it('reproduces RAGEN-2 reward-variance early stopping in reward_std mode', () => {
    const d = new EchoTrapDetector(settings({ signals: 'reward_std', baselineSteps: 10, fraction: 0.1, patience: 10 }));
    for (let step = 0; step < 10; step++) d.update(step, { 'rollout/in_group_std': 1 });
    for (let step = 10; step < 30; step++) {
      d.update(step, { 'rollout/in_group_std': 0.05 }); // no entropy at all
      if (step === 18) expect(d.report().fired).toBe(false);
    }
    expect(d.report().firstFiredStep).toBe(19); // steps 10..19 are the 10 consecutive low values
  });

  it('flags a gradient-norm spike above k x the running median', () => {
    const grads = [1, 1.2, 0.9, 1.1, 1.0, 1.3, 6.0];
    const d = new EchoTrapDetector(settings());
    const out = feed(d, grads.map((grad) => ({ std: 1, ent: 1, grad })));
    // step 6: median of [1, 1.2, 0.9, 1.1, 1.0, 1.3] = 1.05; 6.0 > 5 * 1.05
    expect(out.map((m) => m['echo_trap/grad_norm_spike'])).toEqual([0, 0, 0, 0, 0, 0, 1]);
    expect(d.report().firstGradNormSpikeStep).toBe(6);

    const below = new EchoTrapDetector(settings());
    feed(below, [...grads.slice(0, 6), 5.0].map((grad) => ({ std: 1, ent: 1, grad }))); // 5.0 < 5.25
    expect(below.report().firstGradNormSpikeStep).toBeNull();

    const early = new EchoTrapDetector(settings());
    feed(early, [1, 100].map((grad) => ({ std: 1, ent: 1, grad }))); // not enough history yet
    expect(early.report().firstGradNormSpikeStep).toBeNull();
  });

  it('mentions the peak train success in the reason', () => {
    const d = new EchoTrapDetector(settings());
    const steps: Step[] = [...BASELINE.map((s, i) => ({ ...s, success: 0.1 * i })), { std: 0.1, ent: 0.1, success: 0.2 }, { std: 0.1, ent: 0.1, success: 0.1 }];
    feed(d, steps);
    expect(d.report().reason).toMatch(/peaked at 0\.400 \(step 4\)/);
  });

  it('resumes from serialised state with identical results', () => {
    const series: Step[] = [...BASELINE, { std: 0.6, ent: 1, grad: 1 }, { std: 0.2, ent: 0.5, grad: 1 }, { std: 0.1, ent: 0.3, grad: 1 }, { std: 0.1, ent: 0.3, grad: 9 }].map(
      (s) => ({ grad: 1, ...s }),
    );
    const whole = new EchoTrapDetector(settings({ gradMinHistory: 3 }));
    const wholeOut = feed(whole, series);

    const first = new EchoTrapDetector(settings({ gradMinHistory: 3 }));
    const firstOut = feed(first, series.slice(0, 6));
    const saved: EchoTrapState = JSON.parse(JSON.stringify(first.toState()));
    const resumed = EchoTrapDetector.fromState(saved);
    const restOut = feed(resumed, series.slice(6), 6);

    expect([...firstOut, ...restOut]).toEqual(wholeOut);
    expect(resumed.report()).toEqual(whole.report());
    expect(resumed.config.gradMinHistory).toBe(3);
    expect(whole.report().firstFiredStep).toBe(7);
    expect(whole.report().firstGradNormSpikeStep).toBe(8);
  });

  it('rejects bad config, bad state and non-increasing steps', () => {
    expect(() => new EchoTrapDetector(settings({ fraction: 0 }))).toThrow(/fraction/);
    expect(() => new EchoTrapDetector(settings({ baselineSteps: 0 }))).toThrow(/baselineSteps/);
    expect(() => new EchoTrapDetector(settings({ patience: 1.5 }))).toThrow(/patience/);
    expect(() => new EchoTrapDetector(settings({ gradSpikeFactor: 1 }))).toThrow(/gradSpikeFactor/);
    expect(() => new EchoTrapDetector(settings({ gradMinHistory: 30, gradMedianWindow: 20 }))).toThrow(/gradMinHistory/);
    expect(() => new EchoTrapDetector(settings({ signals: 'entropy' as never }))).toThrow(/signals/);
    expect(() => EchoTrapDetector.fromState({} as EchoTrapState)).toThrow(/toState/);
    const d = new EchoTrapDetector(settings());
    d.update(3, {});
    expect(() => d.update(3, {})).toThrow(/steps must increase/);
  });
});
