import { describe, expect, it } from 'vitest';
import { lastValue, seedCurves } from '../../../src/ui/freshSeedCurves';
import { parseFreshSeedTable, type FreshSeedRow, type FreshSeedTable } from '../../../src/ui/lessonRobustness';

const arm = { peak: 1, final: 1, warningStep: null, convergedStep: null };
const row = (seed: number, series?: FreshSeedRow['series']): FreshSeedRow => ({
  seed,
  vanilla: { start: 0.2, peak: 1, peakStep: 10, final: 0, warningStep: 5, collapseStep: 15 },
  starpoS: arm,
  ...(series ? { series } : {}),
  failed: [],
});
const table = (rows: FreshSeedRow[]): FreshSeedTable =>
  parseFreshSeedTable({
    format: 1,
    preset: 'p',
    seedsNamedAt: 'abcdef1',
    presetCommit: 'abcdef1',
    command: 'c',
    date: 'd',
    rows,
  });

describe('seedCurves (every fresh seed at once)', () => {
  const t = table([
    row(1, {
      vanilla: { step: [1, 5, 10], success: [0.2, 0.6, 0], mi: [0.8, 0.4, null] },
      starpoS: { step: [1, 5], success: [0.2, 1], mi: [0.8, 0.7] },
    }),
    row(2, {
      vanilla: { step: [1, 5], success: [0.4, 1], mi: [0.6, 0.2] },
      starpoS: { step: [1, 5, 10], success: [0.4, 1, 1], mi: [0.6, 0.5, 0.5] },
    }),
  ]);

  it('puts every seed on the union of steps, null where a seed has no value', () => {
    const c = seedCurves(t, 'success')!;
    expect(c.steps).toEqual([1, 5, 10]);
    expect(c.curves.map((x) => [x.arm, x.seed, x.values])).toEqual([
      ['vanilla', 1, [0.2, 0.6, 0]],
      ['starpoS', 1, [0.2, 1, null]],
      ['vanilla', 2, [0.4, 1, null]],
      ['starpoS', 2, [0.4, 1, 1]],
    ]);
  });

  it("each arm's mean is over the seeds with a value at that step", () => {
    const mi = seedCurves(t, 'mi')!;
    expect(mi.mean.vanilla.map((v) => v && Number(v.toFixed(4)))).toEqual([0.7, 0.3, null]);
    expect(mi.mean.starpoS.map((v) => v && Number(v.toFixed(4)))).toEqual([0.7, 0.6, 0.5]);
    expect(lastValue(mi.mean.vanilla)).toBeCloseTo(0.3);
    expect(lastValue([null, null])).toBeNull();
  });

  it('is null for a table without curves, and for MI when no run measured it', () => {
    expect(seedCurves(table([row(1)]), 'success')).toBeNull();
    const noMi = table([row(1, { vanilla: { step: [1], success: [0.5] }, starpoS: { step: [1], success: [0.5] } })]);
    expect(seedCurves(noMi, 'success')).not.toBeNull();
    expect(seedCurves(noMi, 'mi')).toBeNull();
  });

  it('the schema refuses curves whose arrays disagree in length or whose steps do not increase', () => {
    const bad = (series: unknown) => () => table([{ ...row(1), series } as FreshSeedRow]);
    expect(bad({ vanilla: { step: [1, 5], success: [0.5] }, starpoS: { step: [1], success: [0.5] } })).toThrow(
      /one value per step/,
    );
    expect(bad({ vanilla: { step: [5, 1], success: [0.5, 0.5] }, starpoS: { step: [1], success: [0.5] } })).toThrow(
      /steps must increase/,
    );
  });
});
