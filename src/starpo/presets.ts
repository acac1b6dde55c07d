// Named run configurations: `ragen train --preset NAME` and the playground's preset menu.
//
// Each preset is a partial RunConfig laid over defaultRunConfig() (RAGEN v1's base.yaml), so a preset lists only
// how it departs from RAGEN; docs/config.md shows those departures key by key. Presets are plain TS objects (no fs)
// so the browser imports them too. A preset has one or more named arms: ordinary presets have one arm named like
// the preset; `echo-trap` has two, 'starpo' and 'starpo-s', trained on the same seeds so their curves compare.
//
// The tiny presets' learning rates and sizes are starting points for a ~100k-parameter model warm-started by
// `ragen warmstart` (checkpoint under public/warmstart/<preset>/), not values from RAGEN: RAGEN's 1e-6 is tuned
// for a 0.5B instruct model and would not move a tiny one.
import {
  ConfigError,
  didYouMean,
  mergeConfigInput,
  parseRunConfig,
  type RunConfig,
  type RunConfigInput,
} from './config';
import { VANILLA_STARPO } from './variants';

interface PresetDefinition {
  /** One line for menus and `--help`: what the preset is for. */
  summary: string;
  /** Arm name → partial config over defaultRunConfig(). */
  arms: Record<string, RunConfigInput>;
}

// --- building blocks ---------------------------------------------------------------------------------------------

/** Shared by every tiny preset: a tiny model with the compact prompt, small batches, a short run. */
const TINY: RunConfigInput = {
  model: {
    pretrained: null,
    promptStyle: 'compact',
    tiny: {
      hiddenSize: 64,
      numLayers: 2,
      numHeads: 4,
      numKvHeads: 2,
      intermediateSize: 192,
      ropeTheta: 10000,
      maxPositions: 1024,
    },
  },
  // 8 groups x 4 rollouts = 32 trajectories per step (RAGEN 128); 4 per prompt was the paper's best (Table 2).
  // Validation: 32 fixed initial states instead of 256, so a validation pass stays cheap on a CPU.
  agent: { envGroups: 8, groupSize: 4, valGroups: 32, valGroupSize: 1 },
  // Reasoning in the warm-start demonstrations is a sentence or two: 64 new tokens per turn instead of 400.
  rollout: { maxNewTokens: 64 },
  // Filter 25 % keeps 2 groups x 4 = 8 trajectories = one mini-batch, as RAGEN's 32 = 32. One micro-batch per
  // mini-batch: a tiny model fits, and it is the fastest on wasm.
  actor: { lr: 1e-4, ppoMiniBatchSize: 8, ppoMicroBatchSize: 8 },
  critic: { lr: 1e-3 },
  trainer: { totalSteps: 100, testFreq: 10, saveFreq: 50, keepCheckpoints: 2, logRollouts: 4 },
};

// --- the presets -------------------------------------------------------------------------------------------------

const BANDIT_TINY: RunConfigInput = mergeConfigInput(TINY, {
  model: { warmStart: 'warmstart/bandit-tiny' },
  // RAGEN `_1_bandit`: one turn, one action; validation on both name pairs (RAGEN 256 + 256, here 16 + 16).
  agent: {
    trainEnvs: [{ tag: 'Bandit', nGroups: 8 }],
    valEnvs: [
      { tag: 'Bandit', nGroups: 16 },
      { tag: 'BanditTest', nGroups: 16 },
    ],
    // 8 rollouts per group (not 4): in Bandit the in-group variance comes only from choosing different arms.
    groupSize: 8,
    maxTurn: 1,
    maxActionsPerTurn: 1,
  },
  rollout: { maxNewTokens: 48 },
  // 2 kept groups x 8 = 16 trajectories = one mini-batch.
  actor: { ppoMiniBatchSize: 16, ppoMicroBatchSize: 16 },
  // 100 steps: from the 400-step warm start, 50 reach 94 % held-out, 100 reach 98 % (docs/findings.md).
  trainer: { totalSteps: 100, saveFreq: 50 },
});

/** RAGEN-2's coordinate observation: the coordinate block, then the grid (envs/observation.ts). */
const GRID_COORD = { observationFormat: 'grid_coord' };

const FROZENLAKE_TINY: RunConfigInput = mergeConfigInput(TINY, {
  model: { warmStart: 'warmstart/frozenlake-tiny' },
  // RAGEN `_3_frozen_lake`: 4x4, 20 % holes, slip 1/3 (the env's v1 defaults), 5 turns, 10 actions; found by
  // experiment (docs/findings.md) to let the tiny model read the lake:
  // * RAGEN-2's grid_coord observation: "Player: (r, c)" can be copied, a position in a flattened grid cannot;
  // * each turn shows only the current state (maxContextWindow 1: the lake is Markov) and is trained as its own
  //   sample (RAGEN-2's single_turn mode): one short prompt shape in every turn, the shape the warm start learned
  //   to read.
  agent: {
    trainEnvs: [{ tag: 'FrozenLake', nGroups: 8, config: GRID_COORD }],
    valEnvs: [{ tag: 'FrozenLake', nGroups: 32, config: GRID_COORD }],
    maxContextWindow: 1,
    contextWindowMode: 'single_turn',
  },
  // 400 steps (about 5 minutes on two cores): the warm start sends one move per answer, and RL learns to send two or
  // three, 22 % -> 36 % held-out; most of it comes after step 200 (27 % there).
  trainer: { totalSteps: 400 },
});

// The same lakes without slipping (RAGEN-2's `_3_frozen_lake` config: CoordFrozenLake, success rate 1), from
// frozenlake-tiny's own warm start. That warm start imitates the slippery lake's planner, whose cautious wall-hugging
// moves waste moves when nothing slips, one move per answer; the outcome of each move then says which was better, so
// StarPO-S visibly learns within minutes. On the slippery lake RL learns to send more moves per answer but not better
// moves: the slips bury the few points between two moves (docs/findings.md). Everything else, the learning
// rate included, is frozenlake-tiny's. 300 steps: held-out success 18 % -> 70 % (two training seeds).
const NO_SLIP = { ...GRID_COORD, successRate: 1 };
const FROZENLAKE_NOSLIP_TINY: RunConfigInput = mergeConfigInput(FROZENLAKE_TINY, {
  agent: {
    trainEnvs: [{ tag: 'FrozenLake', nGroups: 8, config: NO_SLIP }],
    valEnvs: [{ tag: 'FrozenLake', nGroups: 32, config: NO_SLIP }],
  },
  trainer: { totalSteps: 300 },
});

const SOKOBAN_TINY: RunConfigInput = mergeConfigInput(TINY, {
  // Planning a push needs more capacity than Bandit or FrozenLake.
  // Its micro-batches' rows share about half their tokens (the system prompt): run through the layers once, they
  // make a step 0.9x as long (BENCHMARKS.md, "A micro-batch's shared prompt prefix runs once").
  model: {
    warmStart: 'warmstart/sokoban-tiny',
    tiny: { hiddenSize: 128, numLayers: 4, numHeads: 4, numKvHeads: 2, intermediateSize: 384 },
    sharePrefix: true,
  },
  // RAGEN's default env (6x6, one box), 10 actions per episode (98.8 % of levels are solvable in 10: spec §10.17),
  // up to 5 per turn. Found by experiment to let the tiny model read the board (docs/findings.md), as on
  // FrozenLake: RAGEN-2's grid_coord observation, each turn shows only the current state and is its own sample
  // (window 1, single_turn), and 10 turns instead of RAGEN's 5, so that the warm start can answer one move per turn
  // and look at the board after each (closed loop; 5 moves played blind is a plan a tiny model cannot hold).
  agent: {
    trainEnvs: [{ tag: 'SimpleSokoban', nGroups: 8, config: GRID_COORD }],
    valEnvs: [{ tag: 'SimpleSokoban', nGroups: 32, config: GRID_COORD }],
    maxTurn: 10,
    maxContextWindow: 1,
    contextWindowMode: 'single_turn',
  },
  // Half the tiny presets' learning rate, twice the steps (7-8 s each on two cores, 24 minutes): from the warm
  // start's 52 % held-out, 200 steps reach 84 % (82 % with training seed 1) and the reasoning stays on the board (92 %
  // of its claims true). At lr 1e-4 success stops at 78-80 % after 100 steps while the grounding falls to 65 % by
  // step 200 (docs/findings.md).
  actor: { lr: 5e-5 },
  trainer: { totalSteps: 200 },
});

// The echo trap (paper §4), as a classroom lesson: vanilla StarPO improves, then its reasoning degenerates and its
// success collapses, while StarPO-S holds. Both arms are bandit-tiny (its warm start, 8 rollouts per env group, PPO
// with a critic) with two changes that make the lesson fit class time and show on most seeds:
// * the high-risk arm (Dragon) always pays 1 (RAGEN: 1 with probability 0.25, else 0). With a lottery, a group whose
//   draw paid 0 teaches "pick Phoenix" and StarPO-S's filter sometimes keeps only such groups; without it, a group's
//   rewards disagree only while its rollouts pick different arms or break the answer format;
// * the actor learning rate is 3e-3 (bandit-tiny 1e-4), so that the collapse comes within tens of steps, not the
//   paper's ~90.
// The arms differ only in StarPO-S's ingredients: vanilla keeps every trajectory (4 optimizer steps per rollout), a KL
// term and the symmetric clip; StarPO-S uses RAGEN-2's recommended filter (top_p 0.9 of the in-group std mass, never a
// group whose rollouts all earned the same reward: the whitened advantages of such a group are noise) with a floor
// under the std (0.36: a group where only one rollout of 8 differs counts as agreeing), no KL, clip-higher. Once every
// rollout picks Dragon, vanilla keeps training on that noise and collapses; StarPO-S stops updating. The warning uses
// RAGEN-2's reward-variance signal. The filter is not RAGEN v1's top-2 groups: with that one StarPO-S breaks on 7 of 10
// fresh seeds, mostly by training on one group with a single deviant rollout. How often the lesson shows on fresh
// seeds, and the settings that fail: docs/echo-trap.md and docs/lab/echo-trap-probes.md.
const DRAGON_ALWAYS_PAYS = { hiArmHiScoreProb: 1 };
const ECHO_TRAP_BASE: RunConfigInput = mergeConfigInput(BANDIT_TINY, {
  // bandit-tiny's warm-start recipe with 150 SFT steps instead of 400 (src/warmstart/warmstart.ts): its looser tie
  // between reasoning and answer is part of how vanilla StarPO collapses on cue.
  model: { warmStart: 'warmstart/echo-trap' },
  agent: {
    trainEnvs: [{ tag: 'Bandit', nGroups: 8, config: DRAGON_ALWAYS_PAYS }],
    valEnvs: [
      { tag: 'Bandit', nGroups: 16, config: DRAGON_ALWAYS_PAYS },
      { tag: 'BanditTest', nGroups: 16, config: DRAGON_ALWAYS_PAYS },
    ],
  },
  actor: { lr: 3e-3 },
  trainer: { saveFreq: 0, seed: 0 },
  echoTrap: { signals: 'reward_std' },
});

/**
 * StarPO-S's uncertainty filter in its RAGEN-2 form (its recommended top_p 0.9, linear, include_zero=false), with a floor:
 * a group is kept only if at least two of its 8 rollouts disagree with the rest (in-group std >= 0.36; one deviant
 * gives 0.32-0.35). Training on a lone deviant (whitened advantage about -2.6) is what breaks StarPO-S on most fresh
 * seeds under the top-2-groups filter (docs/echo-trap.md).
 */
const LESSON_STARPO_S_FILTER: RunConfigInput = {
  filter: { strategy: 'top_p', value: 0.9, includeZero: false, minScore: 0.36 },
};

// The outcome lesson as a class runs it: several runs per arm at once (ECHO_TRAP_LESSON_SEEDS) on a laptop's two
// cores, each small enough to cost about a minute of one core (vanilla about 1.4 s of CPU per step, StarPO-S about
// 0.4 s; the page and `ragen lesson` stop a run a few steps after its collapse). Found on tuning seeds 0-9
// (docs/lab/echo-trap-probes.md, "A small lesson"), where vanilla collapses after the warning on 9 of 10 and StarPO-S
// holds on 10 of 10:
// * 4 env groups x 8 rollouts (32 trajectories per step, half of bandit-tiny's 64) in mini-batches of 8: vanilla
//   still makes 4 optimizer steps per rollout, as with 64 trajectories in mini-batches of 16, at half the cost;
// * the learning rate warms up over the first 10 steps (veRL's lr_warmup_steps_ratio, in both arms): at the full rate
//   from the first step, an update StarPO-S makes while most of its groups still disagree can break its answer format
//   before it has learned anything;
// * 80 steps: vanilla's collapse comes at steps 21-61 on the tuning seeds.
const ECHO_TRAP_LESSON: RunConfigInput = mergeConfigInput(ECHO_TRAP_BASE, {
  agent: { envGroups: 4, trainEnvs: [{ tag: 'Bandit', nGroups: 4, config: DRAGON_ALWAYS_PAYS }] },
  actor: { ppoMiniBatchSize: 8, ppoMicroBatchSize: 8, lrWarmupStepsRatio: 0.125 },
  trainer: { totalSteps: 80, seed: 2 },
});

/**
 * The live lesson's training seeds, one run of each arm on each: the page trains them all at once and the recording
 * holds them. Tuning seeds where vanilla collapses early (steps 21-32) and StarPO-S holds, so that a class sees the
 * lesson in class time; the first is the preset's own seed. How often the lesson shows on seeds nobody chose is the
 * fresh-seed table in docs/echo-trap.md.
 */
export const ECHO_TRAP_LESSON_SEEDS: readonly number[] = [2, 3, 8, 9];

// The echo trap's mechanism: RAGEN-2's input-dependence signal, the mutual information between a prompt and its
// reasoning, falls in vanilla StarPO before its success does, and stays up in StarPO-S. On Bandit it cannot (the
// prompts carry nothing for the reasoning to depend on), so this second lesson runs the same two arms on FrozenLake
// without slipping, where the tiny policy reads its position into its reasoning: 8 hand-drawn lakes, the goal one
// move from the start (two per direction), so that the warm start already solves about a third and vanilla can
// saturate within class time. Everything that tells the arms apart is the Bandit lesson's. Found on tuning seeds 0-5
// (docs/lab/echo-trap-probes.md, "The mechanism lesson"): lr 2e-3 with a 10-step warm-up (without it, some seeds
// break in their first update), 2 turns (few optimizer steps per failing rollout), 200 steps (vanilla's MI sinks
// during its plateau, and its success follows later); MI measured every 5 steps over the 8 lakes' first turns.
// StarPO-S's std floor is set for groups of 4 as the Bandit lesson's is for groups of 8: at least two rollouts must
// disagree with the rest (std >= 0.55). One differing rollout of 4 already gives 0.5, so the Bandit floor of 0.36
// would never act here: with it StarPO-S trains on lone-deviant groups, whose whitened noise templates its reasoning
// on 4 of the 10 fresh seeds 400-409. With 0.55 its MI stays up on 10 of 10 fresh seeds (600-609), at 63-75 %
// success instead of 88-100 % (docs/lab/echo-trap-probes.md, "A sixth probe" and "third fresh-seed check").
const MECHANISM_STARPO_S_FILTER: RunConfigInput = mergeConfigInput(LESSON_STARPO_S_FILTER, {
  filter: { minScore: 0.55 },
});
const lake = (...map: string[]) => ({ tag: 'FrozenLake', nGroups: 1, config: { ...GRID_COORD, successRate: 1, map } });
const ECHO_TRAP_FROZENLAKE_BASE: RunConfigInput = mergeConfigInput(ECHO_TRAP_BASE, {
  model: { warmStart: 'warmstart/frozenlake-tiny' },
  agent: {
    trainEnvs: [
      lake('PG__', '_O__', '____', '__O_'),
      lake('__G_', 'O_P_', '____', '_O__'),
      lake('____', 'O___', '_P_O', '_G__'),
      lake('_O__', '____', '__O_', '__GP'),
      lake('O___', 'PG__', '__O_', '____'),
      lake('____', '_O_G', '___P', 'O___'),
      lake('__P_', 'O_G_', '____', '_O__'),
      lake('____', '___O', 'OGP_', '____'),
    ],
    valEnvs: [{ tag: 'FrozenLake', nGroups: 32, config: { ...GRID_COORD, successRate: 1 } }],
    groupSize: 4,
    maxTurn: 2,
    maxActionsPerTurn: 5,
    maxContextWindow: 1,
    contextWindowMode: 'single_turn',
  },
  rollout: { maxNewTokens: 64 },
  actor: { lr: 2e-3, lrWarmupStepsRatio: 0.05, ppoMiniBatchSize: 8, ppoMicroBatchSize: 8 },
  collapse: { enabled: true },
  // Seed 607 (the recording and the live default): one of the fresh seeds 600-609 of the 0.55 floor's check, the demo
  // because the whole order shows there (warning, then the template, then the collapse); how often it shows is that
  // check's table. The tuning seeds 0-5 do not show it with this floor (4: StarPO-S's reasoning templates; 3: vanilla
  // collapses with its MI still up; docs/lab/echo-trap-probes.md, "The mechanism preset takes the floor").
  trainer: { totalSteps: 200, seed: 607 },
});

const SOKOBAN_QWEN: RunConfigInput = {
  // RAGEN's paper configuration is exactly defaultRunConfig(): Qwen2.5-0.5B-Instruct, SimpleSokoban 8 x 16, 5 turns
  // x 5 actions (10 per episode), 400 new tokens, lr 1e-6 / 1e-5, PPO + GAE, filter 25 %, no KL, clip 0.2 / 0.28,
  // RAGEN's prompt, 256 validation states. Departures: the model is read from `model.path` (--set model=PATH;
  // required, nothing is downloaded) and a checkpoint is kept every 50 steps (RAGEN saves none by default).
  // Like RAGEN main, the loss covers assistant turns only and micro-batches hold 1 trajectory; the April-2025 paper
  // trained on env tokens too with micro-batch 4: `--set algorithm.responseMaskOnly=false --set actor.ppoMicroBatchSize=4`.
  // Gradient checkpointing is on, as in RAGEN's config: it keeps a 1.5k-token update of the 0.5B model in a few GiB.
  model: { pretrained: 'Qwen/Qwen2.5-0.5B-Instruct', path: null, promptStyle: 'ragen', gradientCheckpointing: true },
  agent: { maxActionsPerTraj: 10 },
  trainer: { saveFreq: 50, keepCheckpoints: 2 },
};

const PRESETS = {
  'bandit-tiny': {
    summary: 'Bi-arm Bandit (Phoenix/Dragon), one turn, tiny model, StarPO-S; trains in minutes on 2 CPU cores (wasm).',
    arms: { 'bandit-tiny': BANDIT_TINY },
  },
  'frozenlake-tiny': {
    summary:
      'FrozenLake 4x4 (slippery) as coordinates and grid, one turn per prompt, up to 5 turns and 10 actions, tiny model, StarPO-S.',
    arms: { 'frozenlake-tiny': FROZENLAKE_TINY },
  },
  'frozenlake-noslip-tiny': {
    summary:
      "FrozenLake 4x4 without slipping (RAGEN-2's setting), from frozenlake-tiny's warm start: StarPO-S visibly learns, from 18 % to about 70 % held-out success in 300 steps (3-5 min on 2 CPU cores).",
    arms: { 'frozenlake-noslip-tiny': FROZENLAKE_NOSLIP_TINY },
  },
  'sokoban-tiny': {
    summary:
      'SimpleSokoban 6x6 with one box, coordinates and grid, one turn per prompt, up to 10 turns and 10 actions, tiny model, StarPO-S.',
    arms: { 'sokoban-tiny': SOKOBAN_TINY },
  },
  'echo-trap': {
    summary:
      'Vanilla StarPO vs StarPO-S on Bandit (Dragon always pays) at a high learning rate, same seeds: vanilla improves, the reward-variance warning fires, then its reasoning and format break and success falls to 0; StarPO-S (RAGEN-2 filter with a std floor) holds. Small runs (4 env groups, 80 steps, about a minute of one core each), so that a class trains several per arm at once; how often this shows on fresh seeds is in docs/echo-trap.md.',
    arms: {
      starpo: mergeConfigInput(ECHO_TRAP_LESSON, VANILLA_STARPO),
      'starpo-s': mergeConfigInput(ECHO_TRAP_LESSON, LESSON_STARPO_S_FILTER),
    },
  },
  'echo-trap-frozenlake': {
    summary:
      "The echo trap's mechanism: vanilla StarPO vs StarPO-S on 8 FrozenLake lakes (no slipping), 200 steps, with RAGEN-2's input-dependence signal (MI between prompt and reasoning): vanilla's reasoning becomes one template for every lake and its MI falls before its success does; StarPO-S's stays up. How often this shows on fresh seeds is in docs/echo-trap.md.",
    arms: {
      starpo: mergeConfigInput(ECHO_TRAP_FROZENLAKE_BASE, VANILLA_STARPO),
      'starpo-s': mergeConfigInput(ECHO_TRAP_FROZENLAKE_BASE, MECHANISM_STARPO_S_FILTER),
    },
  },
  'sokoban-qwen': {
    summary:
      "RAGEN's paper configuration: Qwen2.5-0.5B-Instruct (local copy via --set model=PATH) on SimpleSokoban, 8x16, StarPO-S.",
    arms: { 'sokoban-qwen': SOKOBAN_QWEN },
  },
} satisfies Record<string, PresetDefinition>;

export type PresetName = keyof typeof PRESETS;
export const PRESET_NAMES = Object.keys(PRESETS) as PresetName[];

export interface PresetArm {
  /** Arm name: the preset's own name, or 'starpo' / 'starpo-s' for echo-trap. */
  name: string;
  config: RunConfig;
}

export interface ResolvedPreset {
  name: PresetName;
  summary: string;
  /** One arm for an ordinary preset; several (same seeds) for a comparison such as echo-trap. */
  arms: PresetArm[];
}

function definition(name: string): PresetDefinition {
  if (!Object.hasOwn(PRESETS, name)) {
    throw new ConfigError(
      `unknown preset '${name}'${didYouMean(name, PRESET_NAMES)} (presets: ${PRESET_NAMES.join(', ')})`,
      [],
    );
  }
  return PRESETS[name as PresetName];
}

/** Every preset with its summary and arm names, for menus and `--help`. */
export function listPresets(): { name: PresetName; summary: string; armNames: string[] }[] {
  return PRESET_NAMES.map((name) => ({
    name,
    summary: PRESETS[name].summary,
    armNames: Object.keys(PRESETS[name].arms),
  }));
}

/** The one-arm presets of a tiny model that starts from a shipped warm start (what the playground and `ragen bench` train). */
export function tinyPresetNames(): PresetName[] {
  return PRESET_NAMES.filter((name) => {
    if (resolvePreset(name).arms.length !== 1) return false;
    const c = presetConfig(name);
    return c.model.pretrained === null && c.model.path === null && c.model.warmStart !== null;
  });
}

/** A preset's validated configs. An unknown name throws a ConfigError listing the presets. */
export function resolvePreset(name: string): ResolvedPreset {
  const def = definition(name);
  return {
    name: name as PresetName,
    summary: def.summary,
    arms: Object.entries(def.arms).map(([arm, input]) => ({
      name: arm,
      config: parseRunConfig(input, `preset '${name}'${Object.keys(def.arms).length > 1 ? ` arm '${arm}'` : ''}`),
    })),
  };
}

/**
 * One arm's config. `arm` may be omitted for a one-arm preset; for a several-arm preset a missing or unknown arm
 * throws a ConfigError listing the arms.
 */
export function presetConfig(name: string, arm?: string): RunConfig {
  const preset = resolvePreset(name);
  if (arm === undefined && preset.arms.length === 1) return preset.arms[0].config;
  const names = preset.arms.map((a) => a.name);
  const found = preset.arms.find((a) => a.name === arm);
  if (!found) {
    const what = arm === undefined ? 'has several arms; name one' : `has no arm '${arm}'${didYouMean(arm, names)}`;
    throw new ConfigError(`preset '${name}' ${what} (arms: ${names.join(', ')})`, []);
  }
  return found.config;
}
