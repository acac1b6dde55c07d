// Vanilla StarPO and StarPO-S: the three switches that tell them apart (paper §4.5-4.6, spec §4.5-4.6), written
// once. The echo-trap preset's two arms, the playground's "StarPO (vanilla)" / "StarPO-S" buttons and the
// experiments' vanilla runs all read them from here.
//
// StarPO-S is RAGEN's default (defaultRunConfig()): the uncertainty filter keeps the top 25 % of env groups by
// in-group reward std, no KL term, and clip-higher (ε_high 0.28 against ε_low 0.2). Vanilla StarPO, as the paper
// ran it, keeps every group, folds a KL penalty of 0.001 (k1 estimator) into the reward, and clips symmetrically.
import type { RunConfigInput } from './config';

/** The switches, as the playground's knobs name them. */
export interface StarpoSwitches {
  /** Fraction of env groups the uncertainty filter keeps (filter.ratio; 1 = no filter). */
  readonly filterRatio: number;
  /** KL penalty coefficient folded into the reward (algorithm.klCoef; 0 = no KL term). */
  readonly klCoef: number;
  /** Upper clip ε_high of the PPO ratio (actor.clipRatioHigh). */
  readonly clipHigh: number;
}

/** StarPO-S (RAGEN's default): filter 25 %, no KL, clip-higher 0.28. */
export const STARPO_S_SWITCHES = { filterRatio: 0.25, klCoef: 0, clipHigh: 0.28 } as const satisfies StarpoSwitches;
/** Vanilla StarPO as the paper ran it: no filter, KL 0.001 in the reward, symmetric clip 0.2. */
export const VANILLA_STARPO_SWITCHES = {
  filterRatio: 1,
  klCoef: 0.001,
  clipHigh: 0.2,
} as const satisfies StarpoSwitches;

/** The config a set of switches writes: the ratio filter, the KL in the reward (k1, on when klCoef > 0), ε_high. */
export function switchesConfig(s: StarpoSwitches): RunConfigInput {
  return {
    filter: { strategy: 'ratio', ratio: s.filterRatio },
    algorithm: { useKlInReward: s.klCoef > 0, klCoef: s.klCoef, klEstimator: 'kl' },
    actor: { clipRatioHigh: s.clipHigh },
  };
}

/** Vanilla StarPO's config departures (the echo-trap preset's 'starpo' arm). */
export const VANILLA_STARPO: RunConfigInput = switchesConfig(VANILLA_STARPO_SWITCHES);

/** A partial config as `--set key=value` overrides (nested keys joined by dots), e.g. for `ragen train --set`. */
export function configAsOverrides(input: RunConfigInput): string[] {
  const out: string[] = [];
  const walk = (value: unknown, key: string) => {
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
      for (const [k, v] of Object.entries(value)) walk(v, key ? `${key}.${k}` : k);
    } else {
      out.push(`${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`);
    }
  };
  walk(input, '');
  return out;
}
