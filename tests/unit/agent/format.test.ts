import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { formatCompactReward, formatPythonFloat, formatRagenReward } from '../../../src/agent/format';

describe('formatPythonFloat', () => {
  it("matches Python's str(float) on hand-picked cases", () => {
    const cases: [number, string][] = [
      [1, '1.0'],
      [0, '0.0'],
      [-0, '-0.0'],
      [-0.1, '-0.1'],
      [10.9, '10.9'],
      [0.1 + 0.2, '0.30000000000000004'],
      [1e16, '1e+16'],
      [1e15, '1000000000000000.0'],
      [1e-5, '1e-05'],
      [0.0001, '0.0001'],
      [-1.5e-7, '-1.5e-07'],
      [123456789012345680, '1.2345678901234568e+17'],
      [NaN, 'nan'],
      [Infinity, 'inf'],
      [-Infinity, '-inf'],
    ];
    for (const [x, text] of cases) expect(formatPythonFloat(x), String(x)).toBe(text);
  });

  const python = '/usr/bin/python3';
  it.skipIf(!existsSync(python))('matches Python on turn sums of Sokoban-like rewards and random magnitudes', () => {
    const values: number[] = [];
    // Turn sums built the way RAGEN builds them: 0 + r1 + r2 + ... in double precision.
    for (let n = 1; n <= 10; n++) {
      let s = 0;
      for (let i = 0; i < n; i++) s += -0.1;
      values.push(s, s + 1, s + 11, s - 1);
    }
    let seed = 12345;
    for (let i = 0; i < 60; i++) {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      values.push((seed / 2147483648 - 0.5) * 10 ** ((i % 30) - 12));
    }
    const script = 'import sys\nfor line in sys.stdin.read().split():\n    print(str(float(line)))';
    const input = values.map((v) => v.toPrecision(17)).join('\n');
    const result = spawnSync(python, ['-c', script], { input, encoding: 'utf8' });
    expect(result.status).toBe(0);
    const expected = result.stdout.trim().split('\n');
    expect(values.map(formatPythonFloat)).toEqual(expected);
  });
});

describe('reward texts', () => {
  it('prints the int 0 for a turn that executed nothing, a float otherwise', () => {
    expect(formatRagenReward(0, 0)).toBe('0');
    expect(formatRagenReward(0, 1)).toBe('0.0');
    expect(formatRagenReward(-0.1 + -0.1 + -0.1, 3)).toBe('-0.30000000000000004');
  });
  it('rounds compact rewards to two decimals', () => {
    expect(formatCompactReward(-0.1 + -0.1 + -0.1)).toBe('-0.3');
    expect(formatCompactReward(0 + -0.1 + -0.1 + 10.9)).toBe('10.7');
    expect(formatCompactReward(1)).toBe('1');
    expect(formatCompactReward(-0.001)).toBe('0');
  });
});
