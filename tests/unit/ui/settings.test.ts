import { describe, expect, it } from 'vitest';
import { presetConfig } from '../../../src/starpo/presets';
import {
  BROWSER_PRESETS,
  browserPresetProblem,
  checkKnob,
  knobNotANumber,
  KNOB_NAMES,
  KNOB_SPECS,
  knobsOf,
  readSettingsSearch,
  runConfigFor,
  settingsFromSearch,
  settingsProblem,
  settingsToSearch,
  spreadGroups,
  withKnob,
  VANILLA_STARPO_SWITCHES,
} from '../../../src/ui/settings';

describe('playground settings in the URL', () => {
  it('defaults to bandit-tiny on auto with no knobs', () => {
    expect(settingsFromSearch('')).toEqual({ preset: 'bandit-tiny', backend: 'auto', workers: 'auto', knobs: {} });
  });

  it('round-trips every knob through the query string', () => {
    const search =
      '?preset=frozenlake-tiny&backend=wasm&env=FrozenLake&algo=grpo&filter=0.5&kl=0.001&clipHigh=0.2&groups=4&groupSize=2&turns=3&actions=2&seed=7&steps=5&val=6';
    const settings = settingsFromSearch(search);
    expect(settings.knobs).toEqual({
      env: 'FrozenLake',
      algorithm: 'grpo',
      filterRatio: 0.5,
      klCoef: 0.001,
      clipHigh: 0.2,
      envGroups: 4,
      groupSize: 2,
      maxTurn: 3,
      maxActionsPerTurn: 2,
      seed: 7,
      totalSteps: 5,
      valGroups: 6,
    });
    expect(settingsFromSearch(settingsToSearch(settings))).toEqual(settings);
  });

  it('reads and writes the cores setting (workers=1|2, auto by default), and names a bad value', () => {
    expect(settingsFromSearch('?workers=2').workers).toBe(2);
    expect(settingsFromSearch('?workers=1').workers).toBe(1);
    expect(settingsToSearch(settingsFromSearch('?workers=1&seed=3'))).toBe('?workers=1&seed=3');
    expect(settingsToSearch(settingsFromSearch('?workers=auto'))).toBe('');
    const r = readSettingsSearch('?workers=3&seed=2');
    expect(r.settings.workers).toBe('auto');
    expect(r.drafts).toEqual({ workers: '3' });
    expect(r.problems[0].message).toBe("cores (URL parameter 'workers') must be 1, 2 or auto, not '3'");
  });

  it('keeps parameters it does not own and drops defaults', () => {
    const s = withKnob(settingsFromSearch('?seed=3'), 'seed', undefined);
    expect(settingsToSearch(s, '?seed=3&debug=1')).toBe('?debug=1');
  });

  it('names the parameter of a bad value, in plain words', () => {
    expect(() => settingsFromSearch('?preset=nope')).toThrow(/unknown preset 'nope'/);
    expect(() => settingsFromSearch('?backend=metal')).toThrow(/unknown backend 'metal'/);
    expect(() => settingsFromSearch('?groups=2.5')).toThrow(
      "env groups (P) (URL parameter 'groups') needs a whole number from 1 to 64; 2.5 is not a whole number",
    );
    expect(() => settingsFromSearch('?filter=abc')).toThrow(
      /'filter'\) needs a number from 0.01 to 1; 'abc' is not a number/,
    );
    expect(() => settingsFromSearch('?filter=2')).toThrow(/'filter'\) needs a number from 0.01 to 1; 2 is too large/);
    expect(() => settingsFromSearch('?env=Chess')).toThrow(/'Chess' is not an environment/);
    expect(() => settingsFromSearch('?algo=dpo')).toThrow(/'dpo' is not an algorithm/);
  });

  it('keeps everything usable from a link with bad values, and reports each bad field with its raw text', () => {
    const r = readSettingsSearch('?preset=chess&groups=100000&steps=1e9&turns=50&groupSize=2&seed=4');
    expect(r.settings).toEqual({
      preset: 'bandit-tiny',
      backend: 'auto',
      workers: 'auto',
      knobs: { groupSize: 2, seed: 4 },
    });
    expect(r.drafts).toEqual({ preset: 'chess', envGroups: '100000', totalSteps: '1e9', maxTurn: '50' });
    expect(r.problems.map((p) => p.fields)).toEqual([['preset'], ['envGroups'], ['maxTurn'], ['totalSteps']]);
    expect(r.problems[1].message).toMatch(/from 1 to 64; 100000 is too large/);
  });
});

describe('the validation groups knob (URL val)', () => {
  it("shares the count among the preset's validation blocks, keeping their settings, and follows a changed env", () => {
    const base = presetConfig('frozenlake-tiny');
    const fl = runConfigFor({ preset: 'frozenlake-tiny', backend: 'wasm', workers: 'auto', knobs: { valGroups: 4 } });
    expect(fl.agent.valGroups).toBe(4);
    expect(fl.agent.valEnvs).toEqual([{ ...base.agent.valEnvs[0], nGroups: 4 }]);
    expect(fl.agent.trainEnvs).toEqual(base.agent.trainEnvs); // training is the preset's
    // bandit-tiny validates on two name pairs, 16 + 16: the count is spread over both.
    const b = runConfigFor({ preset: 'bandit-tiny', backend: 'wasm', workers: 'auto', knobs: { valGroups: 5 } });
    expect(b.agent.valEnvs.map((x) => [x.tag, x.nGroups])).toEqual([
      ['Bandit', 3],
      ['BanditTest', 2],
    ]);
    expect(b.agent.valGroups).toBe(5);
    // Another env: its one validation block, at the knob's count.
    const other = runConfigFor({
      preset: 'bandit-tiny',
      backend: 'wasm',
      workers: 'auto',
      knobs: { env: 'FrozenLake', valGroups: 3 },
    });
    expect(other.agent.valEnvs.map((x) => [x.tag, x.nGroups])).toEqual([['FrozenLake', 3]]);
    expect(knobsOf(fl).valGroups).toBe(4);
  });
});

describe('one set of limits for the form and the URL', () => {
  it('every numeric knob has limits, and checkKnob accepts exactly the values inside them', () => {
    for (const name of KNOB_NAMES) {
      const spec = KNOB_SPECS[name];
      if (spec.kind !== 'int' && spec.kind !== 'number') continue;
      expect(spec.min, name).toBeDefined();
      expect(spec.max, name).toBeDefined();
      expect(checkKnob(name, String(spec.min)).ok, `${name} min`).toBe(true);
      expect(checkKnob(name, String(spec.max)).ok, `${name} max`).toBe(true);
      expect(checkKnob(name, String(spec.max! * 10 + 1)).ok, `${name} over max`).toBe(false);
      expect(checkKnob(name, String(spec.min! - 1)).ok, `${name} under min`).toBe(false);
      // The same text through the URL: accepted iff checkKnob accepts it.
      for (const text of [String(spec.min), String(spec.max! * 10 + 1), 'x']) {
        const fromUrl = readSettingsSearch(`?${spec.param}=${encodeURIComponent(text)}`);
        expect(fromUrl.problems.length === 0, `${name}=${text}`).toBe(checkKnob(name, text).ok);
      }
    }
  });
});

describe('settings problems in plain words', () => {
  it('a filter that keeps no group names both fields and says how to fix it', () => {
    const p = settingsProblem({
      preset: 'bandit-tiny',
      backend: 'auto',
      workers: 'auto',
      knobs: { filterRatio: 0.01 },
    });
    expect(p?.fields).toEqual(['filterRatio', 'envGroups']);
    expect(p?.message).toBe(
      'The filter keeps the top 0.01 × 8 env groups, which rounds down to 0: no group would be trained on. Raise the filter ratio to at least 0.13.',
    );
    // Fixing either field clears it; more env groups are suggested only where the limit allows them.
    expect(
      settingsProblem({ preset: 'bandit-tiny', backend: 'auto', workers: 'auto', knobs: { filterRatio: 0.13 } }),
    ).toBeNull();
    expect(
      settingsProblem({ preset: 'bandit-tiny', backend: 'auto', workers: 'auto', knobs: { filterRatio: 0.05 } })
        ?.message,
    ).toMatch(/0\.13, or use at least 20 env groups\.$/);
    expect(
      settingsProblem({
        preset: 'bandit-tiny',
        backend: 'auto',
        workers: 'auto',
        knobs: { filterRatio: 0.05, envGroups: 20 },
      }),
    ).toBeNull();
  });

  it('the classroom preset trains with few env groups: its StarPO-S filter (top_p) keeps a share of the std, not a count of groups', () => {
    const settings = {
      preset: 'echo-trap' as const,
      backend: 'auto' as const,
      workers: 'auto' as const,
      knobs: { envGroups: 2, groupSize: 2 },
    };
    expect(settingsProblem(settings)).toBeNull();
    const s = runConfigFor(settings, 'starpo-s');
    expect([s.filter.strategy, s.filter.minScore, s.agent.envGroups]).toEqual(['top_p', 0.36, 2]);
    // 2 x 2 = 4 trajectories per step: the mini-batch shrinks to them instead of the config refusing the setup.
    expect([s.actor.ppoMiniBatchSize, s.actor.ppoMicroBatchSize]).toEqual([4, 4]);
    // The lesson's env keeps its payout when the knobs resize it.
    expect(s.agent.trainEnvs[0].config).toEqual({ hiArmHiScoreProb: 1 });
  });

  it('GRPO with one rollout per group is explained', () => {
    const p = settingsProblem({
      preset: 'bandit-tiny',
      backend: 'auto',
      workers: 'auto',
      knobs: { algorithm: 'grpo', groupSize: 1, filterRatio: 1 },
    });
    expect(p).toEqual({
      fields: ['groupSize', 'algorithm'],
      message: expect.stringMatching(/group size \(N\) of at least 2/),
    });
  });

  it('valid settings have no problem', () => {
    expect(
      settingsProblem({ preset: 'frozenlake-tiny', backend: 'wasm', workers: 'auto', knobs: { groupSize: 2 } }),
    ).toBeNull();
  });
});

describe('settings -> RunConfig', () => {
  it('with no knobs is exactly the preset config (plus the backend)', () => {
    const config = runConfigFor({ preset: 'bandit-tiny', backend: 'auto', workers: 'auto', knobs: {} });
    expect(config).toEqual(presetConfig('bandit-tiny'));
  });

  it('applies the vanilla StarPO switches and GRPO', () => {
    const settings = {
      preset: 'frozenlake-tiny' as const,
      backend: 'wasm' as const,
      workers: 'auto' as const,
      knobs: { ...VANILLA_STARPO_SWITCHES, algorithm: 'grpo' as const },
    };
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
    const c = runConfigFor({
      preset: 'bandit-tiny',
      backend: 'auto',
      workers: 'auto',
      knobs: { env: 'FrozenLake', envGroups: 4 },
    });
    expect(c.agent.trainEnvs).toEqual([{ tag: 'FrozenLake', nGroups: 4 }]);
    expect(c.agent.envGroups).toBe(4);
    expect(c.agent.valEnvs).toEqual([{ tag: 'FrozenLake', nGroups: c.agent.valGroups }]);
  });

  it("a changed group count keeps the preset's env settings: frozenlake-noslip-tiny's lakes still do not slip", () => {
    const c = runConfigFor({
      preset: 'frozenlake-noslip-tiny',
      backend: 'auto',
      workers: 'auto',
      knobs: { envGroups: 4, env: 'FrozenLake' },
    });
    expect(c.agent.trainEnvs).toEqual([
      { tag: 'FrozenLake', nGroups: 4, config: { observationFormat: 'grid_coord', successRate: 1 } },
    ]);
    expect(c.agent.valEnvs).toEqual(presetConfig('frozenlake-noslip-tiny').agent.valEnvs);
  });

  it("a changed group count keeps a multi-block preset's lakes: echo-trap-frozenlake's 8 fixed maps share the new count", () => {
    const lakes = presetConfig('echo-trap-frozenlake', 'starpo').agent.trainEnvs;
    const at = (envGroups: number) =>
      runConfigFor({ preset: 'echo-trap-frozenlake', backend: 'auto', workers: 'auto', knobs: { envGroups } }, 'starpo')
        .agent;
    expect(at(8).trainEnvs).toEqual(lakes);
    expect(at(16).trainEnvs).toEqual(lakes.map((b) => ({ ...b, nGroups: 2 })));
    expect(at(4).trainEnvs).toEqual(lakes.slice(0, 4));
    const eleven = at(11);
    expect(eleven.envGroups).toBe(11);
    expect(eleven.trainEnvs.map((b) => b.nGroups)).toEqual([2, 2, 2, 1, 1, 1, 1, 1]);
    expect(eleven.trainEnvs.map((b) => b.config)).toEqual(lakes.map((b) => b.config));
  });

  it('spreadGroups shares a count in proportion to the blocks and drops blocks left with none', () => {
    expect(spreadGroups([{ nGroups: 3 }, { nGroups: 1 }], 8).map((b) => b.nGroups)).toEqual([6, 2]);
    expect(spreadGroups([{ nGroups: 3 }, { nGroups: 1 }], 2).map((b) => b.nGroups)).toEqual([2]);
    expect(spreadGroups([{ nGroups: 3 }, { nGroups: 1 }], 5).map((b) => b.nGroups)).toEqual([4, 1]);
  });

  it('shrinks the mini-batch to the kept trajectories when a small batch would not fill it', () => {
    // bandit-tiny: mini-batch 16; 4 groups x 2 with filter 0.25 keeps 1 group x 2 = 2 trajectories.
    const c = runConfigFor({
      preset: 'bandit-tiny',
      backend: 'auto',
      workers: 'auto',
      knobs: { envGroups: 4, groupSize: 2 },
    });
    expect(c.actor.ppoMiniBatchSize).toBe(2);
    expect(c.actor.ppoMicroBatchSize).toBe(2);
  });

  it('a filter that keeps no group is a ConfigError naming filter.ratio', () => {
    expect(() =>
      runConfigFor({ preset: 'bandit-tiny', backend: 'auto', workers: 'auto', knobs: { filterRatio: 0.05 } }),
    ).toThrow(/filter\.ratio/);
  });

  it('echo-trap arms keep their own StarPO / StarPO-S switches', () => {
    const settings = {
      preset: 'echo-trap' as const,
      backend: 'auto' as const,
      workers: 'auto' as const,
      knobs: { filterRatio: 0.5, seed: 3 },
    };
    const vanilla = runConfigFor(settings, 'starpo');
    const s = runConfigFor(settings, 'starpo-s');
    expect(vanilla.filter.ratio).toBe(1);
    expect([s.filter.strategy, s.filter.value, s.filter.includeZero, s.filter.minScore]).toEqual([
      'top_p',
      0.9,
      false,
      0.36,
    ]);
    expect(vanilla.trainer.seed).toBe(3);
    expect(s.trainer.seed).toBe(3);
  });

  it('offers only presets a tab can train; a pretrained-model preset in a link says what it needs', () => {
    expect(BROWSER_PRESETS).not.toContain('sokoban-qwen');
    expect(BROWSER_PRESETS).toEqual(expect.arrayContaining(['bandit-tiny', 'sokoban-tiny', 'echo-trap']));
    expect(browserPresetProblem('bandit-tiny')).toBeNull();
    const r = readSettingsSearch('?preset=sokoban-qwen');
    expect(r.settings.preset).toBe('bandit-tiny');
    expect(r.problems[0].message).toContain('ragen train --preset sokoban-qwen --set model=PATH');
  });

  it('says a number field is empty, or that what was typed is not a number', () => {
    expect(checkKnob('envGroups', '')).toEqual({
      ok: false,
      error: 'needs a whole number from 1 to 64; the field is empty',
    });
    expect(checkKnob('envGroups', 'abc')).toEqual({
      ok: false,
      error: "needs a whole number from 1 to 64; 'abc' is not a number",
    });
    expect(knobNotANumber('envGroups')).toBe(
      'env groups (P) needs a whole number from 1 to 64; what was typed is not a number',
    );
  });
});
