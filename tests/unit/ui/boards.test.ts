import { describe, expect, it } from 'vitest';
import { banditPrompt, makeEnv } from '../../../envs/index';
import { TILE_STYLE, banditArms, boardFromState, parseGrid, tilesIn } from '../../../src/ui/boards';

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
    expect(parseGrid('FrozenLake', 'PO\n_G').tiles).toEqual([
      ['player', 'hole'],
      ['ice', 'goal'],
    ]);
    expect(parseGrid('SimpleSokoban', 'PO').tiles).toEqual([['player', 'target']]);
    expect(parseGrid('FrozenLake', '_√').tiles[0][1]).toBe('player-on-goal');
    expect(parseGrid('SimpleSokoban', '_√').tiles[0][1]).toBe('box-on-target');
    expect(parseGrid('SokobanDifferentGridVocab', 'WA.').tiles[0]).toEqual(['wall', 'player', 'floor']);
  });

  it('draws a FrozenLake env state', () => {
    const env = makeEnv('FrozenLake', { map: ['P_', 'OG'] });
    expect(parseGrid('FrozenLake', env.reset(1)).tiles).toEqual([
      ['player', 'ice'],
      ['hole', 'goal'],
    ]);
  });

  it('names the row and symbol of a grid it cannot read, and falls back to text for display', () => {
    expect(() => parseGrid('FrozenLake', 'P_\n_Z')).toThrow(/unknown symbol 'Z' at row 2, column 2/);
    expect(() => parseGrid('FrozenLake', 'P_\n_')).toThrow(/not rectangular: row 2/);
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
    expect(tilesIn(parseGrid('SimpleSokoban', env.reset(0)).tiles)).toEqual([
      'wall',
      'floor',
      'target',
      'box',
      'player',
    ]);
  });
});

describe("boards: RAGEN-2's coordinate observation formats", () => {
  it('draws a grid_coord state by its grid part, exactly as the grid state', () => {
    for (const tag of ['CoordSokoban', 'CoordFrozenLake']) {
      const env = makeEnv(tag);
      const plain = makeEnv(tag, { observationFormat: 'grid' });
      for (const seed of [123, 124, 125]) {
        expect(boardFromState(tag, env.reset(seed))).toEqual(boardFromState(tag, plain.reset(seed)));
        expect(boardFromState(tag, env.reset(seed)).kind).toBe('grid');
      }
    }
    // A plain tag switched to grid_coord is drawn too.
    const lake = makeEnv('FrozenLake', { map: ['P_', 'OG'], observationFormat: 'grid_coord' });
    expect(parseGrid('FrozenLake', lake.reset(0)).tiles).toEqual([
      ['player', 'ice'],
      ['hole', 'goal'],
    ]);
  });

  it('draws a FrozenLake coord state from its coordinates: the same board as the grid', () => {
    const map = ['P_O', '__O', 'O_G'];
    const coord = makeEnv('CoordFrozenLake', { map, observationFormat: 'coord', successRate: 1 });
    const grid = makeEnv('FrozenLake', { map, successRate: 1 });
    expect(parseGrid('CoordFrozenLake', coord.reset(0))).toEqual(parseGrid('FrozenLake', grid.reset(0)));
    for (const action of ['Down', 'Right', 'Right']) {
      // Down, Right, then Right into the hole at (1, 2): player, player, player-in-hole.
      expect(parseGrid('CoordFrozenLake', coord.step(action).observation)).toEqual(
        parseGrid('FrozenLake', grid.step(action).observation),
      );
    }
    expect(parseGrid('CoordFrozenLake', coord.render()).tiles[1][2]).toBe('player-in-hole');
  });

  it('draws a Sokoban coord state with the listed cells placed and the unlisted ones as "floor or wall"', () => {
    const env = makeEnv('SimpleSokoban', {
      level: ['#####', '#S__#', '#_X_#', '#___#', '#####'],
      observationFormat: 'coord',
    });
    const board = parseGrid('SimpleSokoban', env.reset(0));
    expect(board.rows).toBe(5);
    expect(board.cols).toBe(5);
    expect(board.tiles[1][1]).toBe('player-on-target');
    expect(board.tiles[2][2]).toBe('box');
    expect(board.tiles[0][0]).toBe('unlisted');
    expect(board.tiles[3][3]).toBe('unlisted');
    env.step('Down');
    const after = parseGrid('SimpleSokoban', env.render());
    expect(after.tiles[1][1]).toBe('target');
    expect(after.tiles[2][1]).toBe('player');
    expect(tilesIn(after.tiles)).toContain('unlisted');
    expect(TILE_STYLE.unlisted.label).toMatch(/not listed/);
  });

  it('a coordinate block it cannot read is shown as text, naming nothing it invented', () => {
    expect(() => parseGrid('CoordSokoban', 'Board size: 2 rows x 2 cols (zero-indexed).\nCrates: (0, 0)')).toThrow(
      /unknown coordinate line 'Crates'/,
    );
    const text = 'Board size: 2 rows x 2 cols (zero-indexed).\nPlayer: (5, 5)';
    expect(boardFromState('CoordFrozenLake', text)).toEqual({ kind: 'text', text });
  });
});
