import { describe, expect, it } from 'vitest';
import { benchEnvs } from '../../../src/bench/envs';

describe('benchEnvs', () => {
  it('measures every env operation and returns positive rates', async () => {
    const started = performance.now();
    const results = await benchEnvs({ seconds: 0.05 });
    expect(Object.keys(results).sort()).toEqual(
      [
        'Bandit episodes/s',
        'FrozenLake resets/s',
        'FrozenLake steps/s',
        'LargerSokoban levels/s',
        'SimpleSokoban levels/s',
        'Sokoban steps/s',
        'SokobanDifferentGridVocab levels/s',
      ].sort(),
    );
    for (const value of Object.values(results)) {
      expect(Number.isFinite(value)).toBe(true);
      expect(value).toBeGreaterThan(0);
    }
    // 7 measurements of 0.05 s each, plus setup: far below a second of wall time per measurement.
    expect(performance.now() - started).toBeLessThan(7 * 1000);
  });

  it('rejects a non-positive duration', async () => {
    await expect(benchEnvs({ seconds: 0 })).rejects.toThrow(/seconds must be > 0/);
  });
});
