// The playground's settings: a preset plus the knobs a learner turns (environment, PPO / GRPO, the StarPO-S
// switches, batch shape, turn budget, seed). They live in the page URL so a link reproduces a setup, and they turn
// into a RunConfig by laying the knobs over the preset's config, the SAME RunConfig the CLI would build for
// `ragen train --preset NAME --set ...`. Pure TypeScript (no DOM, no runes), so it is unit-tested in Node.
//
// One table (KNOB_SPECS) holds every knob's limits: the URL reader and the form both check values with
// `checkKnob`, so a value the form accepts is a value a shared link accepts, and the other way round. A bad value
// never makes the page unusable: `readSettingsSearch` keeps the rest of the settings, and reports the bad field
// (with its raw text, so the form can show it highlighted next to a plain-words error) for the user to fix.
import { ENV_TAGS } from '../../envs/index';
import { mergeConfigInput, parseRunConfig, type RunConfig, type RunConfigInput } from '../starpo/config';
import { PRESET_NAMES, presetConfig, resolvePreset, type PresetName } from '../starpo/presets';
import { BACKEND_CHOICES, isBackendChoice, type BackendChoice } from '../model/backendNames';
import { parseWorkersChoice, type WorkersChoice } from '../starpo/workers';

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
  /** Validation env groups (agent.valGroups, spread over the preset's validation blocks): what each validation plays. */
  valGroups?: number;
}

export interface PlaygroundSettings {
  preset: PresetName;
  backend: BackendChoice;
  /** Cores per run (URL `workers`): 1, 2 (a helper worker: same results, about twice as fast on wasm), or auto. */
  workers: WorkersChoice;
  knobs: Knobs;
}

export const DEFAULT_PRESET: PresetName = 'bandit-tiny';

/**
 * Why a preset cannot train in a browser tab, in plain words, or null when it can. A preset of a pretrained model
 * (sokoban-qwen: Qwen2.5-0.5B-Instruct) needs its weights from a local directory and RAGEN's context length, which
 * only the CLI can give it; the tab would otherwise fall back to a fresh tiny model and fail on the context.
 */
export function browserPresetProblem(preset: PresetName): string | null {
  const config = resolvePreset(preset)
    .arms.map((a) => a.config)
    .find((c) => c.model.pretrained !== null || c.model.path !== null);
  if (!config) return null;
  return (
    `${preset} needs ${config.model.pretrained ?? 'a pretrained model'}'s weights from a local copy, which a browser tab cannot load: ` +
    `run it with the CLI (ragen train --preset ${preset} --set model=PATH)`
  );
}

/** The presets the playground offers: every preset that can train in a tab. */
export const BROWSER_PRESETS: readonly PresetName[] = PRESET_NAMES.filter(
  (name) => browserPresetProblem(name) === null,
);

// The StarPO-S and vanilla StarPO buttons set the three knobs to these (src/starpo/variants.ts).
export { STARPO_S_SWITCHES, VANILLA_STARPO_SWITCHES } from '../starpo/variants';

/** How each knob is spelled in the URL, labelled on the form, explained, and checked. */
interface KnobSpec {
  param: string;
  kind: 'int' | 'number' | 'env' | 'algorithm';
  /** The form's label (RAGEN's letters in brackets: P, N, K). */
  label: string;
  /** One sentence for a newcomer: what the knob does. */
  help: string;
  /** Smallest accepted value for numbers. */
  min?: number;
  /** Largest accepted value for numbers (sized for a browser tab: a step must finish in seconds to minutes). */
  max?: number;
  /** The form's spinner step. */
  step?: number;
}

export const KNOB_SPECS: { readonly [K in keyof Required<Knobs>]: KnobSpec } = {
  env: { param: 'env', kind: 'env', label: 'environment', help: 'The game the agent learns to play.' },
  algorithm: {
    param: 'algo',
    kind: 'algorithm',
    label: 'algorithm',
    help: 'PPO learns a critic that predicts rewards; GRPO instead compares the rollouts of each env group with each other.',
  },
  filterRatio: {
    param: 'filter',
    kind: 'number',
    label: 'filter ratio',
    min: 0.01,
    max: 1,
    step: 0.05,
    help: 'StarPO-S trains only on this fraction of env groups: those whose rollouts disagree most (highest reward std). 1 = keep all (vanilla StarPO).',
  },
  klCoef: {
    param: 'kl',
    kind: 'number',
    label: 'KL coef',
    min: 0,
    max: 1,
    step: 0.001,
    help: 'How strongly the reward punishes drifting away from the starting policy. 0 = off (StarPO-S).',
  },
  clipHigh: {
    param: 'clipHigh',
    kind: 'number',
    label: 'clip high ε',
    min: 0.01,
    max: 1,
    step: 0.01,
    help: 'PPO lets the probability ratio of an answer grow to 1 + ε per update. 0.28 ("clip-higher", StarPO-S) lets rare good answers grow faster than the symmetric 0.2.',
  },
  envGroups: {
    param: 'groups',
    kind: 'int',
    label: 'env groups (P)',
    min: 1,
    max: 64,
    step: 1,
    help: 'P: how many different starting states each training step plays.',
  },
  groupSize: {
    param: 'groupSize',
    kind: 'int',
    label: 'group size (N)',
    min: 1,
    max: 32,
    step: 1,
    help: 'N: how many times the agent plays each starting state; StarPO compares these rollouts with each other.',
  },
  maxTurn: {
    param: 'turns',
    kind: 'int',
    label: 'turns (K)',
    min: 1,
    max: 20,
    step: 1,
    help: 'K: most answers (turns) the agent gives per episode.',
  },
  maxActionsPerTurn: {
    param: 'actions',
    kind: 'int',
    label: 'actions / turn',
    min: 1,
    max: 20,
    step: 1,
    help: 'Most game moves taken from one answer.',
  },
  seed: {
    param: 'seed',
    kind: 'int',
    label: 'seed',
    min: 0,
    max: 2 ** 31 - 1,
    step: 1,
    help: 'Same seed, same backend: the same run, step for step.',
  },
  totalSteps: {
    param: 'steps',
    kind: 'int',
    label: 'steps',
    min: 1,
    max: 10_000,
    step: 1,
    help: 'Training steps (rollout, then update) of the run.',
  },
  valGroups: {
    param: 'val',
    kind: 'int',
    label: 'validation groups',
    min: 1,
    max: 256,
    step: 1,
    help: 'How many fixed starting states each validation plays (the val curve: before training, every 10 steps, after the last). Fewer is faster; more gives a steadier curve.',
  },
};

export const KNOB_NAMES = Object.keys(KNOB_SPECS) as (keyof Knobs)[];

/** A field of the settings form: the preset, the backend, the cores, or a knob. */
export type FieldName = 'preset' | 'backend' | 'workers' | keyof Knobs;

/** A knob's value, or why the text is not one (plain words, without the field's name). */
export type KnobCheck = { ok: true; value: Knobs[keyof Knobs] } | { ok: false; error: string };

/** Checks the text of one knob against its limits: the ONE check of both the form and the URL. */
/** What a numeric knob takes, e.g. "a whole number from 1 to 64". */
export function knobWants(name: keyof Knobs): string {
  const spec = KNOB_SPECS[name];
  const range = `from ${spec.min} to ${spec.max}`;
  return spec.kind === 'int' ? `a whole number ${range}` : `a number ${range}`;
}

/**
 * The error of a number field whose text the browser could not read as a number at all (its value is then '', as
 * for an empty field, but `validity.badInput` is set): e.g. "abc" typed in a browser that lets letters in.
 */
export function knobNotANumber(name: keyof Knobs): string {
  return `${KNOB_SPECS[name].label} needs ${knobWants(name)}; what was typed is not a number`;
}

export function checkKnob(name: keyof Knobs, raw: string): KnobCheck {
  const spec = KNOB_SPECS[name];
  const text = raw.trim();
  if (spec.kind === 'env') {
    return ENV_TAGS.includes(text)
      ? { ok: true, value: text }
      : { ok: false, error: `'${raw}' is not an environment here (choose one of ${ENV_TAGS.join(', ')})` };
  }
  if (spec.kind === 'algorithm') {
    return text === 'ppo' || text === 'grpo'
      ? { ok: true, value: text }
      : { ok: false, error: `'${raw}' is not an algorithm here (choose ppo or grpo)` };
  }
  const wanted = knobWants(name);
  const value = Number(text);
  if (text === '') return { ok: false, error: `needs ${wanted}; the field is empty` };
  if (!Number.isFinite(value)) return { ok: false, error: `needs ${wanted}; '${raw}' is not a number` };
  if (spec.kind === 'int' && !Number.isInteger(value))
    return { ok: false, error: `needs ${wanted}; ${raw} is not a whole number` };
  if (value < spec.min!) return { ok: false, error: `needs ${wanted}; ${raw} is too small` };
  if (value > spec.max!) return { ok: false, error: `needs ${wanted}; ${raw} is too large` };
  return { ok: true, value };
}

/** One problem with the settings, in plain words, and the fields to highlight. */
export interface SettingsProblem {
  fields: FieldName[];
  message: string;
}

/** What a URL gave: the usable settings, and for each unusable field its raw text and the reason. */
export interface SettingsReading {
  /** The settings, with every bad field left at its default (the preset's value, 'auto', bandit-tiny). */
  settings: PlaygroundSettings;
  /** The raw text of each bad field, so the form can show it (highlighted) for the user to fix in place. */
  drafts: Partial<Record<FieldName, string>>;
  /** One per bad field. */
  problems: SettingsProblem[];
}

/** Settings from a URL query string (`location.search`); a bad value is reported, never fatal. */
export function readSettingsSearch(search: string): SettingsReading {
  const params = new URLSearchParams(search);
  const drafts: SettingsReading['drafts'] = {};
  const problems: SettingsProblem[] = [];
  const bad = (field: FieldName, raw: string, message: string) => {
    drafts[field] = raw;
    problems.push({ fields: [field], message });
  };
  let preset = params.get('preset') || DEFAULT_PRESET;
  if (!(PRESET_NAMES as string[]).includes(preset)) {
    bad('preset', preset, `unknown preset '${preset}' in the URL (choose one of ${BROWSER_PRESETS.join(', ')})`);
    preset = DEFAULT_PRESET;
  } else if (browserPresetProblem(preset as PresetName) !== null) {
    bad('preset', preset, browserPresetProblem(preset as PresetName)!);
    preset = DEFAULT_PRESET;
  }
  let backend = params.get('backend') || 'auto';
  if (!isBackendChoice(backend)) {
    bad('backend', backend, `unknown backend '${backend}' in the URL (choose one of ${BACKEND_CHOICES.join(', ')})`);
    backend = 'auto';
  }
  const workersText = params.get('workers') || 'auto';
  let workers = parseWorkersChoice(workersText);
  if (workers === null) {
    bad('workers', workersText, `cores (URL parameter 'workers') must be 1, 2 or auto, not '${workersText}'`);
    workers = 'auto';
  }
  const knobs: Knobs = {};
  for (const name of KNOB_NAMES) {
    const spec = KNOB_SPECS[name];
    const raw = params.get(spec.param);
    if (raw === null || raw === '') continue;
    const check = checkKnob(name, raw);
    if (check.ok) (knobs as Record<string, unknown>)[name] = check.value;
    else bad(name, raw, `${spec.label} (URL parameter '${spec.param}') ${check.error}`);
  }
  return {
    settings: { preset: preset as PresetName, backend: backend as BackendChoice, workers, knobs },
    drafts,
    problems,
  };
}

/** Settings from a URL query string. Throws an Error with the first problem (readSettingsSearch reports them all). */
export function settingsFromSearch(search: string): PlaygroundSettings {
  const reading = readSettingsSearch(search);
  if (reading.problems.length > 0) throw new Error(reading.problems[0].message);
  return reading.settings;
}

/** Which form field a RunConfig key belongs to (for highlighting a problem the config found). */
const CONFIG_KEY_FIELDS: [RegExp, keyof Knobs][] = [
  [/filter\.ratio/, 'filterRatio'],
  [/agent\.(envGroups|trainEnvs)/, 'envGroups'],
  [/agent\.groupSize|groupSize/, 'groupSize'],
  [/agent\.maxTurn/, 'maxTurn'],
  [/agent\.maxActionsPerTurn/, 'maxActionsPerTurn'],
  [/algorithm\.klCoef/, 'klCoef'],
  [/actor\.clipRatioHigh/, 'clipHigh'],
  [/advEstimator|rewardNormalization/, 'algorithm'],
  [/trainer\.totalSteps/, 'totalSteps'],
  [/trainer\.seed/, 'seed'],
];

/**
 * Why `settings` cannot make a run, in plain words with the fields to fix, or null when every arm's RunConfig is
 * valid. The common mistakes get a sentence of their own; anything else is the config's own message.
 */
export function settingsProblem(settings: PlaygroundSettings): SettingsProblem | null {
  const arms = presetArms(settings.preset);
  for (const arm of arms) {
    const config = presetConfig(settings.preset, arm);
    const k = settings.knobs;
    const classroom = arms.length > 1;
    const ratio = classroom ? config.filter.ratio : (k.filterRatio ?? config.filter.ratio);
    const groups = k.envGroups ?? config.agent.envGroups;
    if (config.filter.strategy === 'ratio' && Math.floor(ratio * groups + 1e-9) < 1) {
      const minGroups = Math.ceil(1 / ratio - 1e-9);
      const minRatio = Math.ceil(100 / groups - 1e-9) / 100;
      return classroom
        ? {
            fields: ['envGroups'],
            message: `StarPO-S keeps the top ${ratio * 100}% of env groups; with ${groups} env group${groups === 1 ? '' : 's'} that is no group at all, so it would never train. Use at least ${minGroups} env groups.`,
          }
        : {
            fields: ['filterRatio', 'envGroups'],
            message:
              `The filter keeps the top ${ratio} × ${groups} env groups, which rounds down to 0: no group would be trained on. ` +
              `Raise the filter ratio to at least ${minRatio}` +
              (minGroups <= KNOB_SPECS.envGroups.max! ? `, or use at least ${minGroups} env groups.` : '.'),
          };
    }
    const algorithm = k.algorithm ?? (config.algorithm.advEstimator === 'grpo' ? 'grpo' : 'ppo');
    if (algorithm === 'grpo' && (k.groupSize ?? config.agent.groupSize) < 2) {
      return {
        fields: ['groupSize', 'algorithm'],
        message:
          'GRPO compares the rollouts of each env group with each other, so it needs a group size (N) of at least 2.',
      };
    }
  }
  try {
    for (const arm of arms) runConfigFor(settings, arm);
    return null;
  } catch (err) {
    const text = err instanceof Error ? err.message : String(err);
    const fields = CONFIG_KEY_FIELDS.filter(([re]) => re.test(text)).map(([, f]) => f);
    return { fields, message: `This setup cannot run: ${text.replace(/^invalid run config \([^)]*\): /, '')}` };
  }
}

/**
 * The query string for `settings` (with the leading '?', or '' when everything is default). Parameters the page
 * does not own (anything else already in `keepFrom`) are kept, so other tools' parameters survive.
 */
export function settingsToSearch(settings: PlaygroundSettings, keepFrom = ''): string {
  const params = new URLSearchParams(keepFrom);
  const owned = ['preset', 'backend', 'workers', ...KNOB_NAMES.map((n) => KNOB_SPECS[n].param)];
  for (const p of owned) params.delete(p);
  if (settings.preset !== DEFAULT_PRESET) params.set('preset', settings.preset);
  if (settings.backend !== 'auto') params.set('backend', settings.backend);
  if (settings.workers !== 'auto') params.set('workers', String(settings.workers));
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
    valGroups: config.agent.valGroups,
  };
}

/** The arms a preset trains: one for ordinary presets, 'starpo' and 'starpo-s' for the echo-trap classroom. */
export function presetArms(preset: PresetName): string[] {
  return resolvePreset(preset).arms.map((a) => a.name);
}

/**
 * One arm's RunConfig: the preset's config with the knobs laid over it, validated by parseRunConfig (a
 * ConfigError names every problem). For the two-arm presets (the lessons) the StarPO / StarPO-S switches belong to
 * the arm, so the filter / KL / clip knobs are not applied there: the comparison stays the paper's.
 */
export function runConfigFor(settings: PlaygroundSettings, arm?: string): RunConfig {
  const base = presetConfig(settings.preset, arm);
  const k = settings.knobs;
  const armsFixSwitches = presetArms(settings.preset).length > 1;
  const over: RunConfigInput = {
    agent: {},
    algorithm: {},
    actor: {},
    filter: {},
    trainer: { backend: settings.backend },
  };

  const envGroups = k.envGroups ?? base.agent.envGroups;
  if (k.env !== undefined || k.envGroups !== undefined) {
    // Only the count changed: the preset's blocks keep their settings (fixed maps, no slipping) and share the new
    // count (spreadGroups). Another tag: one block of it, with that env's defaults (Bandit keeps its BanditTest
    // validation block).
    const tag = k.env ?? base.agent.trainEnvs[0].tag;
    const keepBlocks = base.agent.trainEnvs.every((b) => b.tag === tag) || k.env === undefined;
    over.agent!.trainEnvs = keepBlocks ? spreadGroups(base.agent.trainEnvs, envGroups) : [{ tag, nGroups: envGroups }];
    over.agent!.envGroups = envGroups;
    if (k.env !== undefined && k.env !== base.agent.trainEnvs[0].tag) {
      over.agent!.valEnvs = [{ tag, nGroups: base.agent.valGroups }];
    }
  }
  if (k.valGroups !== undefined) {
    // The preset's validation blocks (or the new env's one) keep their settings and share the new count.
    over.agent!.valEnvs = spreadGroups(over.agent!.valEnvs ?? base.agent.valEnvs, k.valGroups);
    over.agent!.valGroups = k.valGroups;
  }
  if (k.groupSize !== undefined) over.agent!.groupSize = k.groupSize;
  if (k.maxTurn !== undefined) over.agent!.maxTurn = k.maxTurn;
  if (k.maxActionsPerTurn !== undefined) over.agent!.maxActionsPerTurn = k.maxActionsPerTurn;
  if (k.seed !== undefined) over.trainer!.seed = k.seed;
  if (k.totalSteps !== undefined) over.trainer!.totalSteps = k.totalSteps;

  if (k.algorithm === 'grpo') {
    // GRPO needs a group baseline: RAGEN's mean_std normalisation within each env group (config/checks.ts refuses identity).
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
  // RAGEN-2's filters (echo-trap's StarPO-S arm) keep a varying number of groups, so only the whole step must fill a
  // mini-batch (config/checks.ts); a smaller kept batch trains as one shorter mini-batch.
  const trajectories = envGroups * groupSize;
  if (base.filter.strategy !== 'ratio' && trajectories < base.actor.ppoMiniBatchSize) {
    over.actor!.ppoMiniBatchSize = trajectories;
    over.actor!.ppoMicroBatchSize = trajectories;
  }

  return parseRunConfig(
    mergeConfigInput(base, over),
    `playground settings (preset '${settings.preset}'${arm ? ` arm '${arm}'` : ''})`,
  );
}

/**
 * A preset's train blocks with their groups scaled to `envGroups`: block b gets its share of the new count in
 * proportion to its old nGroups, the remainder going to the first blocks; blocks left with none are dropped. So 16
 * groups over echo-trap-frozenlake's 8 one-group lakes train each lake twice, and 4 train the first 4 lakes.
 */
export function spreadGroups<B extends { nGroups: number }>(blocks: readonly B[], envGroups: number): B[] {
  const total = blocks.reduce((s, b) => s + b.nGroups, 0);
  const shares = blocks.map((b) => Math.floor((b.nGroups * envGroups) / total));
  let left = envGroups - shares.reduce((s, n) => s + n, 0);
  for (let i = 0; left > 0; i = (i + 1) % blocks.length, left--) shares[i]++;
  return blocks.map((b, i) => ({ ...b, nGroups: shares[i] })).filter((b) => b.nGroups > 0);
}

/** Settings with one knob changed (undefined = back to the preset's value). */
export function withKnob<K extends keyof Knobs>(
  settings: PlaygroundSettings,
  name: K,
  value: Knobs[K] | undefined,
): PlaygroundSettings {
  const knobs = { ...settings.knobs };
  if (value === undefined) delete knobs[name];
  else knobs[name] = value;
  return { ...settings, knobs };
}

/** The settings' first arm's RunConfig (what the setup would train), or null when a setting is not usable. */
export function firstArmConfig(settings: PlaygroundSettings): RunConfig | null {
  try {
    return runConfigFor(settings, presetArms(settings.preset)[0]);
  } catch {
    return null;
  }
}
