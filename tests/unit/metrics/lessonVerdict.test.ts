import { describe, expect, it } from 'vitest';
import type { MetricsRow } from '../../../experiments/lib/analysis';
import { armVerdict, lessonVerdict } from '../../../experiments/lib/lessonVerdict';

/** A run's metrics rows from a training-success curve (one value per step) and the step its warning fired. */
function run(success: number[], warningFrom: number | null = null): MetricsRow[] {
  return success.map((v, i) => ({
    step: i + 1,
    'train/FrozenLake/success': v,
    'echo_trap/warning': warningFrom !== null && i + 1 >= warningFrom ? 1 : 0,
    ...(warningFrom !== null && i + 1 >= warningFrom ? { 'echo_trap/signal': 'reward_std+entropy' } : {}),
  }));
}

const rise = (from: number, to: number, n: number) => Array.from({ length: n }, (_, i) => from + ((to - from) * i) / (n - 1));
const collapsing = [...rise(0.2, 0.8, 10), ...Array(5).fill(0.8), ...rise(0.8, 0.1, 10), ...Array(10).fill(0.1)];
const holding = [...rise(0.2, 0.8, 10), ...Array(25).fill(0.75)];

describe('lessonVerdict', () => {
  it('passes a vanilla arm that improves, warns and collapses next to a StarPO-S arm that holds', () => {
    const v = lessonVerdict(run(collapsing, 18), run(holding));
    expect(v).toMatchObject({ improves: true, warns: true, collapses: true, holds: true, endsAbove: true, lesson: true });
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
    expect(lessonVerdict(run(falling, 3), run(holding))).toMatchObject({ improves: false, collapses: false, lesson: false });
  });

  it('fails when StarPO-S falls too, or ends less than 20 points above vanilla', () => {
    expect(lessonVerdict(run(collapsing, 18), run(collapsing))).toMatchObject({ holds: false, lesson: false });
    const low = [...rise(0.2, 0.25, 10), ...Array(25).fill(0.25)];
    expect(lessonVerdict(run(collapsing, 18), run(low))).toMatchObject({ holds: true, endsAbove: false, lesson: false });
  });

  it('names a run without training success', () => {
    expect(() => lessonVerdict([{ step: 1 }], run(holding))).toThrow(/train\/<tag>\/success/);
  });
});

describe('lessonVerdict: a collapse that recovers', () => {
  it('still counts the collapse, from the peak it fell from, and compares the final values', () => {
    const recovering = [...rise(0.2, 0.8, 10), ...Array(5).fill(0.8), ...Array(10).fill(0.05), ...rise(0.05, 0.9, 10)];
    const v = lessonVerdict(run(recovering, 14), run(holding));
    expect(v).toMatchObject({ improves: true, warns: true, collapses: true, holds: true, endsAbove: false, lesson: false });
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
