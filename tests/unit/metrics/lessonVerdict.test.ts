import { describe, expect, it } from 'vitest';
import type { MetricRow as MetricsRow } from '../../../src/metrics/jsonl';
import {
  armCounts,
  armRates,
  armVerdict,
  CollapseWatch,
  lessonSentence,
  lessonVerdict,
  runVerdict,
  vanillaVerdict,
  type ArmCounts,
} from '../../../src/metrics/lessonVerdict';

/** A run's metrics rows from a training-success curve (one value per step) and the step its warning fired. */
function run(success: number[], warningFrom: number | null = null): MetricsRow[] {
  return success.map((v, i) => ({
    step: i + 1,
    'train/FrozenLake/success': v,
    'echo_trap/warning': warningFrom !== null && i + 1 >= warningFrom ? 1 : 0,
    ...(warningFrom !== null && i + 1 >= warningFrom ? { 'echo_trap/signal': 'reward_std+entropy' } : {}),
  }));
}

const rise = (from: number, to: number, n: number) =>
  Array.from({ length: n }, (_, i) => from + ((to - from) * i) / (n - 1));
const collapsing = [...rise(0.2, 0.8, 10), ...Array(5).fill(0.8), ...rise(0.8, 0.1, 10), ...Array(10).fill(0.1)];
const holding = [...rise(0.2, 0.8, 10), ...Array(25).fill(0.75)];

describe('lessonVerdict', () => {
  it('passes a vanilla arm that improves, warns and collapses next to a StarPO-S arm that holds', () => {
    const v = lessonVerdict(run(collapsing, 18), run(holding));
    expect(v).toMatchObject({
      improves: true,
      warns: true,
      collapses: true,
      holds: true,
      endsAbove: true,
      lesson: true,
    });
    expect(v.vanilla.peak).toBeCloseTo(0.8);
    expect(v.vanilla.collapseStep).toBeGreaterThan(v.vanilla.peakStep);
    expect(v.vanilla.warningSignal).toBe('reward_std+entropy');
  });

  it('fails when the warning never fires, or fires only after the collapse', () => {
    expect(lessonVerdict(run(collapsing), run(holding))).toMatchObject({ warns: false, lesson: false });
    expect(lessonVerdict(run(collapsing, 34), run(holding))).toMatchObject({ warns: false, lesson: false });
  });

  it('fails when vanilla never improved, even if it falls', () => {
    const falling = [...Array(5).fill(0.5), ...rise(0.5, 0.1, 10), ...Array(20).fill(0.1)];
    expect(lessonVerdict(run(falling, 3), run(holding))).toMatchObject({
      improves: false,
      collapses: false,
      lesson: false,
    });
  });

  it('fails when StarPO-S falls too, or ends less than 20 points above vanilla', () => {
    expect(lessonVerdict(run(collapsing, 18), run(collapsing))).toMatchObject({ holds: false, lesson: false });
    const low = [...rise(0.2, 0.25, 10), ...Array(25).fill(0.25)];
    expect(lessonVerdict(run(collapsing, 18), run(low))).toMatchObject({
      holds: true,
      endsAbove: false,
      lesson: false,
    });
  });

  it('names a run without training success', () => {
    expect(() => lessonVerdict([{ step: 1 }], run(holding))).toThrow(/train\/<tag>\/success/);
  });
});

describe('lessonVerdict: a collapse that recovers', () => {
  it('still counts the collapse, from the peak it fell from, and compares the final values', () => {
    const recovering = [...rise(0.2, 0.8, 10), ...Array(5).fill(0.8), ...Array(10).fill(0.05), ...rise(0.05, 0.9, 10)];
    const v = lessonVerdict(run(recovering, 14), run(holding));
    expect(v).toMatchObject({
      improves: true,
      warns: true,
      collapses: true,
      holds: true,
      endsAbove: false,
      lesson: false,
    });
    expect(v.vanilla.peak).toBeCloseTo(0.8);
    expect(v.vanilla.peakStep).toBeLessThan(v.vanilla.collapseStep!);
  });
});

describe('armVerdict: one arm on its own, with both marks', () => {
  it('says whether StarPO-S held and where its marks turned on', () => {
    const converged = run(holding).map((r) => ({ ...r, 'echo_trap/converged': r.step >= 20 ? 1 : 0 }));
    expect(armVerdict(converged)).toMatchObject({ holds: true, warningStep: null, convergedStep: 20 });
    expect(armVerdict(run(collapsing, 18))).toMatchObject({ holds: false, warningStep: 18, convergedStep: null });
    expect(lessonVerdict(run(collapsing, 18), converged).starpoS.convergedStep).toBe(20);
  });
});

describe('runVerdict: one run of either arm', () => {
  it('a collapse after the warning', () => {
    expect(runVerdict(run(collapsing, 18))).toMatchObject({
      improves: true,
      warned: true,
      collapses: true,
      collapsedAfterWarning: true,
      holds: false,
    });
  });

  it('a collapse with no warning, or a warning only after it', () => {
    expect(runVerdict(run(collapsing))).toMatchObject({ warned: false, collapses: true, collapsedAfterWarning: false });
    expect(runVerdict(run(collapsing, 34))).toMatchObject({
      warned: true,
      collapses: true,
      collapsedAfterWarning: false,
    });
  });

  it('a run that holds: no collapse, ends within 10 points of its peak', () => {
    expect(runVerdict(run(holding))).toMatchObject({
      improves: true,
      collapses: false,
      collapsedAfterWarning: false,
      holds: true,
    });
  });

  it('a run that recovers still collapsed, and holds when it ends near its overall peak', () => {
    const recovering = [...rise(0.2, 0.8, 10), ...Array(5).fill(0.8), ...Array(10).fill(0.05), ...rise(0.05, 0.9, 10)];
    const v = runVerdict(run(recovering, 14));
    expect(v).toMatchObject({ collapses: true, collapsedAfterWarning: true, holds: true });
    expect(v.peak).toBeCloseTo(0.8); // the peak it fell from
  });
});

describe('CollapseWatch: the collapse rule online', () => {
  it('finds the same collapse step as the verdict on the same rows, step by step and across a resume', () => {
    let seed = 7,
      collapsed = 0;
    const rand = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
    for (let trial = 0; trial < 200; trial++) {
      const n = 10 + Math.floor(rand() * 40);
      let level = rand() * 0.3;
      const curve = Array.from({ length: n }, () => (level = Math.min(1, Math.max(0, level + (rand() - 0.45) * 0.3))));
      const rows = run(curve);
      let watch = new CollapseWatch();
      let online: number | null = null;
      rows.forEach((r, i) => {
        if (i === Math.floor(n / 2)) watch = CollapseWatch.fromState(JSON.parse(JSON.stringify(watch.state())));
        online ??= watch.observe(r.step, r['train/FrozenLake/success'] as number)?.step ?? null;
      });
      expect(online).toBe(vanillaVerdict(rows).collapseStep);
      if (online !== null) collapsed++;
    }
    expect(collapsed).toBeGreaterThan(20); // the random curves do collapse, often
    expect(collapsed).toBeLessThan(180);
  });

  it('reports the collapse from its step on, with the peak it fell from', () => {
    const watch = new CollapseWatch();
    const steps = collapsing.map((v, i) => watch.observe(i + 1, v));
    const first = steps.findIndex((c) => c !== null);
    expect(first).toBeGreaterThan(0);
    expect(steps.slice(first).every((c) => c?.step === first + 1)).toBe(true);
    expect(watch.collapse?.peak).toBeCloseTo(0.8);
  });
});

describe('counts over runs, in words', () => {
  const c = (collapsed: number, after: number, runs = 4, held = runs - collapsed): ArmCounts => ({
    runs,
    collapsed,
    collapsedAfterWarning: after,
    held,
  });

  it('counts collapses, collapses after the warning, holds, and StarPO-S holding above vanilla', () => {
    const runs = [run(collapsing, 18), run(collapsing), run(holding), run(collapsing, 3)].map((r) => runVerdict(r));
    expect(armCounts(runs)).toEqual({ runs: 4, collapsed: 3, collapsedAfterWarning: 2, held: 1 });
    expect(armCounts(runs, [false, false, true, true])).toMatchObject({ heldAboveVanilla: 1 });
    expect(() => armCounts(runs, [true])).toThrow(/4 runs but 1/);
  });

  it("says the issue's sentence, and its variants", () => {
    expect(lessonSentence(c(3, 3), c(0, 0))).toBe(
      'vanilla StarPO collapsed in 3 of 4 runs, each after the warning; StarPO-S in 0 of 4',
    );
    expect(lessonSentence(c(3, 2), c(1, 1))).toBe(
      'vanilla StarPO collapsed in 3 of 4 runs, 2 after the warning; StarPO-S in 1 of 4, after the warning',
    );
    expect(lessonSentence(c(1, 0, 1), c(0, 0, 1))).toBe(
      'vanilla StarPO collapsed in 1 of 1 run, without the warning first; StarPO-S in 0 of 1',
    );
    expect(lessonSentence(c(2, 0), c(0, 0))).toBe(
      'vanilla StarPO collapsed in 2 of 4 runs, none after the warning; StarPO-S in 0 of 4',
    );
  });

  it('gives each rate its 95% Wilson interval', () => {
    const rates = armRates({ ...c(3, 3), heldAboveVanilla: 4 });
    expect(rates.collapsedAfterWarning).toMatchObject({ count: 3, runs: 4, rate: 0.75 });
    expect(rates.collapsedAfterWarning!.lo).toBeCloseTo(0.3006, 3);
    expect(rates.collapsedAfterWarning!.hi).toBeCloseTo(0.9544, 3);
    expect(rates.heldAboveVanilla).toMatchObject({ rate: 1, hi: 1 });
    expect(armRates(c(0, 0, 0)).held).toEqual({ count: 0, runs: 0, rate: null, lo: null, hi: null });
  });
});
