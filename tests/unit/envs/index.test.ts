import { describe, expect, it } from 'vitest';
import { ENV_TAGS, describeGridVocab, envSpec, formatPythonFloat, makeEnv } from '../../../envs/index';
import { Rng } from '../../../envs/random';

describe('makeEnv', () => {
  it("knows RAGEN's six tags and RAGEN-2's two Coord tags, and builds each one", () => {
    expect([...ENV_TAGS].sort()).toEqual(
      [
        'Bandit',
        'BanditTest',
        'CoordFrozenLake',
        'CoordSokoban',
        'FrozenLake',
        'LargerSokoban',
        'SimpleSokoban',
        'SokobanDifferentGridVocab',
      ].sort(),
    );
    for (const tag of ENV_TAGS) {
      const env = makeEnv(tag);
      expect(env.tag).toBe(tag);
      const text = env.reset(123);
      expect(typeof text).toBe('string');
      expect(env.render()).toBe(text);
      expect(makeEnv(tag).reset(123)).toBe(text); // same seed, same state, fresh instance
    }
  });

  it("action names are in RAGEN's id order", () => {
    expect(makeEnv('SimpleSokoban').actionNames).toEqual(['Up', 'Down', 'Left', 'Right']);
    expect(makeEnv('FrozenLake').actionNames).toEqual(['Left', 'Down', 'Right', 'Up']);
  });

  it('an unknown tag lists the valid tags', () => {
    expect(() => makeEnv('Sokoban')).toThrow(
      "unknown env tag 'Sokoban' (valid tags: Bandit, BanditTest, SimpleSokoban, LargerSokoban, SokobanDifferentGridVocab, CoordSokoban, FrozenLake, CoordFrozenLake)",
    );
  });

  it('an unknown config key names the key, the tag and the valid keys', () => {
    expect(() => makeEnv('SimpleSokoban', { numBox: 2 })).toThrow(
      "SimpleSokoban: unknown config key 'numBox' (valid keys: dimRoom, numBoxes, searchDepth, maxSteps, level, observationFormat)",
    );
    expect(() => makeEnv('FrozenLake', { dimRoom: [4, 4] })).toThrow(/FrozenLake: unknown config key 'dimRoom'/);
    expect(() => makeEnv('Bandit', { size: 2 })).toThrow(/Bandit: unknown config key 'size'/);
  });

  it('a wrongly typed value names the key and what was expected', () => {
    expect(() => makeEnv('SimpleSokoban', { numBoxes: '2' })).toThrow(
      `SimpleSokoban: config 'numBoxes' must be an integer from 1 to 50, got "2"`,
    );
    expect(() => makeEnv('LargerSokoban', { dimRoom: [8] })).toThrow(/'dimRoom' must be \[rows, cols\]/);
    expect(() => makeEnv('LargerSokoban', { dimRoom: [8, 2.5] })).toThrow(/'dimRoom'/);
    expect(() => makeEnv('SimpleSokoban', { level: 42 })).toThrow(/'level' must be a string/);
    expect(() => makeEnv('FrozenLake', { p: 'high' })).toThrow(/'p' must be a number/);
    expect(() => makeEnv('Bandit', { loArmName: 3 })).toThrow(/'loArmName' must be a non-empty string/);
    expect(() => makeEnv('Bandit', [] as unknown as Record<string, unknown>)).toThrow(/config must be an object/);
  });

  it('undefined config values keep the defaults', () => {
    const env = makeEnv('SimpleSokoban', { numBoxes: undefined });
    expect(env.reset(1).split('\n')).toHaveLength(6);
  });

  it('arbitrary text as an action never throws, is invalid and changes nothing, in every env', () => {
    const rng = Rng.fromSeed(99, 'test/fuzz');
    const alphabet = 'UpDownLeftRightDragonPhoenix |<>/answer\n\t√#_0123456789';
    for (const tag of ENV_TAGS) {
      const env = makeEnv(tag);
      const start = env.reset(7);
      for (let i = 0; i < 300; i++) {
        const length = rng.int(14);
        let text = '';
        for (let k = 0; k < length; k++) text += alphabet[rng.int(alphabet.length)];
        const isName = env.actionNames.some((name) => name.toLowerCase() === text.trim().toLowerCase());
        if (isName) continue;
        const r = env.step(text);
        expect(r.info.actionIsValid).toBe(false);
        expect(r.reward).toBe(0);
        expect(env.render()).toBe(start);
      }
    }
  });
});

describe('envSpec', () => {
  it("FrozenLake: RAGEN's instruction verbatim, its vocabulary line, 10 actions, 100 tokens", () => {
    const spec = envSpec('FrozenLake');
    expect(spec.instruction).toBe(
      'You are solving the FrozenLake puzzle. Forbid the whole and go to the target. You may move to the unintended ' +
        'direction due to the slippery ice. Example answer format: <think>To forbid the hole and go to the target, ' +
        'I should go left then go up.</think><answer>Left || Up</answer>',
    );
    expect(describeGridVocab(spec.gridVocab!)).toBe(
      'P: player, _: empty, O: hole, G: goal, X: player in hole, √: player on goal',
    );
    expect(spec.maxActionsPerTraj).toBe(10);
    expect(spec.maxTokens).toBe(100);
  });

  it('Sokoban tags: both vocabularies, the push-rule instruction, 10 actions, 100 tokens', () => {
    expect(describeGridVocab(envSpec('SimpleSokoban').gridVocab!)).toBe(
      '#: wall, _: empty, O: target, √: box on target, X: box, P: player, S: player on target',
    );
    expect(describeGridVocab(envSpec('SokobanDifferentGridVocab').gridVocab!)).toBe(
      'W: wall, .: empty, G: target, C: box on target, B: box, A: player, @: player on target',
    );
    for (const tag of ['SimpleSokoban', 'LargerSokoban', 'SokobanDifferentGridVocab']) {
      const spec = envSpec(tag);
      expect(spec.instruction).toMatch(/^You are solving the Sokoban puzzle\./);
      expect(spec.instruction).toContain('<answer>Right || Right || Up</answer>');
      expect(spec).toMatchObject({ tag, maxActionsPerTraj: 10, maxTokens: 100 });
    }
  });

  it('Bandit tags: no instruction, no grid, one action', () => {
    for (const tag of ['Bandit', 'BanditTest']) {
      expect(envSpec(tag)).toEqual({ tag, instruction: '', gridVocab: null, maxActionsPerTraj: 1, maxTokens: null });
    }
  });

  it('throws for an unknown tag', () => {
    expect(() => envSpec('WebShop')).toThrow(/unknown env tag 'WebShop'/);
  });
});

describe('formatPythonFloat', () => {
  it("writes numbers as Python's str(float) does", () => {
    expect(formatPythonFloat(1)).toBe('1.0');
    expect(formatPythonFloat(0)).toBe('0.0');
    expect(formatPythonFloat(-1)).toBe('-1.0');
    expect(formatPythonFloat(-0)).toBe('-0.0');
    expect(formatPythonFloat(0.1)).toBe('0.1');
    expect(formatPythonFloat(-0.1)).toBe('-0.1');
    expect(formatPythonFloat(10.9)).toBe('10.9');
    expect(formatPythonFloat(-0.1 - 0.1 + 10.9)).toBe('10.700000000000001'); // Python: -0.1 - 0.1 + 10.9
    expect(formatPythonFloat(Number.NaN)).toBe('nan');
  });
});
