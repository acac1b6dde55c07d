// The policy's learning-rate warm-up follows veRL's schedule (Hugging Face's constant-with-warm-up rule, stepped once
// per training step after the update): the numbers below are what that rule gives.
import { describe, expect, it } from 'vitest';
import { warmupLrFactor } from '../../../src/starpo/lrSchedule';

describe('warmupLrFactor', () => {
  it('is 1 at every step without a warm-up, and when the ratio rounds down to no warm-up step', () => {
    for (const step of [1, 2, 50]) expect(warmupLrFactor(step, 0, 100)).toBe(1);
    expect(warmupLrFactor(1, 0.05, 10)).toBe(1); // floor(0.5) = 0 warm-up steps
  });

  it('rises linearly from 0 at step 1 over floor(ratio x total steps) steps, then stays at 1', () => {
    // 10 warm-up steps: step k trains at (k - 1) / 10 of the rate.
    expect([1, 2, 6, 10, 11, 12, 100].map((s) => warmupLrFactor(s, 0.1, 100))).toEqual([0, 0.1, 0.5, 0.9, 1, 1, 1]);
    expect([1, 2, 3, 4].map((s) => warmupLrFactor(s, 0.5, 4))).toEqual([0, 0.5, 1, 1]);
    expect(warmupLrFactor(2, 0.25, 10)).toBe(0.5); // floor(2.5) = 2 warm-up steps
  });
});
