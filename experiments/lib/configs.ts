// The runs the experiments share. Names are directory names under runs/experiments: the same name is the same run,
// trained once and reused by every experiment that lists it.
//
// Step budgets: a few `ragen train` runs per experiment must fit in about 30 minutes on a 2-core CPU with wasm
// (measured here, one run per core: bandit-tiny StarPO-S ~4-6 s/step, frozenlake-tiny ~9-11 s/step, sokoban-tiny
// ~15-23 s/step; vanilla StarPO trains on 4x the trajectories and keeps a reference model, ~2.5x slower; the table
// STARPO_S_SECONDS below turns this into the estimate each script prints when it starts). So Bandit gets
// 40 steps, FrozenLake 30 and Sokoban 10, against the paper's 200. The tiny presets' other departures from RAGEN
// (8 groups x 4 rollouts, 64 new tokens per turn, a ~100k-parameter warm-started model, lr 1e-4) are in
// src/starpo/presets.ts.
import { configAsOverrides, VANILLA_STARPO } from '../../src/starpo/variants';
import type { RunSpec } from './runs';

export type Env = 'bandit' | 'frozenlake' | 'sokoban';
export const ENVS: Env[] = ['bandit', 'frozenlake', 'sokoban'];
export const ENV_LABEL: Record<Env, string> = { bandit: 'Bandit', frozenlake: 'FrozenLake', sokoban: 'Sokoban' };
export const PRESET: Record<Env, string> = {
  bandit: 'bandit-tiny',
  frozenlake: 'frozenlake-tiny',
  sokoban: 'sokoban-tiny',
};
export const STEPS: Record<Env, number> = { bandit: 40, frozenlake: 30, sokoban: 10 };

/**
 * Seconds per training step of StarPO-S (filter 25 %, PPO) on one quiet core of the 2-core development machine
 * (wasm), validation included on average; the brief measurements and the echo-trap record agree within ~20 %.
 * Used only for the estimate a script prints before it starts.
 */
export const STARPO_S_SECONDS: Record<Env, number> = { bandit: 6, frozenlake: 10, sokoban: 18 };

/**
 * Estimated core-seconds per step of a run: the StarPO-S cost of its env, scaled by the trajectories it trains on
 * (keep ratio r: +1.4x of the StarPO-S cost going from 25 % to 100 %: the echo-trap arms took 26 and 11 s/step side
 * by side) and 0.7x for GRPO (no critic; 01's Bandit and FrozenLake runs).
 */
export function estimateStepSeconds(spec: RunSpec): number {
  const env: Env =
    spec.preset.startsWith('bandit') || spec.preset === 'echo-trap'
      ? 'bandit'
      : spec.preset.startsWith('sokoban')
        ? 'sokoban'
        : 'frozenlake';
  const setting = (key: string) =>
    spec.set
      .filter((s) => s.startsWith(`${key}=`))
      .pop()
      ?.slice(key.length + 1);
  const ratio = Number(setting('filter.ratio') ?? (spec.arm === 'starpo' ? 1 : 0.25));
  const grpo = setting('algorithm.advEstimator') === 'grpo';
  return STARPO_S_SECONDS[env] * (1 + (1.4 * (ratio - 0.25)) / 0.75) * (grpo ? 0.7 : 1);
}

/** Core-minutes of a set of runs, and the wall minutes of running them `jobs` at a time in this order. */
export function estimateMinutes(specs: readonly RunSpec[], jobs: number): { coreMinutes: number; wallMinutes: number } {
  const loads = new Array<number>(Math.max(1, jobs)).fill(0);
  let core = 0;
  for (const spec of specs) {
    const sec = estimateStepSeconds(spec) * spec.steps;
    core += sec;
    loads[loads.indexOf(Math.min(...loads))] += sec; // the pool hands the next run to the first free worker
  }
  return { coreMinutes: core / 60, wallMinutes: Math.max(...loads) / 60 };
}

/** Vanilla StarPO as the paper ran it (and as the echo-trap preset's 'starpo' arm), as `--set` overrides: no filter,
 *  KL 0.001 (k1) in the reward, symmetric clip 0.2 (src/starpo/variants.ts). */
export const VANILLA = configAsOverrides(VANILLA_STARPO);
/** GRPO instead of PPO: group mean/std normalisation as the advantage, no critic. */
export const GRPO = ['algorithm.advEstimator=grpo', 'algorithm.rewardNormalization.method=mean_std'];

export function vanilla(env: Env, algo: 'ppo' | 'grpo'): RunSpec {
  return {
    name: `${env}-${algo}-vanilla`,
    label: `${ENV_LABEL[env]} ${algo.toUpperCase()} StarPO`,
    preset: PRESET[env],
    set: [...VANILLA, ...(algo === 'grpo' ? GRPO : [])],
    steps: STEPS[env],
  };
}

/** StarPO-S: the tiny presets as they are (filter 25 %, no KL, clip 0.2 / 0.28, PPO). */
export function starpoS(env: Env): RunSpec {
  return {
    name: `${env}-ppo-starpo-s`,
    label: `${ENV_LABEL[env]} StarPO-S`,
    preset: PRESET[env],
    set: [],
    steps: STEPS[env],
  };
}
