// Bi-Arm Bandit (spec §2.1): one decision between a low-risk arm (always pays loArmScore) and a high-risk arm
// (pays hiArmHiScore with probability hiArmHiScoreProb, else hiArmLoScore). The arms' names carry the only hint;
// the model must read "Dragon" as riskier than "Phoenix". Success = chose the high arm, whatever it paid.
//
// v1 semantics (the default here):
// * low arm 0.1 as in RAGEN's code; the paper says 0.15 — set `loArmScore: 0.15` for the paper's version;
// * one RNG per reset seeded with the seed: first draw = arm order, second draw = the high arm's payoff. Envs of a
//   group share a seed, so they also share the payoff draw (spec §10.10); RAGEN-2 perturbs seeds per instance,
//   which is the rollout manager's business, not the env's.

import type { Env, StepResult } from './types';
import { definedEntries, lookupAction, nonEmptyString, numberBetween, validateConfig, type Validator } from './config';
import { formatPythonFloat } from './format';
import { Rng, checkSeed } from './random';
import type { EnvSpec } from './spec';

export interface BanditConfig {
  /** Name of the low-risk arm (Bandit: "Phoenix", BanditTest: "Trader"). */
  loArmName: string;
  /** Name of the high-risk arm (Bandit: "Dragon", BanditTest: "Librarian"). */
  hiArmName: string;
  /** What the low-risk arm always pays: 0.1 in RAGEN's code (v1 default), 0.15 in the paper. */
  loArmScore: number;
  /** What the high-risk arm pays when it pays out. */
  hiArmHiScore: number;
  /** What the high-risk arm pays otherwise. */
  hiArmLoScore: number;
  /** Probability that the high-risk arm pays hiArmHiScore. */
  hiArmHiScoreProb: number;
}

export const BANDIT_DEFAULTS: Readonly<Record<'Bandit' | 'BanditTest', BanditConfig>> = {
  Bandit: {
    loArmName: 'Phoenix',
    hiArmName: 'Dragon',
    loArmScore: 0.1,
    hiArmHiScore: 1.0,
    hiArmLoScore: 0.0,
    hiArmHiScoreProb: 0.25,
  },
  BanditTest: {
    loArmName: 'Trader',
    hiArmName: 'Librarian',
    loArmScore: 0.1,
    hiArmHiScore: 1.0,
    hiArmLoScore: 0.0,
    hiArmHiScoreProb: 0.25,
  },
};

/**
 * An arm name is an action the model writes inside `<answer>…</answer>` and the agent splits at `||`, trimming
 * each part: a name that starts or ends with whitespace, contains the separator or a tag bracket, or spans lines
 * could never be answered as written.
 */
const armName: Validator = (v) => {
  const problem = nonEmptyString(v);
  if (problem !== null) return problem;
  const name = v as string;
  if (name.trim() !== name) return 'must not start or end with whitespace';
  if (/[\r\n]/.test(name)) return 'must be one line';
  if (name.includes('||')) return "must not contain '||' (the action separator)";
  if (/[<>]/.test(name)) return "must not contain '<' or '>' (they would read as tags)";
  return null;
};

const BANDIT_CONFIG_KEYS = {
  loArmName: armName,
  hiArmName: armName,
  loArmScore: numberBetween(-1e6, 1e6),
  hiArmHiScore: numberBetween(-1e6, 1e6),
  hiArmLoScore: numberBetween(-1e6, 1e6),
  hiArmHiScoreProb: numberBetween(0, 1),
} as const;

/**
 * RAGEN's initial observation, verbatim: note the trailing spaces after "pull.", "Rules:" and "names." and the
 * final newline (they are in RAGEN's INIT_PROMPT and therefore in the distribution the published models saw).
 */
export function banditPrompt(nameA: string, nameB: string): string {
  return (
    'You are playing a bandit game. Goal: Maximize your total reward by choosing which arm to pull. \n' +
    'Game Rules: \n' +
    `1. There are 2 arms, named ${nameA} and ${nameB}\n` +
    '2. Each arm has its own reward distribution, related to their names. \n' +
    "3. Analyze the symbolic meaning of each arm's name to guess how their reward distribution might behave.\n" +
    '4. Based on the symbolic meaning of their names, which arm do you think is more likely to give higher rewards ' +
    `on average? Choose between ${nameA} and ${nameB}, and output like <answer> ${nameA} </answer> or ` +
    `<answer> ${nameB} </answer>.\n`
  );
}

export class BanditEnv implements Env {
  readonly tag: string;
  readonly config: Readonly<BanditConfig>;
  readonly spec: EnvSpec;
  /** The two arm names in action-id order (id = index + 1); the order is reshuffled by every reset. */
  actionNames: readonly string[];

  private rng: Rng | null = null;
  private observation = '';

  constructor(tag: 'Bandit' | 'BanditTest', config?: Record<string, unknown>) {
    validateConfig(tag, config, BANDIT_CONFIG_KEYS);
    const merged = { ...BANDIT_DEFAULTS[tag], ...definedEntries(config) } as BanditConfig;
    if (merged.loArmName.trim().toLowerCase() === merged.hiArmName.trim().toLowerCase()) {
      throw new Error(
        `${tag}: loArmName and hiArmName must differ (case-insensitively), both are '${merged.hiArmName}'`,
      );
    }
    this.tag = tag;
    this.config = Object.freeze(merged);
    this.actionNames = [merged.loArmName, merged.hiArmName];
    this.spec = { tag, instruction: '', gridVocab: null, maxActionsPerTraj: 1, maxTokens: null };
  }

  reset(seed: number): string {
    checkSeed(seed);
    this.rng = Rng.fromSeed(seed, 'bandit');
    const { loArmName, hiArmName } = this.config;
    this.actionNames = this.rng.float() < 0.5 ? [loArmName, hiArmName] : [hiArmName, loArmName];
    this.observation = banditPrompt(this.actionNames[0], this.actionNames[1]);
    return this.observation;
  }

  /** Pulls the named arm. Every valid pull ends the episode (RAGEN's bandit is single-step). */
  step(action: string): StepResult {
    const rng = this.requireReset();
    const index = lookupAction(this.actionNames, action);
    if (index < 0) {
      return {
        observation: this.observation,
        reward: 0,
        done: false,
        info: { success: false, actionIsValid: false, actionIsEffective: false },
      };
    }
    const armName = this.actionNames[index];
    const isHiArm = armName === this.config.hiArmName;
    let reward = this.config.loArmScore;
    if (isHiArm) {
      reward = rng.float() < this.config.hiArmHiScoreProb ? this.config.hiArmHiScore : this.config.hiArmLoScore;
    }
    this.observation = `${armName}: ${formatPythonFloat(reward)} points`;
    return {
      observation: this.observation,
      reward,
      done: true,
      info: { success: isHiArm, actionIsValid: true, actionIsEffective: true },
    };
  }

  render(): string {
    this.requireReset();
    return this.observation;
  }

  private requireReset(): Rng {
    if (!this.rng) throw new Error(`${this.tag}: call reset(seed) before step() or render()`);
    return this.rng;
  }
}
