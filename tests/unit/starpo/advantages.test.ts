import { describe, expect, it } from 'vitest';
import {
  broadcastOverLossTokens,
  gae,
  grpoNormalize,
  lastLossToken,
  placeTerminalReward,
  returnsToGo,
  stepLevelAdvantages,
  whiten,
} from '../../../src/starpo/advantages';

const f32 = (xs: number[]) => Float32Array.from(xs);
const close = (got: ArrayLike<number>, want: number[], digits = 5) => {
  expect(got.length).toBe(want.length);
  want.forEach((w, i) => expect(got[i]).toBeCloseTo(w, digits));
};

describe('gae', () => {
  it('with gamma = lambda = 1 and a terminal reward equals R - V on every loss token, returns = R', () => {
    // Two turns: loss tokens 1-2 (turn 1), observation tokens 3-4 (masked), loss tokens 5-7 (turn 2).
    const mask = [f32([0, 1, 1, 0, 0, 1, 1, 1])];
    const R = 0.7;
    const rewards = placeTerminalReward([R], mask);
    const V = [0.9, 0.1, 0.2, 0.3, 0.4, 0.5, -0.6, 0.7];
    const { advantages, returns } = gae(rewards, [f32(V)], mask, 1, 1);
    for (let t = 0; t < V.length; t++) {
      if (mask[0][t] === 1) {
        expect(advantages[0][t]).toBeCloseTo(R - V[t], 6);
        expect(returns[0][t]).toBeCloseTo(R, 6);
      } else {
        expect(advantages[0][t]).toBe(0);
        expect(returns[0][t]).toBe(0);
      }
    }
  });

  it('matches a hand computation with gamma = 0.9, lambda = 0.95 on three tokens', () => {
    // r = [0, 0, 1], V = [0.5, 0.4, 0.3], all loss tokens; gamma * lambda = 0.855.
    // t=2: delta = 1 + 0.9*0 - 0.3 = 0.7;           A2 = 0.7
    // t=1: delta = 0 + 0.9*0.3 - 0.4 = -0.13;       A1 = -0.13 + 0.855*0.7 = 0.4685
    // t=0: delta = 0 + 0.9*0.4 - 0.5 = -0.14;       A0 = -0.14 + 0.855*0.4685 = 0.2605675
    // returns = A + V = [0.7605675, 0.8685, 1.0]
    const { advantages, returns } = gae([f32([0, 0, 1])], [f32([0.5, 0.4, 0.3])], [f32([1, 1, 1])], 0.9, 0.95);
    close(advantages[0], [0.2605675, 0.4685, 0.7]);
    close(returns[0], [0.7605675, 0.8685, 1.0]);
  });

  it('ignores whatever rewards and values sit on masked positions', () => {
    const mask = [f32([0, 1, 1, 0, 1]), f32([1, 1, 0, 0, 0])];
    const rewardsClean = [f32([0, 0, 0, 0, 2]), f32([0, -1, 0, 0, 0])];
    const valuesClean = [f32([0, 0.3, 0.2, 0, 0.1]), f32([0.5, 0.4, 0, 0, 0])];
    const rewardsGarbage = [f32([7, 0, 0, -3, 2]), f32([0, -1, 5, 9, -8])];
    const valuesGarbage = [f32([100, 0.3, 0.2, -42, 0.1]), f32([0.5, 0.4, 13, 1e6, -2])];
    const a = gae(rewardsClean, valuesClean, mask, 0.95, 0.9);
    const b = gae(rewardsGarbage, valuesGarbage, mask, 0.95, 0.9);
    expect(Array.from(b.advantages[0])).toEqual(Array.from(a.advantages[0]));
    expect(Array.from(b.advantages[1])).toEqual(Array.from(a.advantages[1]));
    expect(Array.from(b.returns[1])).toEqual(Array.from(a.returns[1]));
  });

  it('rejects mismatched shapes, a non-binary mask and bad gamma', () => {
    expect(() => gae([f32([0, 1])], [f32([0])], [f32([1, 1])], 1, 1)).toThrow(/values row 0 has length 1/);
    expect(() => gae([f32([0])], [f32([0])], [f32([0.5])], 1, 1)).toThrow(/only 0 or 1/);
    expect(() => gae([f32([0])], [f32([0])], [f32([1])], 1.5, 1)).toThrow(/gamma/);
    expect(() => gae([f32([NaN])], [f32([0])], [f32([1])], 1, 1)).toThrow(/reward at row 0 position 0 is NaN/);
  });
});

describe('whiten', () => {
  it('subtracts the masked batch mean and divides by the unbiased masked std (+1e-8)', () => {
    // Loss tokens hold 1, 2 (row 0) and 3, 4 (row 1): mean 2.5; squared deviations 2.25+0.25+0.25+2.25 = 5;
    // unbiased variance 5/3.
    const values = [f32([1, 99, 2]), f32([-50, 3, 4])];
    const mask = [f32([1, 0, 1]), f32([0, 1, 1])];
    const out = whiten(values, mask);
    const s = Math.sqrt(5 / 3 + 1e-8);
    close(out[0], [(1 - 2.5) / s, 0, (2 - 2.5) / s]);
    close(out[1], [0, (3 - 2.5) / s, (4 - 2.5) / s]);
  });

  it('needs at least two loss tokens', () => {
    expect(() => whiten([f32([1, 2])], [f32([0, 1])])).toThrow(/covers 1 token/);
  });
});

describe('placeTerminalReward', () => {
  it('puts the reward on the last loss token only', () => {
    const mask = [f32([0, 1, 1, 0, 1, 1, 0]), f32([1, 0, 0, 0, 0, 0, 0])];
    expect(lastLossToken(mask[0])).toBe(5);
    const rows = placeTerminalReward([1.5, -0.1], mask);
    expect(Array.from(rows[0])).toEqual([0, 0, 0, 0, 0, 1.5, 0]);
    expect(rows[1][0]).toBeCloseTo(-0.1, 7);
    expect(Array.from(rows[1]).slice(1)).toEqual([0, 0, 0, 0, 0, 0]);
  });

  it('refuses a trajectory with no loss token', () => {
    expect(() => placeTerminalReward([1], [f32([0, 0])])).toThrow(/trajectory 0 has no loss token/);
  });
});

describe('broadcastOverLossTokens', () => {
  it('copies each scalar onto its loss tokens and 0 elsewhere', () => {
    const rows = broadcastOverLossTokens([2, -1], [f32([0, 1, 1]), f32([1, 0, 1])]);
    expect(Array.from(rows[0])).toEqual([0, 2, 2]);
    expect(Array.from(rows[1])).toEqual([-1, 0, -1]);
  });

  it('with length weighting divides by length relative to the batch mean length', () => {
    // Lengths 1 and 3, mean 2: weights 1/(1/2) = 2 and 1/(3/2) = 2/3.
    const rows = broadcastOverLossTokens([1, 1], [f32([1, 0, 0]), f32([1, 1, 1])], true);
    close(rows[0], [2, 0, 0]);
    close(rows[1], [2 / 3, 2 / 3, 2 / 3]);
  });
});

describe('grpoNormalize', () => {
  it('mean_std gives zeros for a zero-std group and +-1/sqrt(2) for a two-member group', () => {
    // Group a: [1, 3] -> mean 2, unbiased std sqrt((1 + 1) / 1) = sqrt(2). Group b: [5, 5, 5] -> std 0 -> zeros.
    const out = grpoNormalize([1, 5, 3, 5, 5], ['a', 'b', 'a', 'b', 'b'], 'mean_std');
    const z = 1 / (Math.SQRT2 + 1e-6);
    expect(out[0]).toBeCloseTo(-z, 9);
    expect(out[2]).toBeCloseTo(z, 9);
    expect([out[1], out[3], out[4]]).toEqual([0, 0, 0]);
  });

  it('asym_clip clamps to [-1, 3]', () => {
    // 16 zeros and one 1: mean 1/17, unbiased variance (16/289 + 256/289)/16 = 1/17, std = 1/sqrt(17).
    // z(1) = (16/17) * sqrt(17) = 3.88 -> 3; z(0) = -(1/17) * sqrt(17) = -0.2425 (unclipped).
    const scores = [...Array(16).fill(0), 1];
    const out = grpoNormalize(
      scores,
      scores.map(() => 0),
      'asym_clip',
    );
    expect(out[16]).toBe(3);
    expect(out[0]).toBeCloseTo(-1 / Math.sqrt(17), 5);
    // Mirror: sixteen 1s and one 0 -> z(0) = -3.88 -> -1.
    const mirror = grpoNormalize(
      scores.map((s) => 1 - s),
      scores.map(() => 0),
      'asym_clip',
    );
    expect(mirror[16]).toBe(-1);
  });

  it("'mean' subtracts the group mean; 'identity' changes nothing", () => {
    expect(grpoNormalize([1, 2, 10, 20], [0, 0, 1, 1], 'mean')).toEqual([-0.5, 0.5, -5, 5]);
    expect(grpoNormalize([1, 2, 10, 20], [0, 0, 1, 1], 'identity')).toEqual([1, 2, 10, 20]);
  });

  it('is skipped when every sample is its own group; a lone member of a group among others gets 0', () => {
    expect(grpoNormalize([1, 2, 3], [0, 1, 2], 'mean_std')).toEqual([1, 2, 3]);
    const out = grpoNormalize([4, 1, 3], ['solo', 'pair', 'pair'], 'mean_std');
    expect(out[0]).toBe(0);
  });

  it('rejects bad input with a clear error', () => {
    expect(() => grpoNormalize([1, 2], [0], 'mean_std')).toThrow(/2 scores but 1 group ids/);
    expect(() => grpoNormalize([1], [0], 'zscore' as never)).toThrow(/unknown method 'zscore'/);
  });
});

describe('step-level advantages (GiGPO anchor-state groups)', () => {
  it('returns-to-go discount later turn rewards', () => {
    close(returnsToGo([0, 0, 1], 0.5), [0.25, 0.5, 1]);
    close(returnsToGo([0.2, -0.1], 1), [0.1, -0.1]);
    expect(() => returnsToGo([0], 1.5)).toThrow(/gamma must be in \[0, 1\]/);
  });

  it('compares each turn only with turns from the same state of the same env group', () => {
    const turns = [
      { groupId: 0, state: 'A', returnToGo: 1 },
      { groupId: 0, state: 'A', returnToGo: 0 },
      { groupId: 0, state: 'B', returnToGo: 0.5 }, // alone in its anchor group: no advantage
      { groupId: 1, state: 'A', returnToGo: 0.9 }, // same text, other env group: another anchor group
      { groupId: 1, state: 'A', returnToGo: 0.3 },
      { groupId: 1, state: 'A', returnToGo: 0.3 },
    ];
    const mean = stepLevelAdvantages(turns, 'mean');
    close(mean.advantages, [0.5, -0.5, 0, 0.4, -0.2, -0.2]);
    expect(mean.sharedShare).toBeCloseTo(5 / 6, 10);
    const z = stepLevelAdvantages(turns, 'mean_std').advantages;
    expect(z[0]).toBeCloseTo(1 / Math.SQRT2, 4); // (1 - 0.5) / std([1, 0]) with the unbiased std
    expect(z[2]).toBe(0);
    expect(z[3]).toBeGreaterThan(0);
  });

  it('gives every turn 0 when no state is shared (not the raw returns)', () => {
    const r = stepLevelAdvantages(
      [
        { groupId: 0, state: 'A', returnToGo: 1 },
        { groupId: 0, state: 'B', returnToGo: 0 },
      ],
      'mean_std',
    );
    expect(r.advantages).toEqual([0, 0]);
    expect(r.sharedShare).toBe(0);
  });
});
