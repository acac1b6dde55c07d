// The one seeded pseudo-random generator of src/model and the workers (mulberry32): token sampling, fresh weights
// and the backend self-check draw from it, so the same seed gives the same numbers on every platform and nothing
// depends on Math.random. (envs/random.ts keeps its own generator: environments must not import src/.)

/** Uniform numbers in [0, 1) from a 32-bit seed (mulberry32). */
export function seededUniform(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Standard normal samples from the same generator (Box-Muller, two uniforms per sample). */
export function seededNormal(seed: number): () => number {
  const uniform = seededUniform(seed);
  return () => Math.sqrt(-2 * Math.log(1 - uniform())) * Math.cos(2 * Math.PI * uniform());
}

/** A 32-bit mix of integers (sampling seeds per run, split, step and call that do not collide). */
export function mixSeed(...parts: number[]): number {
  let h = 0x811c9dc5;
  for (const p of parts) {
    h = Math.imul(h ^ (p >>> 0), 0x01000193) >>> 0;
    h = Math.imul(h ^ (h >>> 15), 0x2c1b3c6d) >>> 0;
  }
  return h >>> 0;
}

/**
 * Writes std x normal samples into `out`, the same numbers as drawing them one by one, but from any point of the
 * stream: mulberry32's state after n draws is seed + n x 0x6d2b79f5, so uniform number n needs no earlier one. That
 * lets Node fill one tensor in parallel chunks (src/model/parallelNormal.ts) with the numbers of one sequential loop.
 *
 * `firstUniform` is how many uniforms of seededUniform(seed) come before out[0]'s. `bothHalves` picks the layout:
 * - false: each sample takes two uniforms and keeps Box-Muller's cosine half, as seededNormal (initQwen2Weights);
 * - true: each pair of samples takes two uniforms, cosine then sine half (`ragen init-model`, twice as fast); then
 *   firstUniform must start a pair, and an odd-length `out` drops the last pair's sine half.
 *
 * Self-contained on purpose (no closures, no imports): parallelNormal.ts runs its source text in worker threads.
 */
export function fillSeededNormal(
  out: Float32Array,
  seed: number,
  firstUniform: number,
  std: number,
  bothHalves: boolean,
): void {
  const step = 0x6d2b79f5;
  let state = ((seed >>> 0) + Math.imul(firstUniform % 4294967296, step)) >>> 0;
  const n = out.length;
  for (let j = 0; j < n; j += bothHalves ? 2 : 1) {
    state = (state + step) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    const u1 = ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    state = (state + step) >>> 0;
    t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    const u2 = ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    const r = Math.sqrt(-2 * Math.log(1 - u1));
    const theta = 2 * Math.PI * u2;
    if (bothHalves) {
      out[j] = std * r * Math.cos(theta);
      if (j + 1 < n) out[j + 1] = std * r * Math.sin(theta);
    } else {
      out[j] = std * (r * Math.cos(theta));
    }
  }
}
