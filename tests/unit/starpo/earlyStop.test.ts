import { describe, expect, it } from 'vitest';
import { defaultRunConfig, type EarlyStopSettings } from '../../../src/starpo/config';
import { EarlyStopper, type EarlyStopDecision } from '../../../src/starpo/earlyStop';
import { vanillaVerdict } from '../../../src/metrics/lessonVerdict';

/** The config's early-stopping rules, switched on (a run's default is off), with some thresholds changed. */
const rules = (over: Partial<EarlyStopSettings> = {}): EarlyStopSettings => ({
  ...defaultRunConfig().earlyStop,
  enabled: true,
  ...over,
});

const step = (s: EarlyStopper, std: number, empty = false) =>
  s.observeStep({ emptyAfterFilter: empty, inGroupRewardStd: std });

describe('EarlyStopper rule (a): empty after filter', () => {
  it('stops on the 5th consecutive empty step, and a kept step resets the count', () => {
    const s = new EarlyStopper(rules());
    for (let i = 0; i < 4; i++) expect(step(s, 1, true).stop).toBe(false);
    expect(step(s, 1, false).stop).toBe(false); // reset
    for (let i = 0; i < 4; i++) expect(step(s, 1, true).stop).toBe(false);
    const d = step(s, 1, true);
    expect(d).toMatchObject({ stop: true, reason: 'empty_after_filter' });
    expect(s.metrics()).toEqual({ 'early_stopped/empty_after_filter': 1 });
  });
});

describe('EarlyStopper rule (b): reward-variance collapse', () => {
  it('uses the mean of the first 10 steps as baseline and stops after 10 consecutive values below 10 % of it', () => {
    const s = new EarlyStopper(rules());
    // Baseline: mean of 0.5 and 1.5 alternating = 1.0 -> threshold 0.1.
    for (let i = 0; i < 10; i++) expect(step(s, i % 2 ? 1.5 : 0.5).stop).toBe(false);
    expect(s.varianceBaseline).toBeCloseTo(1.0, 12);
    // Nine low values, then one at exactly the threshold (not below): the run restarts.
    for (let i = 0; i < 9; i++) expect(step(s, 0.05).stop).toBe(false);
    expect(step(s, 0.1).stop).toBe(false);
    for (let i = 0; i < 9; i++) expect(step(s, 0.099).stop).toBe(false);
    expect(step(s, 0.0)).toMatchObject({ stop: true, reason: 'reward_variance_collapse' });
  });

  it('does not judge values inside the baseline window, and a zero baseline never triggers', () => {
    const s = new EarlyStopper(rules());
    for (let i = 0; i < 30; i++) expect(step(s, 0).stop).toBe(false);
    expect(s.varianceBaseline).toBe(0);
  });

  it('honours configured thresholds', () => {
    const s = new EarlyStopper(
      rules({ varianceBaselineSteps: 2, varianceCollapseSteps: 3, varianceCollapseRatio: 0.5 }),
    );
    step(s, 2);
    step(s, 2); // baseline 2, threshold 1
    expect(step(s, 0.9).stop).toBe(false);
    expect(step(s, 0.9).stop).toBe(false);
    expect(step(s, 0.9).stop).toBe(true);
  });
});

describe('EarlyStopper rule (c): validation collapse', () => {
  it('stops when one env stays below 1 % success for 5 consecutive validations', () => {
    const s = new EarlyStopper(rules());
    let d: EarlyStopDecision = { stop: false };
    for (let v = 0; v < 5; v++) {
      // Sokoban collapses; FrozenLake alternates and never accumulates 5.
      d = s.observeValidation({ SimpleSokoban: 0.005, FrozenLake: v % 2 ? 0.0 : 0.2 });
      if (v < 4) expect(d.stop).toBe(false);
    }
    expect(d).toMatchObject({ stop: true, reason: 'validation_collapse' });
    expect(d.detail).toMatch(/SimpleSokoban/);
  });

  it('a validation at or above the threshold resets that env', () => {
    const s = new EarlyStopper(rules());
    for (let v = 0; v < 4; v++) s.observeValidation({ Bandit: 0 });
    expect(s.observeValidation({ Bandit: 0.01 }).stop).toBe(false);
    for (let v = 0; v < 4; v++) expect(s.observeValidation({ Bandit: 0 }).stop).toBe(false);
  });
});

describe('EarlyStopper state', () => {
  it('round-trips through JSON and continues exactly as an uninterrupted run', () => {
    const values = [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01];
    const straight = new EarlyStopper(rules());
    const straightDecisions = values.map((v) => step(straight, v).stop);

    const first = new EarlyStopper(rules());
    const resumedDecisions = values.slice(0, 14).map((v) => step(first, v).stop);
    const saved = JSON.parse(JSON.stringify(first.state()));
    const resumed = EarlyStopper.fromState(saved);
    resumedDecisions.push(...values.slice(14).map((v) => step(resumed, v).stop));

    expect(resumedDecisions).toEqual(straightDecisions);
    expect(straightDecisions.at(-1)).toBe(true);
    expect(straightDecisions.slice(0, -1).every((x) => !x)).toBe(true);
  });

  it('state() is a copy, not a live view', () => {
    const s = new EarlyStopper(rules());
    const snap = s.state();
    step(s, 1, true);
    expect(snap.consecutiveEmpty).toBe(0);
  });

  it('when disabled never stops', () => {
    const s = new EarlyStopper(rules({ enabled: false }));
    for (let i = 0; i < 10; i++) expect(step(s, 1, true).stop).toBe(false);
    expect(s.metrics()).toEqual({});
  });

  it('rejects bad config and non-finite observations', () => {
    expect(() => new EarlyStopper(rules({ emptyStopSteps: -1 }))).toThrow(/emptyStopSteps must be an integer >= 0/);
    expect(() => step(new EarlyStopper(rules()), NaN)).toThrow(/in-group reward std is NaN/);
  });
});

describe('EarlyStopper rule (d): K steps after the training success collapsed (trainer.stopAfterCollapse)', () => {
  // Rises 0.2 -> 0.92 over 10 steps, stays, then falls to 0: the lesson's rule sees the collapse a few steps into the fall.
  const curve = [...Array.from({ length: 10 }, (_, i) => 0.2 + 0.08 * i), ...Array(5).fill(0.9), ...Array(30).fill(0)];
  const rows = curve.map((v, i) => ({ step: i + 1, 'train/FrozenLake/success': v }));
  const feed = (s: EarlyStopper, from = 1, to = curve.length) => {
    for (let t = from; t <= to; t++) {
      const d = s.observeStep({ emptyAfterFilter: false, inGroupRewardStd: 1, step: t, trainSuccess: curve[t - 1] });
      if (d.stop) return { step: t, d };
    }
    return null;
  };

  it("stops K steps after the verdict's collapse step, even with earlyStop.enabled false", () => {
    const collapseStep = vanillaVerdict(rows).collapseStep!;
    expect(collapseStep).toBeGreaterThan(15);
    const s = new EarlyStopper(rules({ enabled: false }), 3);
    const stop = feed(s);
    expect(stop?.step).toBe(collapseStep + 3);
    expect(stop?.d).toMatchObject({ stop: true, reason: 'success_collapse' });
    expect(stop?.d.detail).toContain(`collapsed at step ${collapseStep}`);
    expect(s.metrics()).toEqual({ 'early_stopped/success_collapse': 1 });
  });

  it('K = 0 never stops on a collapse; a run that holds is never stopped', () => {
    expect(feed(new EarlyStopper(rules({ enabled: false }), 0))).toBeNull();
    const s = new EarlyStopper(rules({ enabled: false }), 2);
    for (let t = 1; t <= 40; t++)
      expect(
        s.observeStep({ emptyAfterFilter: false, inGroupRewardStd: 1, step: t, trainSuccess: Math.min(0.9, 0.1 * t) })
          .stop,
      ).toBe(false);
  });

  it('continues across a checkpoint: the collapse watch is in the state', () => {
    const first = new EarlyStopper(rules({ enabled: false }), 3);
    expect(feed(first, 1, 12)).toBeNull();
    const resumed = EarlyStopper.fromState(JSON.parse(JSON.stringify(first.state())), 3);
    expect(feed(resumed, 13)?.step).toBe(vanillaVerdict(rows).collapseStep! + 3);
    expect(() => new EarlyStopper(rules(), -1)).toThrow(/stopAfterCollapse must be an integer >= 0/);
  });
});
