import { describe, expect, it } from 'vitest';
import { Rng, checkSeed, fnv1a32, reseed } from '../../../envs/random';

describe('fnv1a32', () => {
  it('matches the published FNV-1a 32-bit test vectors', () => {
    // From the FNV reference test suite (isthe.com/chongo/tech/comp/fnv).
    expect(fnv1a32('')).toBe(0x811c9dc5);
    expect(fnv1a32('a')).toBe(0xe40c292c);
    expect(fnv1a32('foobar')).toBe(0xbf9cf968);
  });

  it('hashes UTF-8 bytes (checked against tests/unit/envs/rng_reference.py)', () => {
    expect(fnv1a32('√')).toBe(530583799);
    expect(fnv1a32('sokoban')).toBe(498559474);
  });

  it('reseed is the hash of the decimal seed, stable across calls', () => {
    expect(reseed(123)).toBe(1916298011);
    expect(reseed(123)).toBe(reseed(123));
    expect(reseed(124)).not.toBe(reseed(123));
  });
});

describe('Rng', () => {
  const firstFive = (rng: Rng) => Array.from({ length: 5 }, () => rng.nextUint32());

  it('produces the same numbers as an independent Python implementation', () => {
    // Expected values printed by `python3 tests/unit/envs/rng_reference.py` (explicit 32-bit masking in Python).
    expect(firstFive(Rng.fromSeed(0))).toEqual([3519874125, 2258791714, 2442843916, 4132308464, 2239536728]);
    expect(firstFive(Rng.fromSeed(42, 'sokoban'))).toEqual([1593885015, 2191711815, 1541481844, 855983185, 476757812]);
    expect(firstFive(Rng.fromSeed(-5, 'frozenlake/slip'))).toEqual([
      1106085018, 1684836142, 1329569617, 1609786948, 132643259,
    ]);
    expect(firstFive(Rng.fromSeed(2 ** 40 + 3, 'bandit'))).toEqual([
      2896063960, 3726649074, 1143868458, 1632310851, 964978975,
    ]);
  });

  it('same (seed, stream) gives the same sequence; other seeds or streams differ', () => {
    expect(firstFive(Rng.fromSeed(7, 'x'))).toEqual(firstFive(Rng.fromSeed(7, 'x')));
    expect(firstFive(Rng.fromSeed(7, 'x'))).not.toEqual(firstFive(Rng.fromSeed(8, 'x')));
    expect(firstFive(Rng.fromSeed(7, 'x'))).not.toEqual(firstFive(Rng.fromSeed(7, 'y')));
    // Seeds that agree in their low 32 bits stay distinct.
    expect(firstFive(Rng.fromSeed(1))).not.toEqual(firstFive(Rng.fromSeed(1 + 2 ** 32)));
  });

  it('rejects seeds that are not safe integers', () => {
    expect(() => checkSeed(1.5)).toThrow(/seed must be a safe integer/);
    expect(() => Rng.fromSeed(Number.NaN)).toThrow(/seed/);
    expect(() => Rng.fromSeed(2 ** 60)).toThrow(/seed/);
  });

  it('float is uniform on [0, 1)', () => {
    const rng = Rng.fromSeed(1);
    const n = 100_000;
    const bins = new Array(10).fill(0);
    let sum = 0;
    let outside = 0;
    for (let i = 0; i < n; i++) {
      const u = rng.float();
      if (!(u >= 0 && u < 1)) outside++;
      sum += u;
      bins[Math.floor(u * 10)]++;
    }
    expect(outside).toBe(0);
    // Mean: s.d. of the mean is sqrt(1/12 / n) ≈ 0.0009; allow 5 s.d.
    expect(Math.abs(sum / n - 0.5)).toBeLessThan(0.0046);
    // Each decile: binomial s.d. sqrt(n * 0.1 * 0.9) ≈ 95; allow 5 s.d.
    for (const count of bins) expect(Math.abs(count - n / 10)).toBeLessThan(475);
  });

  it('int, intBetween and choice cover their ranges uniformly', () => {
    const rng = Rng.fromSeed(2);
    const n = 60_000;
    const counts = new Array(6).fill(0);
    for (let i = 0; i < n; i++) counts[rng.int(6)]++;
    // s.d. sqrt(n * 1/6 * 5/6) ≈ 91; allow 5 s.d.
    for (const count of counts) expect(Math.abs(count - n / 6)).toBeLessThan(460);

    const seen = new Set<number>();
    for (let i = 0; i < 1000; i++) seen.add(rng.intBetween(1, 4));
    expect([...seen].sort()).toEqual([1, 2, 3, 4]);

    const letters = new Set<string>();
    for (let i = 0; i < 1000; i++) letters.add(rng.choice(['a', 'b', 'c']));
    expect(letters.size).toBe(3);
  });

  it('shuffle returns a permutation, each element uniformly placed', () => {
    const rng = Rng.fromSeed(3);
    const firstSlot = new Array(4).fill(0);
    const n = 20_000;
    for (let i = 0; i < n; i++) {
      const out = rng.shuffle([0, 1, 2, 3]);
      expect([...out].sort()).toEqual([0, 1, 2, 3]);
      firstSlot[out[0]]++;
    }
    // s.d. sqrt(n * 1/4 * 3/4) ≈ 61; allow 5 s.d.
    for (const count of firstSlot) expect(Math.abs(count - n / 4)).toBeLessThan(310);
  });

  it('bad arguments throw errors that say what was expected', () => {
    const rng = Rng.fromSeed(4);
    expect(() => rng.int(0)).toThrow(/integer n/);
    expect(() => rng.int(2.5)).toThrow(/integer n/);
    expect(() => rng.intBetween(3, 1)).toThrow(/lo <= hi/);
    expect(() => rng.choice([])).toThrow(/empty/);
  });
});
