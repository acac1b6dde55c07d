import { describe, expect, it } from 'vitest';
import {
  DEFAULT_FILTER_V2,
  checkFilterConfigV1,
  filterGroupsV1,
  filterGroupsV2,
  filterLossScale,
  selectGroupsByScore,
  type RolloutFilterV2Config,
} from '../../../src/starpo/filter';

// Eight env groups of four raw rewards. Stds by hand (unbiased):
//   [0,0,0,c] -> mean c/4, squared deviations 3(c/4)^2 + (3c/4)^2 = 3c^2/4, / 3 -> std c/2
//   [0,0,1,1] -> squared deviations 4 * 0.25 = 1, / 3 -> std 1/sqrt(3)
//   [0,1,1,1] -> mirror of [0,0,0,1] -> std 1/2
const GROUPS = [
  [0, 0, 0, 0], // g0 std 0
  [0, 0, 0, 1], // g1 std 0.5
  [0, 0, 1, 1], // g2 std 0.577
  [1, 1, 1, 1], // g3 std 0
  [0, 0, 0, 5], // g4 std 2.5  (largest)
  [0, 0, 0, 2], // g5 std 1    (second)
  [0, 1, 1, 1], // g6 std 0.5
  [0, 0, 0, 0], // g7 std 0
];
const REWARDS = GROUPS.flat();
const STD = [0, 0.5, 1 / Math.sqrt(3), 0, 2.5, 1, 0.5, 0];
const range = (a: number, n: number) => Array.from({ length: n }, (_, i) => a + i);

describe('v1 filter (rollout_filter_ratio)', () => {
  it('ratio 0.25 of 8 groups keeps the 2 groups with the largest in-group std, whole groups, batch order', () => {
    const r = filterGroupsV1(REWARDS, 8, 4, { ratio: 0.25, type: 'std' });
    expect(r.keptGroups).toEqual([4, 5]);
    expect(r.keptTrajectories).toEqual([...range(16, 4), ...range(20, 4)]);
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    expect(r.metrics['rollout/in_group_std']).toBeCloseTo(mean(STD), 10);
    expect(r.metrics['rollout/in_group_max']).toBeCloseTo(mean([0, 1, 1, 1, 5, 2, 1, 0]), 10);
    expect(r.metrics['rollout/in_group_mean']).toBeCloseTo(mean(GROUPS.map(mean)), 10);
    expect(r.metrics['rollout/chosen_in_group_std']).toBeCloseTo((2.5 + 1) / 2, 10);
    expect(r.metrics['rollout/chosen_in_group_max']).toBeCloseTo((5 + 2) / 2, 10);
    expect(r.metrics['rollout/chosen_in_group_mean']).toBeCloseTo((5 / 4 + 2 / 4) / 2, 10);
  });

  it('std_rev keeps the smallest std; ties go to the lower group index', () => {
    // g0, g3 and g7 all have std 0: the two kept are g0 and g3.
    expect(filterGroupsV1(REWARDS, 8, 4, { ratio: 0.25, type: 'std_rev' }).keptGroups).toEqual([0, 3]);
  });

  it('breaks ties among the largest by lower group index', () => {
    // Only one group kept (floor(0.125 x 8) = 1); g1 and g6 tie at std 0.5 once g2, g4, g5 are flattened.
    const flat = GROUPS.map((g, i) => ([2, 4, 5].includes(i) ? [3, 3, 3, 3] : g)).flat();
    expect(filterGroupsV1(flat, 8, 4, { ratio: 0.125, type: 'std' }).keptGroups).toEqual([1]);
  });

  it('ratio 1 keeps everything (vanilla StarPO) and chosen metrics equal the overall ones', () => {
    const r = filterGroupsV1(REWARDS, 8, 4, { ratio: 1, type: 'std' });
    expect(r.keptGroups).toEqual(range(0, 8));
    expect(r.keptTrajectories).toEqual(range(0, 32));
    expect(r.metrics['rollout/chosen_in_group_std']).toBe(r.metrics['rollout/in_group_std']);
  });

  it('a ratio that rounds to zero groups is an error, at config time and at run time', () => {
    // floor(0.25 x 3) = 0.
    expect(() => checkFilterConfigV1({ numGroups: 3, groupSize: 16, ratio: 0.25, miniBatchSize: 1 })).toThrow(
      /keeps no group/,
    );
    expect(() => filterGroupsV1(REWARDS.slice(0, 12), 3, 4, { ratio: 0.25, type: 'std' })).toThrow(/keeps no group/);
  });

  it('checks that the kept batch fills a mini-batch, naming the numbers', () => {
    // RAGEN default: 8 x 16 x 0.25 = 32 >= 32.
    expect(() => checkFilterConfigV1({ numGroups: 8, groupSize: 16, ratio: 0.25, miniBatchSize: 32 })).not.toThrow();
    expect(() => checkFilterConfigV1({ numGroups: 8, groupSize: 16, ratio: 0.25, miniBatchSize: 64 })).toThrow(
      /2 group\(s\) x group size 16 = 32 trajectories.*mini-batch size 64/,
    );
    // 3 x 4 x 0.5 = 6 passes RAGEN's product check, but floor(1.5) = 1 group = 4 trajectories < 6.
    expect(() => checkFilterConfigV1({ numGroups: 3, groupSize: 4, ratio: 0.5, miniBatchSize: 6 })).toThrow(
      /= 4 trajectories/,
    );
    expect(() => checkFilterConfigV1({ numGroups: 8, groupSize: 16, ratio: 0, miniBatchSize: 1 })).toThrow(/\(0, 1\]/);
  });

  it('rejects a batch whose size is not numGroups x groupSize', () => {
    expect(() => filterGroupsV1([1, 2, 3], 2, 2, { ratio: 0.5, type: 'std' })).toThrow(
      /3 trajectory values.*2 x 2 = 4/,
    );
  });

  it('gives std 0 to groups of one (torch would say NaN)', () => {
    const r = filterGroupsV1([1, 2, 3, 4], 4, 1, { ratio: 0.5, type: 'std' });
    expect(r.metrics['rollout/in_group_std']).toBe(0);
    expect(r.keptGroups).toEqual([0, 1]);
  });
});

const cfg = (over: Partial<RolloutFilterV2Config>): RolloutFilterV2Config => ({ ...DEFAULT_FILTER_V2, ...over });

describe('v2 selection (rollout_filter_strategy)', () => {
  it('top_p linear adds groups until value x sum - eps is reached', () => {
    // Scores 4, 3, 2, 1 (sum 10). p = 0.5: threshold 4.99 -> 4 (cum 4 < 4.99), 3 (cum 7 >= 4.99) -> 2 groups.
    const scores = [2, 4, 1, 3];
    expect(selectGroupsByScore(scores, cfg({ value: 0.5 }))).toEqual([1, 3]);
    // p = 0.9: threshold 8.99 -> 4, 3, 2 (cum 9) -> 3 groups.
    expect(selectGroupsByScore(scores, cfg({ value: 0.9 }))).toEqual([1, 3, 0]);
    // 'smallest' accumulates from the small end: 1, 2 (cum 3 < 4.99), 3 (cum 6) -> 3 groups.
    expect(selectGroupsByScore(scores, cfg({ value: 0.5, type: 'smallest' }))).toEqual([2, 0, 3]);
  });

  it('top_p linear keeps nothing when the signal is below eps', () => {
    // Sum 0.007: threshold 0.9 x 0.007 - 0.01 < 0 is "reached" before adding any group -> empty selection.
    expect(selectGroupsByScore([0.004, 0.003, 0, 0], cfg({ value: 0.9, includeZero: false }))).toEqual([]);
    // Every group has zero std and zeros are excluded: nothing to keep.
    expect(selectGroupsByScore([0, 0, 0], cfg({ value: 0.9, includeZero: false }))).toEqual([]);
  });

  it('top_p with value >= 1 keeps every candidate (zeros dropped only when include_zero is false)', () => {
    expect(selectGroupsByScore([0, 2, 0, 1], cfg({ value: 1 }))).toEqual([0, 1, 2, 3]);
    expect(selectGroupsByScore([0, 2, 0, 1], cfg({ value: 1, includeZero: false }))).toEqual([1, 3]);
  });

  it('minScore drops groups below the floor before any strategy ranks them', () => {
    // In-group stds of 8 binary rewards (1 vs 0): one rollout differs -> 0.354, two -> 0.463, four -> 0.535.
    const std = (differing: number) =>
      filterGroupsV2([...Array(8 - differing).fill(1), ...Array(differing).fill(0)], 1, 8, cfg({})).metrics[
        'rollout/in_group_std'
      ];
    const scores = [std(1), std(4), std(2), 0];
    expect(scores[0]).toBeCloseTo(0.354, 3);
    expect(scores[2]).toBeCloseTo(0.463, 3);
    const floor = { minScore: 0.36, includeZero: false };
    expect(selectGroupsByScore(scores, cfg({ strategy: 'top_k', value: 0.75 }))).toEqual([1, 2, 0]);
    expect(selectGroupsByScore(scores, cfg({ strategy: 'top_k', value: 0.75, ...floor }))).toEqual([1, 2]);
    // top_p's mass is taken over the groups left after the floor: 0.9 x (0.535 + 0.463) needs both.
    expect(selectGroupsByScore(scores, cfg({ value: 0.9, ...floor }))).toEqual([1, 2]);
    // Only single-deviant groups left: nothing is kept, so the step makes no update.
    expect(selectGroupsByScore([scores[0], scores[0], 0], cfg({ value: 0.9, ...floor }))).toEqual([]);
    expect(selectGroupsByScore([scores[0], scores[0], 0], cfg({ value: 0.9, includeZero: false }))).toEqual([0, 1]);
  });

  it('top_p softmax keeps the shortest prefix whose probability mass reaches value', () => {
    // softmax(ln 4, ln 2, ln 1, ln 1) = [0.5, 0.25, 0.125, 0.125].
    const scores = [Math.log(1), Math.log(4), Math.log(1), Math.log(2)];
    const soft = (value: number) => selectGroupsByScore(scores, cfg({ value, topPProbMode: 'softmax' }));
    expect(soft(0.45)).toEqual([1]); // 0.5 >= 0.45
    expect(soft(0.7)).toEqual([1, 3]); // 0.5, 0.75
    expect(soft(0.8)).toEqual([1, 3, 0]); // ties at 0.125: lower index (0) first
  });

  it('top_k keeps max(1, floor(value x groups)); top_k_abs keeps floor(value)', () => {
    const scores = [0.1, 0.9, 0.5, 0.7, 0.3, 0.2, 0.8, 0.0];
    expect(selectGroupsByScore(scores, cfg({ strategy: 'top_k', value: 0.25 }))).toEqual([1, 6]);
    expect(selectGroupsByScore(scores, cfg({ strategy: 'top_k', value: 0.01 }))).toEqual([1]);
    expect(selectGroupsByScore(scores, cfg({ strategy: 'top_k', value: 0.25, type: 'smallest' }))).toEqual([7, 0]);
    expect(
      selectGroupsByScore(scores, cfg({ strategy: 'top_k', value: 0.25, type: 'smallest', includeZero: false })),
    ).toEqual([0, 5]);
    expect(selectGroupsByScore(scores, cfg({ strategy: 'top_k_abs', value: 3 }))).toEqual([1, 6, 3]);
  });

  it('min_p keeps scores >= value x max (largest) or <= min / value (smallest)', () => {
    const scores = [1, 0.6, 0.4, 0.5];
    expect(selectGroupsByScore(scores, cfg({ strategy: 'min_p', value: 0.5 })).sort()).toEqual([0, 1, 3]);
    // min 0.4 / 0.8 = 0.5 -> keep 0.4 and 0.5.
    expect(selectGroupsByScore(scores, cfg({ strategy: 'min_p', value: 0.8, type: 'smallest' })).sort()).toEqual([
      2, 3,
    ]);
  });

  it('rejects unknown options', () => {
    expect(() => selectGroupsByScore([1], cfg({ strategy: 'nucleus' as never }))).toThrow(/strategy/);
    expect(() => selectGroupsByScore([1], cfg({ type: 'std' as never }))).toThrow(/largest/);
  });
});

describe('v2 filter on trajectories', () => {
  it('ranks by in-group std for reward_variance and reports the v2 metrics', () => {
    const r = filterGroupsV2(REWARDS, 8, 4, cfg({ strategy: 'top_k', value: 0.25 }));
    expect(r.keptGroups).toEqual([4, 5]);
    expect(r.keptTrajectories).toEqual([...range(16, 4), ...range(20, 4)]);
    expect(r.metrics['rollout/filter_kept_count']).toBe(2);
    expect(r.metrics['rollout/filter_kept_ratio']).toBe(0.25);
    expect(r.metrics['rollout/filter_zero_count']).toBe(3);
    expect(r.metrics['rollout/empty_after_filter']).toBe(0);
    expect(r.metrics['rollout/in_group_reward_std']).toBeCloseTo(r.metrics['rollout/in_group_std'], 12);
    expect(r.metrics['rollout/chosen_in_group_reward_std']).toBeCloseTo(1.75, 10);
  });

  it("metric 'reward' ranks by the in-group mean", () => {
    // Means: g4 = 5/4 (largest), g3 = 1, g6 = 3/4 ... top_k_abs 2 keeps g4 and g3, whose stds are 2.5 and 0:
    // not the two largest-std groups (g4, g5).
    const r = filterGroupsV2(REWARDS, 8, 4, cfg({ strategy: 'top_k_abs', value: 2, metric: 'reward' }));
    expect(r.keptGroups).toEqual([3, 4]);
  });

  it('flags an empty selection', () => {
    const r = filterGroupsV2(Array(8).fill(1), 2, 4, cfg({ value: 0.9, includeZero: false }));
    expect(r.keptTrajectories).toEqual([]);
    expect(r.metrics['rollout/empty_after_filter']).toBe(1);
    expect(r.metrics['rollout/chosen_in_group_std']).toBe(0);
  });
});

describe('filterLossScale', () => {
  it('scales by the kept ratio or its square root', () => {
    expect(filterLossScale('none', 0.25)).toBe(1);
    expect(filterLossScale('linear', 0.25)).toBe(0.25);
    expect(filterLossScale('sqrt', 0.25)).toBe(0.5);
    expect(() => filterLossScale('cube' as never, 0.5)).toThrow(/unknown mode/);
  });
});
