import { describe, expect, it } from 'vitest';
import { banditPrompt, makeEnv } from '../../../envs/index';
import { banditArms, boardFromState, parseGrid, tilesIn } from '../../../src/ui/boards';

describe('boards: drawing env states', () => {
  it('reads a Sokoban state with the player, a box and a target where the env put them', () => {
    const env = makeEnv('SimpleSokoban', { level: ['#####', '#P__#', '#__X#', '#__O#', '#####'] });
    const board = parseGrid('SimpleSokoban', env.reset(0));
    expect(board.rows).toBe(5);
    expect(board.cols).toBe(5);
    expect(board.tiles[1][1]).toBe('player');
    expect(board.tiles[2][3]).toBe('box');
    expect(board.tiles[3][3]).toBe('target');
    expect(board.tiles[0][0]).toBe('wall');
    // Walk right, then up into the wall: the drawn board follows the env.
    env.step('Right');
    env.step('Up'); // blocked by the wall: a no-op
    const after = parseGrid('SimpleSokoban', env.render());
    expect(after.tiles[1][2]).toBe('player');
  });

  it('the same symbol means a hole in FrozenLake and a target in Sokoban', () => {
    expect(parseGrid('FrozenLake', 'PO\n_G').tiles).toEqual([['player', 'hole'], ['ice', 'goal']]);
    expect(parseGrid('SimpleSokoban', 'PO').tiles).toEqual([['player', 'target']]);
    expect(parseGrid('FrozenLake', '_√').tiles[0][1]).toBe('player-on-goal');
    expect(parseGrid('SimpleSokoban', '_√').tiles[0][1]).toBe('box-on-target');
    expect(parseGrid('SokobanDifferentGridVocab', 'WA.').tiles[0]).toEqual(['wall', 'player', 'floor']);
  });

  it('draws a FrozenLake env state', () => {
    const env = makeEnv('FrozenLake', { map: ['P_', 'OG'] });
    expect(parseGrid('FrozenLake', env.reset(1)).tiles).toEqual([['player', 'ice'], ['hole', 'goal']]);
  });

  it('names the row and symbol of a grid it cannot read, and falls back to text for display', () => {
    expect(() => parseGrid('FrozenLake', 'P_\n_Z')).toThrow(/unknown symbol 'Z' at row 1, column 1/);
    expect(() => parseGrid('FrozenLake', 'P_\n_')).toThrow(/not rectangular: row 1/);
    expect(() => parseGrid('Bandit', 'x')).toThrow(/no grid/);
    expect(boardFromState('FrozenLake', 'hello')).toEqual({ kind: 'text', text: 'hello' });
  });

  it('finds the two arm names in a bandit observation', () => {
    expect(banditArms(banditPrompt('Phoenix', 'Dragon'))).toEqual(['Phoenix', 'Dragon']);
    const env = makeEnv('Bandit');
    const board = boardFromState('Bandit', env.reset(3));
    expect(board.kind).toBe('bandit');
    if (board.kind === 'bandit') expect([...board.arms].sort()).toEqual([...env.actionNames].sort());
  });

  it('lists the kinds of tile on a board once each, for the legend', () => {
    const env = makeEnv('SimpleSokoban', { level: ['######', '#P___#', '#_X__#', '#__O_#', '######'] });
    expect(tilesIn(parseGrid('SimpleSokoban', env.reset(0)).tiles)).toEqual(['wall', 'floor', 'target', 'box', 'player']);
  });
});
