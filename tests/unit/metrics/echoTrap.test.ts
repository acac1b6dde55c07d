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
    expect(r.signal).toBe('reward_std+entropy');
    expect(d.labels()).toEqual({ 'echo_trap/signal': 'reward_std+entropy' });
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
    expect(d.report()).toEqual({
      fired: false,
      convergedStep: null,
      firstFiredStep: null,
      signal: null,
      reason: null,
      firstGradNormSpikeStep: null,
    });
    expect(d.labels()).toEqual({});
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
    feed(
      d,
      Array.from({ length: 20 }, () => ({ std: 0, ent: 0 })),
    );
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
    const out = feed(
      d,
      grads.map((grad) => ({ std: 1, ent: 1, grad })),
    );
    // step 6: median of [1, 1.2, 0.9, 1.1, 1.0, 1.3] = 1.05; 6.0 > 5 * 1.05
    expect(out.map((m) => m['echo_trap/grad_norm_spike'])).toEqual([0, 0, 0, 0, 0, 0, 1]);
    expect(d.report().firstGradNormSpikeStep).toBe(6);

    const below = new EchoTrapDetector(settings());
    feed(
      below,
      [...grads.slice(0, 6), 5.0].map((grad) => ({ std: 1, ent: 1, grad })),
    ); // 5.0 < 5.25
    expect(below.report().firstGradNormSpikeStep).toBeNull();

    const early = new EchoTrapDetector(settings());
    feed(
      early,
      [1, 100].map((grad) => ({ std: 1, ent: 1, grad })),
    ); // not enough history yet
    expect(early.report().firstGradNormSpikeStep).toBeNull();
  });

  it('mentions the peak train success in the reason', () => {
    const d = new EchoTrapDetector(settings());
    const steps: Step[] = [
      ...BASELINE.map((s, i) => ({ ...s, success: 0.1 * i })),
      { std: 0.1, ent: 0.1, success: 0.2 },
      { std: 0.1, ent: 0.1, success: 0.1 },
    ];
    feed(d, steps);
    expect(d.report().reason).toMatch(/peaked at 0\.400 \(step 4\)/);
  });

  it('resumes from serialised state with identical results', () => {
    const series: Step[] = [
      ...BASELINE,
      { std: 0.6, ent: 1, grad: 1 },
      { std: 0.2, ent: 0.5, grad: 1 },
      { std: 0.1, ent: 0.3, grad: 1 },
      { std: 0.1, ent: 0.3, grad: 9 },
    ].map((s) => ({ grad: 1, ...s }));
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
    expect(() => new EchoTrapDetector(settings({ gradMinHistory: 30, gradMedianWindow: 20 }))).toThrow(
      /gradMinHistory/,
    );
    expect(() => new EchoTrapDetector(settings({ signals: 'entropy' as never }))).toThrow(/signals/);
    expect(() => EchoTrapDetector.fromState({} as EchoTrapState)).toThrow(/toState/);
    const d = new EchoTrapDetector(settings());
    d.update(3, {});
    expect(() => d.update(3, {})).toThrow(/steps must increase/);
  });
});

// The MI signal: RAGEN-2's collapse diagnostics log `collapse_first_turn_sample/mi_zscore_ema` on step 1 and every
// 5th step only; the detector holds the latest measurement in between.
const MI = 'collapse_first_turn_sample/mi_zscore_ema';
type Row = Record<string, number>;
/** Steps 1..n: std / entropy per step, MI on step 1 and every 5th step (from `mi(step)`). */
function series(n: number, f: (step: number) => { std: number; ent: number; mi: number }): Row[] {
  return Array.from({ length: n }, (_, i) => {
    const step = i + 1;
    const v = f(step);
    return {
      'rollout/in_group_std': v.std,
      'actor/entropy_loss': v.ent,
      ...(step === 1 || step % 5 === 0 ? { [MI]: v.mi } : {}),
    };
  });
}
function feedRows(d: EchoTrapDetector, rows: Row[]) {
  return rows.map((r, i) => ({ out: d.update(i + 1, r), labels: d.labels() }));
}

describe('EchoTrapDetector: the MI z-score of the collapse diagnostics', () => {
  // Reward std falls at step 11, the reasoning stops depending on the input (MI falls) from the step-15
  // measurement on, entropy stays: template collapse, which the entropy alone would miss.
  const templateCollapse = series(30, (step) => ({ std: step <= 10 ? 1 : 0.1, ent: 2, mi: step < 15 ? 2 : 0.2 }));

  it('fires on reward std + MI when the entropy stays up, names the signal, and holds MI between measurements', () => {
    const d = new EchoTrapDetector(settings());
    const out = feedRows(d, templateCollapse);
    // MI baseline: the measurements of steps 1 and 5 (miBaselineValues 2); the step-10 one is the first ratio, 1.
    expect(out.slice(0, 9).every((o) => Number.isNaN(o.out['echo_trap/mi_ratio']))).toBe(true);
    expect(out[9].out['echo_trap/mi_ratio']).toBe(1);
    expect(out[13].out['echo_trap/mi_ratio']).toBe(1); // held until the next measurement (step 15)
    expect(out[14].out['echo_trap/mi_ratio']).toBeCloseTo(0.1, 12);
    expect(out[16].out['echo_trap/mi_ratio']).toBeCloseTo(0.1, 12);
    // Low from step 15 (std 0.1 and MI 0.1 of baseline; entropy at 100 %): patience 2 -> fires at step 16.
    const r = d.report();
    expect(r.firstFiredStep).toBe(16);
    expect(r.signal).toBe('reward_std+mi_zscore_ema');
    expect(r.reason).toMatch(/collapse_first_turn_sample\/mi_zscore_ema at 10%/);
    expect(out.map((o) => o.out['echo_trap/warning']).indexOf(1)).toBe(15);
    // `echo_trap/signal` is on every row from the firing step on, and on none before.
    expect(out.slice(0, 15).every((o) => Object.keys(o.labels).length === 0)).toBe(true);
    expect(out.slice(15).every((o) => o.labels['echo_trap/signal'] === 'reward_std+mi_zscore_ema')).toBe(true);
  });

  it("the paper's rule (reward_std_and_entropy) misses the same template collapse", () => {
    const d = new EchoTrapDetector(settings({ signals: 'reward_std_and_entropy' }));
    feedRows(d, templateCollapse);
    expect(d.report().fired).toBe(false);
  });

  it('names every low signal of the firing step, and reads the trajectory sample when told to', () => {
    const both = series(20, (step) => ({
      std: step <= 10 ? 1 : 0.1,
      ent: step <= 10 ? 2 : 0.2,
      mi: step < 10 ? 2 : 0.2,
    }));
    const d = new EchoTrapDetector(settings());
    feedRows(d, both);
    expect(d.report().firstFiredStep).toBe(12);
    expect(d.report().signal).toBe('reward_std+entropy+mi_zscore_ema');

    const traj = new EchoTrapDetector(settings({ miSample: 'trajectory' }));
    feedRows(traj, templateCollapse); // only the first-turn key is logged: the trajectory signal is unknown
    expect(traj.report().fired).toBe(false);
  });

  it('does not fire when only the MI falls (the reward std still carries a learning signal)', () => {
    const d = new EchoTrapDetector(settings());
    feedRows(
      d,
      series(40, (step) => ({ std: 1, ent: 2, mi: step < 15 ? 2 : 0.1 })),
    );
    expect(d.report().fired).toBe(false);
  });

  it('stays quiet on noisy healthy signals over a long run (MI included)', () => {
    const noise = seeded(42);
    const rows = series(300, () => ({
      std: 1 + 0.5 * (noise() - 0.5),
      ent: 2 + 0.8 * (noise() - 0.5),
      mi: 1 + 0.9 * (noise() - 0.5),
    }));
    const d = new EchoTrapDetector(settings());
    const out = feedRows(d, rows);
    expect(out.every((o) => o.out['echo_trap/warning'] === 0)).toBe(true);
    expect(Number.isFinite(out[299].out['echo_trap/mi_ratio'])).toBe(true);
  });

  it('resumes mid-way with identical output, MI baseline and held value included', () => {
    const whole = new EchoTrapDetector(settings());
    const wholeOut = feedRows(whole, templateCollapse);
    const first = new EchoTrapDetector(settings());
    const firstOut = feedRows(first, templateCollapse.slice(0, 12));
    const resumed = EchoTrapDetector.fromState(JSON.parse(JSON.stringify(first.toState())));
    const rest = templateCollapse
      .slice(12)
      .map((r, i) => ({ out: resumed.update(13 + i, r), labels: resumed.labels() }));
    expect([...firstOut, ...rest]).toEqual(wholeOut);
    expect(resumed.report()).toEqual(whole.report());
  });

  it('continues a state saved before the MI signal existed, with the saved (old) rule', () => {
    const d = new EchoTrapDetector(settings({ signals: 'reward_std_and_entropy' }));
    feed(d, BASELINE);
    const old = JSON.parse(JSON.stringify(d.toState()));
    for (const k of ['entropyFraction', 'miFraction', 'miBaselineValues', 'miSample']) delete old.config[k];
    delete old.miBaselineValues;
    delete old.miRatio;
    delete old.report.signal;
    const resumed = EchoTrapDetector.fromState(old, settings());
    expect(resumed.config.signals).toBe('reward_std_and_entropy');
    expect(resumed.config.miBaselineValues).toBe(2);
    feed(
      resumed,
      [
        { std: 0.1, ent: 0.1 },
        { std: 0.1, ent: 0.1 },
      ],
      5,
    );
    expect(resumed.report().firstFiredStep).toBe(6);
    expect(resumed.report().signal).toBe('reward_std+entropy');
    expect(() => EchoTrapDetector.fromState(old)).toThrow(/must be/); // without defaults the settings are incomplete
  });

  it('rejects bad MI settings', () => {
    expect(() => new EchoTrapDetector(settings({ miFraction: 1.5 }))).toThrow(/miFraction/);
    expect(() => new EchoTrapDetector(settings({ miBaselineValues: 0 }))).toThrow(/miBaselineValues/);
    expect(() => new EchoTrapDetector(settings({ miSample: 'turn' as never }))).toThrow(/miSample/);
  });
});

// Collapse or convergence: both arms reach every rollout succeeding, so the in-group reward std falls to 0 in both.
// Vanilla StarPO trains on every group (chosen std = all-groups std, no filter keys); StarPO-S's filter without
// zero-std groups keeps nothing once every group agrees (rollout/empty_after_filter = 1).
describe('EchoTrapDetector: collapse or convergence', () => {
  const TAG = 'train/Bandit/success';
  /** Steps 0..4 the baseline (std 0.4, success 0.5), then `rest`, each with the given training success. */
  const run = (rest: Row[]): Row[] => [
    ...Array.from({ length: 5 }, () => ({ 'rollout/in_group_std': 0.4, [TAG]: 0.5 })),
    ...rest,
  ];
  const solved = (extra: Row = {}): Row => ({ 'rollout/in_group_std': 0, [TAG]: 1, ...extra });
  const feedAll = (d: EchoTrapDetector, rows: Row[]) => rows.map((r, i) => d.update(i, r));

  it('a filter that trained on nothing while every rollout succeeded reads as converged, not as a warning', () => {
    const d = new EchoTrapDetector(settings({ signals: 'reward_std' }));
    const rows = run(
      Array.from({ length: 10 }, () => solved({ 'rollout/chosen_in_group_std': 0, 'rollout/empty_after_filter': 1 })),
    );
    const out = feedAll(d, rows);
    expect(out.map((m) => m['echo_trap/warning']).every((w) => w === 0)).toBe(true);
    // steps 5 and 6 are the two converged steps of patience 2: the mark turns on at step 6 and stays on
    expect(out.map((m) => m['echo_trap/converged'])).toEqual([0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1]);
    expect(out[5]['echo_trap/trained_std_ratio']).toBeNaN();
    expect(d.report()).toMatchObject({ fired: false, convergedStep: 6, signal: null });
  });

  it('the same success and std on an arm that keeps training on the agreeing groups is the warning (the echo trap)', () => {
    const d = new EchoTrapDetector(settings({ signals: 'reward_std' }));
    const out = feedAll(d, run(Array.from({ length: 10 }, () => solved()))); // no filter keys: it trains on every group
    expect(out.map((m) => m['echo_trap/warning'])).toEqual([0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1]);
    expect(out.every((m) => m['echo_trap/converged'] === 0)).toBe(true);
    expect(out[5]['echo_trap/trained_std_ratio']).toBe(0);
    expect(d.report()).toMatchObject({ fired: true, firstFiredStep: 6, convergedStep: null, signal: 'reward_std' });

    // A v1 filter keeps its top groups even when every group agrees: it trains on std 0 too, so it warns as well.
    const v1 = new EchoTrapDetector(settings({ signals: 'reward_std' }));
    feedAll(v1, run(Array.from({ length: 4 }, () => solved({ 'rollout/chosen_in_group_std': 0 }))));
    expect(v1.report()).toMatchObject({ fired: true, firstFiredStep: 6, convergedStep: null });
  });

  it('a filter that trains only on groups that still disagree is neither trapped nor, below its best success, converged', () => {
    const d = new EchoTrapDetector(settings({ signals: 'reward_std' }));
    // one group of eight still disagrees: all-groups std 0.05 (ratio 0.125), the kept group's 0.35 (ratio 0.875)
    const mixed = (success: number): Row => ({
      'rollout/in_group_std': 0.05,
      'rollout/chosen_in_group_std': 0.35,
      [TAG]: success,
    });
    const out = feedAll(d, run([mixed(0.97), mixed(0.97), mixed(0.6), mixed(0.6), mixed(0.6)]));
    expect(out[5]['echo_trap/trained_std_ratio']).toBeCloseTo(0.875, 12);
    expect(out.every((m) => m['echo_trap/warning'] === 0)).toBe(true);
    expect(d.report().convergedStep).toBe(6); // 0.97 twice: at its best

    // Every rollout failing (the format broke), nothing kept: std 0 but success far below its best: not converged.
    const broken = new EchoTrapDetector(settings({ signals: 'reward_std' }));
    const fail: Row = {
      'rollout/in_group_std': 0,
      'rollout/chosen_in_group_std': 0,
      'rollout/empty_after_filter': 1,
      [TAG]: 0,
    };
    feedAll(broken, [...run([solved({ 'rollout/chosen_in_group_std': 0.4 })]), fail, fail, fail]);
    expect(broken.report()).toMatchObject({ fired: false, convergedStep: null });
  });

  it('resumes the convergence streak from a saved state, and reads a state saved before the split', () => {
    const rows = run(Array.from({ length: 4 }, () => solved({ 'rollout/empty_after_filter': 1 })));
    const first = new EchoTrapDetector(settings({ signals: 'reward_std' }));
    feedAll(first, rows.slice(0, 6)); // one converged step so far
    const resumed = EchoTrapDetector.fromState(JSON.parse(JSON.stringify(first.toState())));
    rows.slice(6).forEach((r, i) => resumed.update(6 + i, r));
    expect(resumed.report().convergedStep).toBe(6);

    const old = JSON.parse(JSON.stringify(first.toState()));
    delete old.convergedStreak;
    delete old.report.convergedStep;
    const fromOld = EchoTrapDetector.fromState(old);
    expect(fromOld.report().convergedStep).toBeNull();
    rows.slice(6).forEach((r, i) => fromOld.update(6 + i, r));
    expect(fromOld.report().convergedStep).toBe(7); // the streak restarts at 0
  });
});

/** A small seeded uniform generator (mulberry32), so the noise test is the same on every run. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
