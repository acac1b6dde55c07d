import { describe, expect, it } from 'vitest';
import { presetConfig } from '../../../src/starpo/presets';
import {
  knobsOf,
  runConfigFor,
  settingsFromSearch,
  settingsToSearch,
  withKnob,
  VANILLA_STARPO_SWITCHES,
} from '../../../src/ui/settings';

describe('playground settings in the URL', () => {
  it('defaults to bandit-tiny on auto with no knobs', () => {
    expect(settingsFromSearch('')).toEqual({ preset: 'bandit-tiny', backend: 'auto', knobs: {} });
  });

  it('round-trips every knob through the query string', () => {
    const search = '?preset=frozenlake-tiny&backend=wasm&env=FrozenLake&algo=grpo&filter=0.5&kl=0.001&clipHigh=0.2&groups=4&groupSize=2&turns=3&actions=2&seed=7&steps=5';
    const settings = settingsFromSearch(search);
    expect(settings.knobs).toEqual({
      env: 'FrozenLake', algorithm: 'grpo', filterRatio: 0.5, klCoef: 0.001, clipHigh: 0.2,
      envGroups: 4, groupSize: 2, maxTurn: 3, maxActionsPerTurn: 2, seed: 7, totalSteps: 5,
    });
    expect(settingsFromSearch(settingsToSearch(settings))).toEqual(settings);
  });

  it('keeps parameters it does not own and drops defaults', () => {
    const s = withKnob(settingsFromSearch('?seed=3'), 'seed', undefined);
    expect(settingsToSearch(s, '?seed=3&debug=1')).toBe('?debug=1');
  });

  it('names the parameter of a bad value', () => {
    expect(() => settingsFromSearch('?preset=nope')).toThrow(/unknown preset 'nope'/);
    expect(() => settingsFromSearch('?backend=metal')).toThrow(/unknown backend 'metal'/);
    expect(() => settingsFromSearch('?groups=2.5')).toThrow(/'groups' must be an integer/);
    expect(() => settingsFromSearch('?filter=abc')).toThrow(/'filter' must be a number/);
    expect(() => settingsFromSearch('?filter=2')).toThrow(/'filter' must be between 0 and 1/);
    expect(() => settingsFromSearch('?env=Chess')).toThrow(/unknown env 'Chess'/);
    expect(() => settingsFromSearch('?algo=dpo')).toThrow(/unknown algorithm 'dpo'/);
  });
});

describe('settings -> RunConfig', () => {
  it('with no knobs is exactly the preset config (plus the backend)', () => {
    const config = runConfigFor({ preset: 'bandit-tiny', backend: 'auto', knobs: {} });
    expect(config).toEqual(presetConfig('bandit-tiny'));
  });

  it('applies the vanilla StarPO switches and GRPO', () => {
    const settings = { preset: 'frozenlake-tiny' as const, backend: 'wasm' as const, knobs: { ...VANILLA_STARPO_SWITCHES, algorithm: 'grpo' as const } };
    const c = runConfigFor(settings);
    expect(c.filter.ratio).toBe(1);
    expect(c.algorithm.useKlInReward).toBe(true);
    expect(c.algorithm.klCoef).toBe(0.001);
    expect(c.actor.clipRatioHigh).toBe(0.2);
    expect(c.algorithm.advEstimator).toBe('grpo');
    expect(c.algorithm.rewardNormalization.method).toBe('mean_std');
    expect(c.trainer.backend).toBe('wasm');
    expect(knobsOf(c)).toMatchObject({ filterRatio: 1, klCoef: 0.001, clipHigh: 0.2, algorithm: 'grpo' });
  });

  it('changing the env rewrites train and validation blocks, keeping the group sums valid', () => {
    const c = runConfigFor({ preset: 'bandit-tiny', backend: 'auto', knobs: { env: 'FrozenLake', envGroups: 4 } });
    expect(c.agent.trainEnvs).toEqual([{ tag: 'FrozenLake', nGroups: 4 }]);
    expect(c.agent.envGroups).toBe(4);
    expect(c.agent.valEnvs).toEqual([{ tag: 'FrozenLake', nGroups: c.agent.valGroups }]);
  });

  it('shrinks the mini-batch to the kept trajectories when a small batch would not fill it', () => {
    // bandit-tiny: mini-batch 16; 4 groups x 2 with filter 0.25 keeps 1 group x 2 = 2 trajectories.
    const c = runConfigFor({ preset: 'bandit-tiny', backend: 'auto', knobs: { envGroups: 4, groupSize: 2 } });
    expect(c.actor.ppoMiniBatchSize).toBe(2);
    expect(c.actor.ppoMicroBatchSize).toBe(2);
  });

  it('a filter that keeps no group is a ConfigError naming filter.ratio', () => {
    expect(() => runConfigFor({ preset: 'bandit-tiny', backend: 'auto', knobs: { filterRatio: 0.05 } })).toThrow(/filter\.ratio/);
  });

  it('echo-trap arms keep their own StarPO / StarPO-S switches', () => {
    const settings = { preset: 'echo-trap' as const, backend: 'auto' as const, knobs: { filterRatio: 0.5, seed: 3 } };
    const vanilla = runConfigFor(settings, 'starpo');
    const s = runConfigFor(settings, 'starpo-s');
    expect(vanilla.filter.ratio).toBe(1);
    expect(s.filter.ratio).toBe(0.25);
    expect(vanilla.trainer.seed).toBe(3);
    expect(s.trainer.seed).toBe(3);
  });
});
