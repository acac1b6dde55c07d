// Seeded randomness for the environments: the same seed gives the same numbers on every platform (browser, Node,
// any CPU), because everything below is 32-bit integer math (Math.imul, >>>) and never Math.random.
//
// Generator: sfc32 (Chris Doty-Humphrey's "small fast chaotic" PRNG, 128-bit state, passes PractRand), seeded by a
// splitmix32-style mixer. RAGEN seeds Python's `random` and NumPy's global RNG with the env seed; we cannot
// reproduce those streams, so parity with RAGEN is of rules and distributions, not of seeds (spec §10.16).
//
// Streams: `Rng.fromSeed(seed, 'frozenlake/slip')` and `Rng.fromSeed(seed, 'frozenlake/map')` are independent
// generators derived from the same seed, so one seed can drive several uncorrelated sources of randomness.

const UTF8 = new TextEncoder();

/**
 * 32-bit FNV-1a over the UTF-8 bytes of `text` (offset basis 0x811c9dc5, prime 0x01000193), as an unsigned
 * integer. Stable across processes and platforms, unlike Python's salted `hash(str)`.
 */
export function fnv1a32(text: string): number {
  let hash = 0x811c9dc5;
  for (const byte of UTF8.encode(text)) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/**
 * RAGEN's "generation failed: try again with a re-hashed seed" rule (spec §2.0, §10.11). RAGEN computes
 * |hash(str(seed))| mod 2^32 with Python's per-process salted hash; we use FNV-1a of the same decimal string so
 * the retried level is identical in every process.
 */
export function reseed(seed: number): number {
  return fnv1a32(String(seed));
}

/** Throws unless `seed` is an integer that a double represents exactly. */
export function checkSeed(seed: number): void {
  if (!Number.isSafeInteger(seed)) {
    throw new Error(`seed must be a safe integer, got ${String(seed)}`);
  }
}

/** A splitmix32-style finaliser: a bijection on 32-bit integers that spreads every input bit over the output. */
function mix32(x: number): number {
  let z = (x + 0x9e3779b9) | 0;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
  return (z ^ (z >>> 16)) >>> 0;
}

export class Rng {
  // sfc32 state words (kept as signed 32-bit ints; only their bits matter).
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  /** Prefer `Rng.fromSeed`; this takes the four raw state words. */
  constructor(a: number, b: number, c: number, d: number) {
    this.a = a | 0;
    this.b = b | 0;
    this.c = c | 0;
    this.d = d | 0;
    // The first outputs of a freshly seeded sfc32 are weakly mixed: discard a few.
    for (let i = 0; i < 12; i++) this.nextUint32();
  }

  /**
   * A generator for `seed` (any safe integer, negative included) and a named stream. Different streams of the
   * same seed are independent; the same (seed, stream) pair always gives the same sequence.
   */
  static fromSeed(seed: number, stream = ''): Rng {
    checkSeed(seed);
    const low = seed >>> 0; // low 32 bits (two's complement for negatives)
    const high = Math.floor(seed / 0x1_0000_0000) | 0; // the rest, so seeds beyond 2^32 stay distinct
    const s = fnv1a32(stream);
    const w0 = mix32(low ^ mix32(s));
    const w1 = mix32(high ^ mix32(w0));
    const w2 = mix32(s ^ mix32(w1));
    return new Rng(w0, w1, w2, 1);
  }

  /** Uniform integer in [0, 2^32). */
  nextUint32(): number {
    const t0 = (this.a + this.b) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.d = (this.d + 1) | 0;
    const t = (t0 + this.d) | 0;
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  /** Uniform float in [0, 1) with 32 random bits. */
  float(): number {
    return this.nextUint32() / 0x1_0000_0000;
  }

  /** Uniform integer in [0, n). The bias of floor(u·n) is below n / 2^32: irrelevant for board-sized n. */
  int(n: number): number {
    if (!Number.isInteger(n) || n <= 0 || n > 0x1_0000_0000) {
      throw new Error(`Rng.int(n) needs an integer n in [1, 2^32], got ${n}`);
    }
    return Math.floor(this.float() * n);
  }

  /** Uniform integer in [lo, hi], both ends included (Python's random.randint). */
  intBetween(lo: number, hi: number): number {
    if (!Number.isInteger(lo) || !Number.isInteger(hi) || hi < lo) {
      throw new Error(`Rng.intBetween(lo, hi) needs integers with lo <= hi, got ${lo}, ${hi}`);
    }
    return lo + this.int(hi - lo + 1);
  }

  /** One element, uniformly. */
  choice<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('Rng.choice: cannot choose from an empty list');
    return items[this.int(items.length)];
  }

  /** Fisher–Yates shuffle in place; returns the same array. */
  shuffle<T>(items: T[]): T[] {
    for (let i = items.length - 1; i > 0; i--) {
      const j = this.int(i + 1);
      const tmp = items[i];
      items[i] = items[j];
      items[j] = tmp;
    }
    return items;
  }
}
