// The runs the experiments share. Names are directory names under runs/experiments: the same name is the same run,
// trained once and reused by every experiment that lists it.
//
// Step budgets: a few `ragen train` runs per experiment must fit in about 30 minutes on a 2-core CPU with wasm
// (measured here, one run per core: bandit-tiny StarPO-S ~4 s/step, frozenlake-tiny ~9 s/step, sokoban-tiny ~23
// s/step; vanilla StarPO trains on 4x the trajectories and keeps a reference model, ~2.5-3x slower). So Bandit gets
// 40 steps, FrozenLake 30 and Sokoban 10, against the paper's 200. The tiny presets' other departures from RAGEN
// (8 groups x 4 rollouts, 64 new tokens per turn, a ~100k-parameter warm-started model, lr 1e-4) are in
// src/starpo/presets.ts.
import type { RunSpec } from './runs';

export type Env = 'bandit' | 'frozenlake' | 'sokoban';
export const ENVS: Env[] = ['bandit', 'frozenlake', 'sokoban'];
export const ENV_LABEL: Record<Env, string> = { bandit: 'Bandit', frozenlake: 'FrozenLake', sokoban: 'Sokoban' };
export const PRESET: Record<Env, string> = { bandit: 'bandit-tiny', frozenlake: 'frozenlake-tiny', sokoban: 'sokoban-tiny' };
export const STEPS: Record<Env, number> = { bandit: 40, frozenlake: 30, sokoban: 10 };

/** Vanilla StarPO as the paper ran it (and as the echo-trap preset's 'starpo' arm): no filter, KL 0.001 (k1) in the
 *  reward, symmetric clip 0.2. */
export const VANILLA = ['filter.ratio=1', 'algorithm.useKlInReward=true', 'algorithm.klCoef=0.001', 'algorithm.klEstimator=kl', 'actor.clipRatioHigh=0.2'];
/** GRPO instead of PPO: group mean/std normalisation as the advantage, no critic. */
export const GRPO = ['algorithm.advEstimator=grpo', 'algorithm.rewardNormalization.method=mean_std'];

export function vanilla(env: Env, algo: 'ppo' | 'grpo'): RunSpec {
  return {
    name: `${env}-${algo}-vanilla`, label: `${ENV_LABEL[env]} ${algo.toUpperCase()} StarPO`, preset: PRESET[env],
    set: [...VANILLA, ...(algo === 'grpo' ? GRPO : [])], steps: STEPS[env],
  };
}

/** StarPO-S: the tiny presets as they are (filter 25 %, no KL, clip 0.2 / 0.28, PPO). */
export function starpoS(env: Env): RunSpec {
  return { name: `${env}-ppo-starpo-s`, label: `${ENV_LABEL[env]} StarPO-S`, preset: PRESET[env], set: [], steps: STEPS[env] };
}
