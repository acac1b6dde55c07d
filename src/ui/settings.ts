// The playground's settings: a preset plus the knobs a learner turns (environment, PPO / GRPO, the StarPO-S
// switches, batch shape, turn budget, seed). They live in the page URL so a link reproduces a setup, and they turn
// into a RunConfig by laying the knobs over the preset's config, the SAME RunConfig the CLI would build for
// `ragen train --preset NAME --set ...`. Pure TypeScript (no DOM, no runes), so it is unit-tested in Node.
import { ENV_TAGS } from '../../envs/index';
import { mergeConfigInput, parseRunConfig, type RunConfig, type RunConfigInput } from '../starpo/config';
import { PRESET_NAMES, presetConfig, resolvePreset, type PresetName } from '../starpo/presets';
import { BACKEND_CHOICES, isBackendChoice, type BackendChoice } from '../model/backendNames';

/** Policy-gradient flavour: PPO with a critic and GAE (RAGEN's default), or critic-free GRPO. */
export type Algorithm = 'ppo' | 'grpo';

/**
 * The knobs on the controls panel. Each one left undefined keeps the preset's value, so a URL carries only what
 * the user changed and a preset improved later still applies to old links.
 */
export interface Knobs {
  /** Env tag of every training (and validation) env group, e.g. 'FrozenLake' (RAGEN `custom_envs` key). */
  env?: string;
  /** 'ppo' = advEstimator gae with a critic; 'grpo' = group-normalised reward (mean_std), no critic. */
  algorithm?: Algorithm;
  /** StarPO-S uncertainty filter: fraction of env groups kept by in-group reward std (1 = off, vanilla StarPO). */
  filterRatio?: number;
  /** KL penalty coefficient folded into the reward (0 = off, StarPO-S; vanilla StarPO 0.001). */
  klCoef?: number;
  /** Upper clip ε_high of the PPO ratio ("clip-higher": StarPO-S 0.28, vanilla 0.2). */
  clipHigh?: number;
  /** P: env groups per step (distinct initial states). */
  envGroups?: number;
  /** N: rollouts per env group. */
  groupSize?: number;
  /** K: most turns per episode. */
  maxTurn?: number;
  /** Most primitive actions kept from one answer. */
  maxActionsPerTurn?: number;
  /** Seed of model initialisation and sampling (trainer.seed). */
  seed?: number;
  /** Training steps of the run (trainer.totalSteps). */
  totalSteps?: number;
}

export interface PlaygroundSettings {
  preset: PresetName;
  backend: BackendChoice;
  knobs: Knobs;
}

export const DEFAULT_PRESET: PresetName = 'bandit-tiny';

/** The StarPO-S switches of the paper (spec §4.5–4.6): filter 25 %, no KL, clip-higher 0.28. */
export const STARPO_S_SWITCHES = { filterRatio: 0.25, klCoef: 0, clipHigh: 0.28 } as const;
/** Vanilla StarPO as the paper ran it: no filter, KL 0.001 in the reward, symmetric clip 0.2. */
export const VANILLA_STARPO_SWITCHES = { filterRatio: 1, klCoef: 0.001, clipHigh: 0.2 } as const;

/** How each knob is spelled in the URL, and how its value is read. */
interface KnobSpec {
  param: string;
  kind: 'int' | 'number' | 'env' | 'algorithm';
  /** Smallest accepted value for numbers. */
  min?: number;
  /** Largest accepted value for numbers. */
  max?: number;
}

export const KNOB_SPECS: { readonly [K in keyof Required<Knobs>]: KnobSpec } = {
  env: { param: 'env', kind: 'env' },
  algorithm: { param: 'algo', kind: 'algorithm' },
  filterRatio: { param: 'filter', kind: 'number', min: 0, max: 1 },
  klCoef: { param: 'kl', kind: 'number', min: 0, max: 1 },
  clipHigh: { param: 'clipHigh', kind: 'number', min: 0.01, max: 10 },
  envGroups: { param: 'groups', kind: 'int', min: 1, max: 256 },
  groupSize: { param: 'groupSize', kind: 'int', min: 1, max: 64 },
  maxTurn: { param: 'turns', kind: 'int', min: 1, max: 20 },
  maxActionsPerTurn: { param: 'actions', kind: 'int', min: 1, max: 20 },
  seed: { param: 'seed', kind: 'int', min: 0, max: 2 ** 31 - 1 },
  totalSteps: { param: 'steps', kind: 'int', min: 1, max: 100_000 },
};

const KNOB_NAMES = Object.keys(KNOB_SPECS) as (keyof Knobs)[];

function readKnob(name: keyof Knobs, raw: string): Knobs[keyof Knobs] {
  const spec = KNOB_SPECS[name];
  const where = `URL parameter '${spec.param}'`;
  if (spec.kind === 'env') {
    if (!ENV_TAGS.includes(raw)) throw new Error(`unknown env '${raw}' in ${where} (expected one of: ${ENV_TAGS.join(', ')})`);
    return raw;
  }
  if (spec.kind === 'algorithm') {
    if (raw !== 'ppo' && raw !== 'grpo') throw new Error(`unknown algorithm '${raw}' in ${where} (expected ppo or grpo)`);
    return raw;
  }
  const value = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(value)) throw new Error(`${where} must be a number, got '${raw}'`);
  if (spec.kind === 'int' && !Number.isInteger(value)) throw new Error(`${where} must be an integer, got '${raw}'`);
  if ((spec.min !== undefined && value < spec.min) || (spec.max !== undefined && value > spec.max)) {
    throw new Error(`${where} must be between ${spec.min} and ${spec.max}, got ${raw}`);
  }
  return value;
}

/** Settings from a URL query string (`location.search`). Bad values throw an Error naming the parameter. */
export function settingsFromSearch(search: string): PlaygroundSettings {
  const params = new URLSearchParams(search);
  const preset = params.get('preset') || DEFAULT_PRESET;
  if (!(PRESET_NAMES as string[]).includes(preset)) {
    throw new Error(`unknown preset '${preset}' in the URL (expected one of: ${PRESET_NAMES.join(', ')})`);
  }
  const backend = params.get('backend') || 'auto';
  if (!isBackendChoice(backend)) {
    throw new Error(`unknown backend '${backend}' in the URL (expected one of: ${BACKEND_CHOICES.join(', ')})`);
  }
  const knobs: Knobs = {};
  for (const name of KNOB_NAMES) {
    const raw = params.get(KNOB_SPECS[name].param);
    if (raw !== null && raw !== '') (knobs as Record<string, unknown>)[name] = readKnob(name, raw);
  }
  return { preset: preset as PresetName, backend: backend as BackendChoice, knobs };
}

/**
 * The query string for `settings` (with the leading '?', or '' when everything is default). Parameters the page
 * does not own (anything else already in `keepFrom`) are kept, so other tools' parameters survive.
 */
export function settingsToSearch(settings: PlaygroundSettings, keepFrom = ''): string {
  const params = new URLSearchParams(keepFrom);
  const owned = ['preset', 'backend', ...KNOB_NAMES.map((n) => KNOB_SPECS[n].param)];
  for (const p of owned) params.delete(p);
  if (settings.preset !== DEFAULT_PRESET) params.set('preset', settings.preset);
  if (settings.backend !== 'auto') params.set('backend', settings.backend);
  for (const name of KNOB_NAMES) {
    const value = settings.knobs[name];
    if (value !== undefined) params.set(KNOB_SPECS[name].param, String(value));
  }
  const text = params.toString();
  return text ? `?${text}` : '';
}

/** The knob values a config holds (what the controls show when the user has not changed a knob). */
export function knobsOf(config: RunConfig): Required<Knobs> {
  return {
    env: config.agent.trainEnvs[0].tag,
    algorithm: config.algorithm.advEstimator === 'grpo' ? 'grpo' : 'ppo',
    filterRatio: config.filter.ratio,
    klCoef: config.algorithm.useKlInReward ? config.algorithm.klCoef : 0,
    clipHigh: config.actor.clipRatioHigh,
    envGroups: config.agent.envGroups,
    groupSize: config.agent.groupSize,
    maxTurn: config.agent.maxTurn,
    maxActionsPerTurn: config.agent.maxActionsPerTurn,
    seed: config.trainer.seed,
    totalSteps: config.trainer.totalSteps,
  };
}

/** The arms a preset trains: one for ordinary presets, 'starpo' and 'starpo-s' for the echo-trap classroom. */
export function presetArms(preset: PresetName): string[] {
  return resolvePreset(preset).arms.map((a) => a.name);
}

/**
 * One arm's RunConfig: the preset's config with the knobs laid over it, validated by parseRunConfig (a
 * ConfigError names every problem). For the two-arm echo-trap preset the StarPO / StarPO-S switches belong to
 * the arm, so the filter / KL / clip knobs are not applied there: the comparison stays the paper's.
 */
export function runConfigFor(settings: PlaygroundSettings, arm?: string): RunConfig {
  const base = presetConfig(settings.preset, arm);
  const k = settings.knobs;
  const armsFixSwitches = presetArms(settings.preset).length > 1;
  const over: RunConfigInput = { agent: {}, algorithm: {}, actor: {}, filter: {}, trainer: { backend: settings.backend } };

  const envGroups = k.envGroups ?? base.agent.envGroups;
  if (k.env !== undefined || k.envGroups !== undefined) {
    // One block of the chosen tag; a changed group count must be spread over the blocks, so blocks collapse to one
    // (the preset's own tag when only the count changed; Bandit keeps its BanditTest validation block).
    const tag = k.env ?? base.agent.trainEnvs[0].tag;
    const sameTag = tag === base.agent.trainEnvs[0].tag && base.agent.trainEnvs.length === 1;
    over.agent!.trainEnvs = [{ ...(sameTag ? base.agent.trainEnvs[0] : { tag }), tag, nGroups: envGroups }];
    over.agent!.envGroups = envGroups;
    if (k.env !== undefined && k.env !== base.agent.trainEnvs[0].tag) {
      over.agent!.valEnvs = [{ tag, nGroups: base.agent.valGroups }];
    }
  }
  if (k.groupSize !== undefined) over.agent!.groupSize = k.groupSize;
  if (k.maxTurn !== undefined) over.agent!.maxTurn = k.maxTurn;
  if (k.maxActionsPerTurn !== undefined) over.agent!.maxActionsPerTurn = k.maxActionsPerTurn;
  if (k.seed !== undefined) over.trainer!.seed = k.seed;
  if (k.totalSteps !== undefined) over.trainer!.totalSteps = k.totalSteps;

  if (k.algorithm === 'grpo') {
    // GRPO needs a group baseline: RAGEN's mean_std normalisation within each env group (config.ts refuses identity).
    over.algorithm!.advEstimator = 'grpo';
    over.algorithm!.rewardNormalization = { grouping: 'state', method: 'mean_std' };
  } else if (k.algorithm === 'ppo') {
    over.algorithm!.advEstimator = 'gae';
  }
  if (!armsFixSwitches) {
    if (k.filterRatio !== undefined) over.filter = { strategy: 'ratio', ratio: k.filterRatio };
    if (k.klCoef !== undefined) {
      over.algorithm!.useKlInReward = k.klCoef > 0;
      over.algorithm!.klCoef = k.klCoef;
    }
    if (k.clipHigh !== undefined) over.actor!.clipRatioHigh = k.clipHigh;
  }

  // The kept trajectories must fill one PPO mini-batch (RAGEN's assert). When the knobs shrink the batch below the
  // preset's mini-batch, train on what is kept as one mini-batch instead of refusing the setup.
  const groupSize = k.groupSize ?? base.agent.groupSize;
  const ratio = armsFixSwitches ? base.filter.ratio : (k.filterRatio ?? base.filter.ratio);
  const kept = Math.floor(ratio * envGroups + 1e-9) * groupSize;
  if (base.filter.strategy === 'ratio' && kept >= 1 && kept < base.actor.ppoMiniBatchSize) {
    over.actor!.ppoMiniBatchSize = kept;
    over.actor!.ppoMicroBatchSize = kept;
  }

  return parseRunConfig(mergeConfigInput(base, over), `playground settings (preset '${settings.preset}'${arm ? ` arm '${arm}'` : ''})`);
}

/** Settings with one knob changed (undefined = back to the preset's value). */
export function withKnob<K extends keyof Knobs>(settings: PlaygroundSettings, name: K, value: Knobs[K] | undefined): PlaygroundSettings {
  const knobs = { ...settings.knobs };
  if (value === undefined) delete knobs[name];
  else knobs[name] = value;
  return { ...settings, knobs };
}
