// Fuzzing the environments: whatever config, level, map or action text a user (or a model) throws at them, an env
// either works or throws one plain Error that names the tag or the board, never a RangeError, a TypeError or a
// hang; a hand-written level or map it accepts can be won; arbitrary action text never throws or changes state.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ENV_TAGS,
  isGoalReachable,
  makeEnv,
  parseFrozenLakeMap,
  parseSokobanLevel,
  solveSokoban,
  type AnyEnv,
} from '../../../envs/index';
import { fuzzParams } from './budget';

/** Runs `f`; a throw must be a plain Error (what the envs throw on purpose) whose message names one of `names`. */
function onlyNamedErrors<T>(f: () => T, names: readonly string[]): T | null {
  try {
    return f();
  } catch (err) {
    expect(Object.getPrototypeOf(err), String(err)).toBe(Error.prototype);
    expect(
      names.some((n) => (err as Error).message.includes(n)),
      (err as Error).message,
    ).toBe(true);
    return null;
  }
}

/** Values of every kind, the extremes included. */
const anyValue = fc.oneof(
  fc.integer({ min: -5, max: 30 }),
  fc.constantFrom(0, -1, 1e9, 2.5, NaN, Infinity, -0, 1e-300, Number.MAX_SAFE_INTEGER),
  fc.double({ noNaN: false }),
  fc.string({ maxLength: 12 }),
  fc.constantFrom(null, undefined, true, [], {}, [6, 6], [3, 3], [20, 21], [1e6, 1e6], ['6', '6'], [6], [6, 6, 6]),
  fc.array(fc.integer({ min: -2, max: 25 }), { maxLength: 3 }),
);

const KEYS: Record<string, readonly string[]> = {
  Sokoban: [
    'dimRoom',
    'numBoxes',
    'searchDepth',
    'maxSteps',
    'level',
    'numBox',
    '__proto__',
    'constructor',
    'observationFormat',
  ],
  FrozenLake: ['size', 'p', 'successRate', 'map', 'is_slippery', 'observationFormat'],
  Bandit: ['loArmName', 'hiArmName', 'loArmScore', 'hiArmHiScore', 'hiArmLoScore', 'hiArmHiScoreProb'],
};
const family = (tag: string) =>
  tag.includes('Sokoban') ? 'Sokoban' : tag.includes('FrozenLake') ? 'FrozenLake' : 'Bandit';

/**
 * A config of random keys and values, but never one that is valid AND slow to generate from: a room larger than
 * 8 a side with several boxes takes seconds per level (that is the generator's honest cost, not a bug).
 */
const envCase = fc.constantFrom(...ENV_TAGS).chain((tag) =>
  fc
    .tuple(fc.constant(tag), fc.dictionary(fc.constantFrom(...KEYS[family(tag)]), anyValue, { maxKeys: 3 }))
    .filter(([, config]) => {
      const room = config.dimRoom;
      const big = Array.isArray(room) && room.length === 2 && room.every((n) => Number.isInteger(n) && n > 8);
      const manyBoxes = typeof config.numBoxes === 'number' && config.numBoxes > 3;
      return !(big || manyBoxes || (typeof config.searchDepth === 'number' && config.searchDepth > 400));
    }),
);

/** Action text: real names in any case, separators, tags, whitespace and junk. */
const actionText = fc.oneof(
  fc.constantFrom(
    'Up',
    'down',
    'LEFT',
    'Right',
    'Phoenix',
    'dragon',
    'Trader',
    ' Up ',
    'Up || Down',
    '',
    '\n',
    '<answer>Up</answer>',
    '√',
    '#',
  ),
  fc.string({ maxLength: 20 }),
);

function firstState(env: AnyEnv, seed: number): string | null {
  return onlyNamedErrors(() => env.reset(seed), ['Sokoban', 'FrozenLake', 'Bandit']);
}

describe('env fuzz', () => {
  it('random configs: the env works, or one plain Error names the tag; a working env survives random actions', () => {
    fc.assert(
      fc.property(
        envCase,
        fc.nat(1_000_000),
        fc.array(actionText, { maxLength: 12 }),
        ([tag, config], seed, actions) => {
          const env = onlyNamedErrors(() => makeEnv(tag, config), [tag]);
          if (!env) return;
          const start = firstState(env, seed);
          if (start === null) return;
          for (const action of actions) {
            const before = env.render();
            const r = env.step(action);
            expect(typeof r.observation).toBe('string');
            expect(Number.isFinite(r.reward)).toBe(true);
            if (!r.info.actionIsValid) expect(env.render()).toBe(before); // an unknown action changes nothing
            if (r.done) break;
          }
          // Same seed, same first state, on a fresh instance.
          expect(makeEnv(tag, config).reset(seed)).toBe(start);
        },
      ),
      fuzzParams(400, 15_000),
    );
  });

  it('random Sokoban boards: refused with a named problem, or accepted and solvable', () => {
    const board = fc
      .tuple(fc.integer({ min: 1, max: 6 }), fc.integer({ min: 1, max: 6 }))
      .chain(([rows, cols]) =>
        fc.array(
          fc.array(fc.constantFrom('#', '_', '_', '_', 'O', '√', 'X', 'P', 'S', 'Z', ' '), {
            minLength: cols,
            maxLength: cols,
          }),
          { minLength: rows, maxLength: rows },
        ),
      )
      .map((grid) => grid.map((row) => row.join('')).join('\n'));
    let accepted = 0;
    fc.assert(
      fc.property(board, (level) => {
        const env = onlyNamedErrors(() => makeEnv('SimpleSokoban', { level }), ['Sokoban']);
        if (!env) return;
        accepted++;
        expect(solveSokoban(parseSokobanLevel(level), 500)).not.toBeNull();
      }),
      fuzzParams(3000),
    );
    expect(accepted).toBeGreaterThan(0); // the generator does reach playable boards
  });

  it('random FrozenLake maps: accepted exactly when the goal is reachable', () => {
    const map = fc
      .tuple(fc.integer({ min: 1, max: 6 }), fc.integer({ min: 1, max: 6 }))
      .chain(([rows, cols]) =>
        fc.array(fc.array(fc.constantFrom('_', '_', 'O', 'P', 'G', 'x'), { minLength: cols, maxLength: cols }), {
          minLength: rows,
          maxLength: rows,
        }),
      )
      .map((grid) => grid.map((row) => row.join('')).join('\n'));
    fc.assert(
      fc.property(map, (text) => {
        const env = onlyNamedErrors(() => makeEnv('FrozenLake', { map: text }), ['FrozenLake']);
        if (env) expect(isGoalReachable(parseFrozenLakeMap(text))).toBe(true);
      }),
      fuzzParams(3000),
    );
  });
});
