// Fuzzing the run config: any file content and any --set a user writes either gives a RunConfig or a ConfigError
// whose message names a key or the source, never another exception, a hang or a silently dropped key; an accepted
// config survives its own config.json round trip (what --resume reads back).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ConfigError,
  applyOverrides,
  configDifferences,
  loadConfigText,
  parseRunConfig,
  type RunConfig,
} from '../../../src/starpo/config';
import { presetConfig } from '../../../src/starpo/presets';
import { fuzzParams } from './budget';

function configOrError<T>(f: () => T): T | null {
  try {
    return f();
  } catch (err) {
    expect(err, String(err)).toBeInstanceOf(ConfigError);
    expect((err as Error).message.length).toBeGreaterThan(0);
    return null;
  }
}

const roundTrips = (config: RunConfig) =>
  expect(configDifferences(parseRunConfig(JSON.parse(JSON.stringify(config))), config)).toEqual([]);

/** Real key paths (so values land where validation is interesting) mixed with typos and hostile keys. */
const KEY_PATHS = [
  'actor.lr',
  'actor.betas',
  'actor.ppoMiniBatchSize',
  'actor.ppoMicroBatchSize',
  'actor.clipRatioHigh',
  'critic.lr',
  'agent.envGroups',
  'agent.groupSize',
  'agent.maxTurn',
  'agent.trainEnvs',
  'agent.trainEnvs.0.nGroups',
  'agent.trainEnvs.0.config',
  'agent.trainEnvs.0.config.numBoxes',
  'agent.trainEnvs.0.config.dimRoom',
  'agent.valEnvs.0.tag',
  'rollout.temperature',
  'rollout.maxNewTokens',
  'filter.ratio',
  'filter.strategy',
  'algorithm.advEstimator',
  'algorithm.rewardNormalization.method',
  'model.tiny.numHeads',
  'model.path',
  'trainer.totalSteps',
  'trainer.seed',
  'echoTrap.fraction',
  'actor.clip_ratio_high',
  'actr.lr',
  '__proto__.x',
  'constructor',
  'agent.trainEnvs.99.nGroups',
  'model',
  'agent..tag',
  '',
];

const scalar = fc.oneof(
  fc.integer({ min: -3, max: 300 }),
  fc.constantFrom(
    0,
    1e-45,
    1e39,
    -1,
    0.25,
    1.5,
    NaN,
    Infinity,
    null,
    true,
    'gae',
    'grpo',
    'Bandit',
    'SimpleSokoban',
    'x',
  ),
  fc.double(),
  fc.string({ maxLength: 10 }),
);
const value: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  v: fc.oneof(
    { depthSize: 'small' },
    scalar,
    fc.array(tie('v'), { maxLength: 3 }),
    fc.dictionary(fc.constantFrom('tag', 'nGroups', 'config', 'numBoxes', 'lr', '__proto__', 'a'), tie('v'), {
      maxKeys: 3,
    }),
  ),
})).v;

/** A YAML-ish text for `--set key=value`: what a user types. */
const setText = fc
  .tuple(
    fc.constantFrom(...KEY_PATHS),
    fc.oneof(
      fc.constantFrom('1e-6', '[1, 2]', '{tag: Bandit, nGroups: 8}', 'null', 'true', '{', '[', "'", '-', '1e39', '0'),
      fc.string({ maxLength: 12 }),
    ),
  )
  .map(([k, v]) => `${k}=${v}`);

describe('config fuzz', () => {
  it('random values at random key paths of a preset: a RunConfig or a ConfigError, and accepted ones round-trip', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('bandit-tiny', 'sokoban-tiny', 'frozenlake-tiny'),
        fc.dictionary(fc.constantFrom(...KEY_PATHS), value, { maxKeys: 3 }),
        (preset, edits) => {
          // Build a nested input object from dotted paths (arrays by index), as a config file would spell it.
          const input: Record<string, unknown> = {};
          for (const [dotted, v] of Object.entries(edits)) {
            const parts = dotted.split('.');
            let node = input;
            parts.slice(0, -1).forEach((p) => {
              // Own properties only: reading node['__proto__'] would walk into Object.prototype and pollute it.
              if (!Object.hasOwn(node, p) || typeof node[p] !== 'object' || node[p] === null) {
                Object.defineProperty(node, p, { value: {}, enumerable: true, writable: true, configurable: true });
              }
              node = node[p] as Record<string, unknown>;
            });
            Object.defineProperty(node, parts[parts.length - 1], {
              value: v,
              enumerable: true,
              writable: true,
              configurable: true,
            });
          }
          const base = presetConfig(preset);
          const config = configOrError(() =>
            parseRunConfig({ ...JSON.parse(JSON.stringify(base)), ...input }, 'fuzz.json'),
          );
          if (config) roundTrips(config);
        },
      ),
      fuzzParams(400, 15_000),
    );
  });

  it('random --set overrides: a RunConfig or a ConfigError (typos, bad YAML, indexes past the end, hostile keys)', () => {
    fc.assert(
      fc.property(fc.array(setText, { minLength: 1, maxLength: 3 }), (overrides) => {
        const config = configOrError(() => applyOverrides(presetConfig('bandit-tiny'), overrides));
        if (config) roundTrips(config);
      }),
      fuzzParams(600, 10_000),
    );
  });

  it('random file text, YAML and JSON: a RunConfig or a ConfigError naming the file', () => {
    const text = fc.oneof(
      fc.string({ maxLength: 80 }),
      value.map((v) => JSON.stringify(v) ?? 'null'),
      fc.constantFrom(
        'actor:\n  lr: [1, 2\n',
        '{"actor": {"lr":',
        '---\n- a\n- b\n',
        'actor: &a\n  lr: *a\n',
        '{"__proto__": {}}',
        'a: b: c',
      ),
    );
    fc.assert(
      fc.property(text, fc.constantFrom('yaml', 'json') as fc.Arbitrary<'yaml' | 'json'>, (body, format) => {
        try {
          loadConfigText(body, format, 'user.cfg');
        } catch (err) {
          expect(err, String(err)).toBeInstanceOf(ConfigError);
          expect((err as Error).message).toMatch(/user\.cfg|config key/);
        }
      }),
      fuzzParams(1500, 10_000),
    );
  });
});
