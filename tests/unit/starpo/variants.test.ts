// The vanilla StarPO / StarPO-S switches are defined once (src/starpo/variants.ts): RAGEN's default config is
// StarPO-S, the echo-trap preset's 'starpo' arm and the experiments' `--set` list are vanilla StarPO.
import { describe, expect, it } from 'vitest';
import { VANILLA } from '../../../experiments/lib/configs';
import { applyOverrides, defaultRunConfig, type RunConfig } from '../../../src/starpo/config';
import { presetConfig, resolvePreset } from '../../../src/starpo/presets';
import {
  configAsOverrides,
  STARPO_S_SWITCHES,
  switchesConfig,
  VANILLA_STARPO_SWITCHES,
} from '../../../src/starpo/variants';

/** The three switches a config has on (klCoef 0 when the KL is not in the reward). */
function switchesOf(c: RunConfig) {
  expect(c.filter.strategy).toBe('ratio');
  return {
    filterRatio: c.filter.ratio,
    klCoef: c.algorithm.useKlInReward ? c.algorithm.klCoef : 0,
    clipHigh: c.actor.clipRatioHigh,
  };
}

describe('the StarPO / StarPO-S switches', () => {
  it("StarPO-S is RAGEN's default config", () => {
    expect(switchesOf(defaultRunConfig())).toEqual(STARPO_S_SWITCHES);
  });

  it("the echo-trap preset's 'starpo' arm is vanilla StarPO with the k1 KL estimator", () => {
    const vanilla = resolvePreset('echo-trap').arms.find((a) => a.name === 'starpo')!.config;
    expect(switchesOf(vanilla)).toEqual(VANILLA_STARPO_SWITCHES);
    expect(vanilla.algorithm.klEstimator).toBe('kl');
  });

  it("the experiments' vanilla overrides give the same config as the switches merged into the preset", () => {
    const base = presetConfig('frozenlake-tiny');
    const viaOverrides = applyOverrides(base, VANILLA);
    expect(switchesOf(viaOverrides)).toEqual(VANILLA_STARPO_SWITCHES);
    expect(viaOverrides).toEqual(applyOverrides(base, configAsOverrides(switchesConfig(VANILLA_STARPO_SWITCHES))));
    expect(VANILLA).toContain('filter.ratio=1');
    expect(VANILLA).toContain('algorithm.klCoef=0.001');
  });

  it('StarPO-S switches written over vanilla StarPO give the default switches back', () => {
    const back = applyOverrides(
      applyOverrides(defaultRunConfig(), VANILLA),
      configAsOverrides(switchesConfig(STARPO_S_SWITCHES)),
    );
    expect(switchesOf(back)).toEqual(STARPO_S_SWITCHES);
    expect(back.algorithm).toEqual(defaultRunConfig().algorithm);
  });
});
