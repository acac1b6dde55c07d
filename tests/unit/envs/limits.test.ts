// Env configs that used to pass validation and then crashed mid-run (a RangeError in level generation, a level
// that can never be solved, a generator that cannot place the boxes): each is now refused up front, by makeEnv or
// by assertEnvPlayable, with one message naming the tag and the key.
import { describe, expect, it } from 'vitest';
import { MAX_GRID_SIDE, assertEnvPlayable, isSokobanSolvable, makeEnv, parseSokobanLevel } from '../../../envs/index';

describe('env sizes have upper bounds', () => {
  it('a Sokoban room larger than MAX_GRID_SIDE is refused before any level is generated', () => {
    // 1000x1000 used to overflow the generator's recursion (RangeError) on the first reset.
    expect(() => makeEnv('SimpleSokoban', { dimRoom: [1000, 1000] })).toThrow(
      `SimpleSokoban: config 'dimRoom' must be [rows, cols], two integers from 3 to ${MAX_GRID_SIDE}, got [1000, 1000]`,
    );
    expect(() => makeEnv('LargerSokoban', { dimRoom: [MAX_GRID_SIDE + 1, 6] })).toThrow(/'dimRoom'/);
    expect(makeEnv('LargerSokoban', { dimRoom: [MAX_GRID_SIDE, 6] }).config).toMatchObject({
      dimRoom: [MAX_GRID_SIDE, 6],
    });
  });

  it('more boxes than a room holds are refused, naming the room and the limit', () => {
    expect(() => makeEnv('SimpleSokoban', { numBoxes: 40 })).toThrow(
      "SimpleSokoban: config 'numBoxes' 40 does not fit a 6x6 room (16 cells inside the walls, one of them for the player): at most 15",
    );
  });

  it('a FrozenLake size or a hand-written grid past the bound is refused', () => {
    expect(() => makeEnv('FrozenLake', { size: 5000 })).toThrow(
      `FrozenLake: config 'size' must be an integer from 2 to ${MAX_GRID_SIDE}, got 5000`,
    );
    const wide = `P${'_'.repeat(MAX_GRID_SIDE)}G`;
    expect(() => makeEnv('FrozenLake', { map: wide })).toThrow(
      `FrozenLake map is 1 rows x ${MAX_GRID_SIDE + 2} columns; at most 20 x 20 is supported`,
    );
    const tall = ['P', ...Array(MAX_GRID_SIDE).fill('_'), 'G'];
    expect(() => makeEnv('FrozenLake', { map: tall })).toThrow(/FrozenLake map is 22 rows x 1 columns/);
    expect(() => makeEnv('SimpleSokoban', { level: `PX${'_'.repeat(30)}O` })).toThrow(
      /Sokoban level is 1 rows x 33 columns/,
    );
  });
});

describe('unsolvable Sokoban levels', () => {
  it('a level whose box can never reach a target throws (docs/architecture.md: an unplayable level throws)', () => {
    // The box sits in a corner: no push can ever move it again.
    expect(() => makeEnv('SimpleSokoban', { level: '#####\n#P_X#\n#__O#\n#####' })).toThrow(
      'SimpleSokoban: the level cannot be solved: no sequence of moves puts every box on a target',
    );
    // Two boxes that can only move along the top wall, with their targets a row below.
    expect(() => makeEnv('LargerSokoban', { level: '######\n#PXX_#\n#_OO_#\n######' })).toThrow(/cannot be solved/);
    // Solvable, even if it takes many moves.
    expect(() => makeEnv('SimpleSokoban', { level: '#######\n#P____#\n#_X___#\n#____O#\n#######' })).not.toThrow();
  });

  it('isSokobanSolvable answers true, false, or null when the search budget runs out', () => {
    expect(isSokobanSolvable(parseSokobanLevel('#######\n#P__XO#\n#######'))).toBe(true);
    expect(isSokobanSolvable(parseSokobanLevel('#####\n#P_X#\n#__O#\n#####'))).toBe(false);
    const open = parseSokobanLevel(['P' + '_'.repeat(9), ...Array(8).fill('_'.repeat(10)), 'X' + '_'.repeat(7) + '#O']);
    expect(isSokobanSolvable(open, 5)).toBeNull();
  });
});

describe('assertEnvPlayable: one trial reset before a run relies on a config', () => {
  it('refuses a room the generator cannot fill, and accepts the defaults', () => {
    expect(() => assertEnvPlayable('SimpleSokoban', { dimRoom: [4, 4] }, 0)).toThrow(
      /no level for a 4x4 room with 1 boxes/,
    );
    expect(() => assertEnvPlayable('SimpleSokoban', { numBoxes: 7 }, 0)).toThrow(
      /no level for a 6x6 room with 7 boxes/,
    );
    expect(() => assertEnvPlayable('FrozenLake', { p: 1e-9 }, 0)).not.toThrow(); // start and goal are never holes
    for (const tag of ['SimpleSokoban', 'LargerSokoban', 'FrozenLake', 'Bandit'])
      expect(() => assertEnvPlayable(tag, undefined, 0)).not.toThrow();
  });
});

describe('Bandit arm names', () => {
  it('are refused when they could not be written as one action: surrounding spaces, the action separator, tags', () => {
    expect(() => makeEnv('Bandit', { loArmName: ' Phoenix' })).toThrow(
      `Bandit: config 'loArmName' must not start or end with whitespace, got " Phoenix"`,
    );
    expect(() => makeEnv('Bandit', { hiArmName: 'Dragon ' })).toThrow(
      /'hiArmName' must not start or end with whitespace/,
    );
    expect(() => makeEnv('Bandit', { hiArmName: 'Dra||gon' })).toThrow(/'hiArmName' must not contain '\|\|'/);
    expect(() => makeEnv('BanditTest', { loArmName: 'a<answer>b' })).toThrow(/'loArmName' must not contain '<' or '>'/);
    expect(() => makeEnv('Bandit', { loArmName: 'Two\nlines' })).toThrow(/'loArmName' must be one line/);
    expect(makeEnv('Bandit', { loArmName: 'Grey Owl' }).reset(0)).toContain('Grey Owl');
  });
});
