import { describe, expect, it } from 'vitest';
import { checkCustomBoard } from '../../../src/ui/custom-level';

describe('custom boards', () => {
  it('accepts a playable Sokoban level and FrozenLake map, returning the env config and first state', () => {
    const s = checkCustomBoard('SimpleSokoban', '#####\n#P__#\n#_X_#\n#_O_#\n#####\n');
    expect(s.envConfig).toEqual({ level: ['#####', '#P__#', '#_X_#', '#_O_#', '#####'] });
    expect(s.state.split('\n')[2]).toBe('#_X_#');
    const f = checkCustomBoard('FrozenLake', ' P_ \n OG ');
    expect(f.envConfig).toEqual({ map: ['P_', 'OG'] });
  });

  it('names the problem of a malformed board', () => {
    expect(() => checkCustomBoard('SimpleSokoban', '  \n')).toThrow(/board is empty/);
    expect(() => checkCustomBoard('SimpleSokoban', '#P#\n#X')).toThrow(/rectangular|row 1/);
    expect(() => checkCustomBoard('SimpleSokoban', '#PP_XO#')).toThrow(/player/);
    expect(() => checkCustomBoard('FrozenLake', 'P_\n_Z')).toThrow(/Z/);
    expect(() => checkCustomBoard('Bandit', 'x')).toThrow(/not 'Bandit'/);
    // A box pushed into a corner can never reach its target (docs/architecture.md: an unplayable level throws).
    expect(() => checkCustomBoard('SimpleSokoban', '#####\n#P_X#\n#__O#\n#####')).toThrow(/cannot be solved/);
    expect(() => checkCustomBoard('FrozenLake', 'P_O\nOO_\n__G')).toThrow(/no hole-free path/);
  });

  it('refuses a Sokoban board that is not walled in, naming the open edge', () => {
    expect(() => checkCustomBoard('SimpleSokoban', '#####\n#P___\n#_XO_\n#####')).toThrow(
      "the level's right edge is not a wall (row 2 ends with '_')",
    );
    expect(() => checkCustomBoard('SimpleSokoban', '#####\n_P_X#\n#__O#\n#####')).toThrow(
      /left edge .*row 2 starts with '_'/,
    );
    expect(() => checkCustomBoard('SimpleSokoban', '##_##\n#P_X#\n#__O#\n#####')).toThrow(/top edge .*column 3/);
  });

  it("accepts '*' for a box on a target (the usual ASCII spelling of √)", () => {
    const typed = checkCustomBoard('SimpleSokoban', '######\n#P*__#\n#__X_#\n#___O#\n######');
    const unicode = checkCustomBoard('SimpleSokoban', '######\n#P√__#\n#__X_#\n#___O#\n######');
    expect(typed.state).toBe(unicode.state);
    expect(typed.envConfig).toEqual({ level: ['######', '#P√__#', '#__X_#', '#___O#', '######'] });
  });

  it("reads gym's familiar FrozenLake letters (S F H G) as the env's own symbols", () => {
    const gym = checkCustomBoard('FrozenLake', 'SFF\nFHF\nFFG');
    expect(gym.envConfig).toEqual({ map: ['P__', '_O_', '__G'] });
    expect(gym.state).toBe(checkCustomBoard('FrozenLake', 'P__\n_O_\n__G').state);
  });

  it('names the position of a bad symbol counting rows and columns from 1, as the wall check does', () => {
    expect(() => checkCustomBoard('FrozenLake', 'P_\n_Z')).toThrow(/'Z' at row 2, column 2/);
    expect(() => checkCustomBoard('SimpleSokoban', '#####\n#P_X#\n#_?O#\n#####')).toThrow(/'\?' at row 3, column 3/);
  });
});
