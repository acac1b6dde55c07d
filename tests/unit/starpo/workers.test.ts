// The one rule the CLI (`ragen train --workers`) and the playground (URL `workers`) use to decide on a helper core.
import { describe, expect, it } from 'vitest';
import { helpersFor, parseWorkersChoice } from '../../../src/starpo/workers';

const tinyWasm = { cores: 2, backend: 'wasm', pretrained: false };

describe('helpersFor', () => {
  it('gives what was asked for when asked', () => {
    expect(helpersFor(1, tinyWasm)).toBe(0);
    expect(helpersFor(2, { ...tinyWasm, cores: 1, backend: 'webgpu' })).toBe(1);
  });

  it('auto: a helper for a tiny model on a CPU backend when every run gets a second core', () => {
    expect(helpersFor('auto', tinyWasm)).toBe(1);
    expect(helpersFor('auto', { ...tinyWasm, backend: 'cpu' })).toBe(1);
    expect(helpersFor('auto', { ...tinyWasm, cores: 1 })).toBe(0);
    expect(helpersFor('auto', { ...tinyWasm, backend: 'webgpu' })).toBe(0);
    expect(helpersFor('auto', { ...tinyWasm, pretrained: true })).toBe(0);
    // Classroom mode: two runs side by side already fill 2 cores; 4 cores give each its helper.
    expect(helpersFor('auto', { ...tinyWasm, runs: 2 })).toBe(0);
    expect(helpersFor('auto', { ...tinyWasm, cores: 4, runs: 2 })).toBe(1);
  });
});

describe('parseWorkersChoice', () => {
  it('accepts 1, 2 and auto only', () => {
    expect(['1', '2', 'auto', '3', '', ' 2', 'two'].map(parseWorkersChoice)).toEqual([
      1,
      2,
      'auto',
      null,
      null,
      null,
      null,
    ]);
  });
});
