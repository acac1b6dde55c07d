// A micro-batch's shared prompt prefix run through the layers once (Qwen2Model.sharePrefix): the prefix length
// padBatch finds, and the full batch's hidden states, log-probs, values and gradients on cpu (the reference) and wasm
// (the fused kernels), with rows of different lengths (shared-prefix-suite.ts; webgpu: shared-prefix-webgpu.test.ts).
import { describe, expect, it } from 'vitest';
import { padBatch, sharedPrefixLength } from '../../../src/starpo/batch';
import { defineSharedPrefixSuite, PREFIX, SEQS as seqs } from './shared-prefix-suite';

describe('sharedPrefixLength', () => {
  it('is the longest common token prefix, below the shortest row, and 0 for one row', () => {
    expect(sharedPrefixLength(seqs)).toBe(PREFIX.length);
    expect(sharedPrefixLength(seqs.slice(0, 1))).toBe(0);
    expect(sharedPrefixLength([seqs[0], seqs[2]])).toBe(PREFIX.length + 2); // both go on with 8, 14
    const same = { ids: [1, 2, 3], lossMask: new Uint8Array(2) };
    expect(sharedPrefixLength([same, same])).toBe(2); // at least one token of each row stays its own
    expect(sharedPrefixLength([same, { ids: [4, 2, 3], lossMask: new Uint8Array(2) }])).toBe(0);
    expect(padBatch(seqs, 0).sharedPrefix).toBe(PREFIX.length);
  });
});

defineSharedPrefixSuite('cpu');
defineSharedPrefixSuite('wasm');
