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
