// RAGEN-2's observation formats (envs/observation.ts) in Sokoban and FrozenLake, and the Coord tags. The expected
// coordinate strings were produced by RAGEN-2's own format_coordinate_render / collect_entity_coordinates
// (mll-lab-nu/RAGEN, ragen/env/{sokoban,frozen_lake}/utils.py) on the same boards.
import { describe, expect, it } from 'vitest';
import {
  ENV_TAGS,
  envFamily,
  envSpec,
  makeEnv,
  parseCoordinateBlock,
  renderSokoban,
  splitObservation,
  type FrozenLakeEnv,
  type SokobanEnv,
} from '../../../envs/index';

describe('Sokoban observation formats', () => {
  const level = ['######', '#S_X_#', '#____#', '#_√__#', '######'];

  it("'coord' lists targets (covered ones too), boxes, boxes on target and the player, as RAGEN-2 writes them", () => {
    const env = makeEnv('SimpleSokoban', { level, observationFormat: 'coord' });
    expect(env.reset(0)).toBe(
      'Board size: 5 rows x 6 cols (zero-indexed).\nTargets: (1, 1), (3, 2)\nBoxes: (1, 3)\nBoxes on target: (3, 2)\nPlayer on target: (1, 1)',
    );
    env.step('Down'); // the player leaves the target: "Player" instead of "Player on target"
    expect(env.render()).toBe(
      'Board size: 5 rows x 6 cols (zero-indexed).\nTargets: (1, 1), (3, 2)\nBoxes: (1, 3)\nBoxes on target: (3, 2)\nPlayer: (2, 1)',
    );
  });

  it("skips empty categories: no 'Boxes on target' line until a box is on a target", () => {
    const env = makeEnv('SimpleSokoban', {
      level: ['#####', '#P__#', '#_X_#', '#_O_#', '#####'],
      observationFormat: 'coord',
    });
    expect(env.reset(0)).toBe(
      'Board size: 5 rows x 5 cols (zero-indexed).\nTargets: (3, 2)\nBoxes: (2, 2)\nPlayer: (1, 1)',
    );
    env.step('Right');
    const solved = env.step('Down');
    expect(solved.info.success).toBe(true);
    expect(solved.observation).toBe(
      'Board size: 5 rows x 5 cols (zero-indexed).\nTargets: (3, 2)\nBoxes on target: (3, 2)\nPlayer: (2, 2)',
    );
  });

  it('\'grid_coord\' is "Coordinates: \\n" + the coordinate block + "\\nGrid Map: \\n" + the grid', () => {
    const coord = makeEnv('SimpleSokoban', { level, observationFormat: 'coord' }).reset(0);
    const grid = makeEnv('SimpleSokoban', { level }).reset(0);
    expect(grid).toBe(level.join('\n'));
    expect(makeEnv('SimpleSokoban', { level, observationFormat: 'grid_coord' }).reset(0)).toBe(
      `Coordinates: \n${coord}\nGrid Map: \n${grid}`,
    );
  });

  it('the alternative vocabulary changes the grid part only', () => {
    const text = makeEnv('SokobanDifferentGridVocab', { level, observationFormat: 'grid_coord' }).reset(0);
    expect(text).toContain('Player on target: (1, 1)');
    expect(text.endsWith('Grid Map: \nWWWWWW\nW@.B.W\nW....W\nW.C..W\nWWWWWW')).toBe(true);
  });

  it('the format changes the text only: same generated level, same dynamics, in every format', () => {
    for (const seed of [123, 124, 125]) {
      const envs = (['grid', 'coord', 'grid_coord'] as const).map(
        (f) => makeEnv('SimpleSokoban', { observationFormat: f }) as SokobanEnv,
      );
      envs.forEach((e) => e.reset(seed));
      for (const action of ['Up', 'Left', 'Down', 'Right', 'Right']) {
        const results = envs.map((e) => e.step(action));
        expect(new Set(results.map((r) => JSON.stringify([r.reward, r.done, r.info]))).size).toBe(1);
        expect(new Set(envs.map((e) => renderSokoban(e.state))).size).toBe(1);
      }
    }
  });

  it('refuses an unknown format, naming the key and the choices', () => {
    expect(() => makeEnv('SimpleSokoban', { observationFormat: 'coords' })).toThrow(
      `SimpleSokoban: config 'observationFormat' must be one of grid, coord, grid_coord, got "coords"`,
    );
  });
});

describe('FrozenLake observation formats', () => {
  const map = ['P_O', '__O', 'O_G'];

  it("'coord' lists start, goal, the player (on goal / in hole when there) and every hole, as RAGEN-2 writes them", () => {
    const env = makeEnv('FrozenLake', { map, observationFormat: 'coord', successRate: 1 }) as FrozenLakeEnv;
    const head = 'Board size: 3 rows x 3 cols (zero-indexed).\nStart: (0, 0)\nGoal: (2, 2)\n';
    const holes = 'Holes: (0, 2), (1, 2), (2, 0)';
    expect(env.reset(0)).toBe(`${head}Player: (0, 0)\n${holes}`);
    expect(env.step('Right').observation).toBe(`${head}Player: (0, 1)\n${holes}`);
    expect(env.step('Right').observation).toBe(`${head}Player in hole: (0, 2)\n${holes}`);
    env.reset(0);
    for (const a of ['Down', 'Right', 'Down']) env.step(a);
    expect(env.step('Right').observation).toBe(`${head}Player on goal: (2, 2)\n${holes}`);
  });

  it("'grid_coord' puts the grid after the coordinates; the start cell shows as '_' in the grid once left", () => {
    const env = makeEnv('FrozenLake', { map, observationFormat: 'grid_coord', successRate: 1 });
    env.reset(0);
    expect(env.step('Down').observation).toBe(
      'Coordinates: \nBoard size: 3 rows x 3 cols (zero-indexed).\nStart: (0, 0)\nGoal: (2, 2)\nPlayer: (1, 0)\n' +
        'Holes: (0, 2), (1, 2), (2, 0)\nGrid Map: \n__O\nP_O\nO_G',
    );
  });

  it('the format changes the text only: same generated lake and the same slips in every format', () => {
    for (const seed of [123, 200]) {
      const envs = (['grid', 'coord', 'grid_coord'] as const).map(
        (f) => makeEnv('FrozenLake', { observationFormat: f }) as FrozenLakeEnv,
      );
      envs.forEach((e) => e.reset(seed));
      expect(new Set(envs.map((e) => JSON.stringify(e.map))).size).toBe(1);
      for (const action of ['Down', 'Right', 'Right', 'Up', 'Left', 'Down']) {
        const results = envs.map((e) => e.step(action));
        expect(new Set(results.map((r) => JSON.stringify([r.reward, r.done, r.info]))).size).toBe(1);
        expect(new Set(envs.map((e) => e.position)).size).toBe(1);
        if (results[0].done) break;
      }
    }
  });
});

describe('the Coord tags', () => {
  it('are registered, in their families, and default to grid_coord', () => {
    expect(ENV_TAGS).toContain('CoordSokoban');
    expect(ENV_TAGS).toContain('CoordFrozenLake');
    expect(envFamily('CoordSokoban')).toBe('sokoban');
    expect(envFamily('CoordFrozenLake')).toBe('frozenlake');
    expect(() => envFamily('CoordBandit')).toThrow(/unknown env tag 'CoordBandit'/);
    expect(makeEnv('CoordSokoban').reset(123)).toMatch(
      /^Coordinates: \nBoard size: 6 rows x 6 cols \(zero-indexed\)\.\n/,
    );
    expect(makeEnv('CoordFrozenLake').reset(123)).toMatch(
      /^Coordinates: \nBoard size: 4 rows x 4 cols \(zero-indexed\)\.\nStart: /,
    );
  });

  it("CoordSokoban plays SimpleSokoban's level for a seed; CoordFrozenLake FrozenLake's lake (v1 dynamics)", () => {
    for (const seed of [123, 124, 10000]) {
      const coord = makeEnv('CoordSokoban') as SokobanEnv;
      coord.reset(seed);
      expect(renderSokoban(coord.state)).toBe(makeEnv('SimpleSokoban').reset(seed));
      const lake = makeEnv('CoordFrozenLake') as FrozenLakeEnv;
      lake.reset(seed);
      const plain = makeEnv('FrozenLake') as FrozenLakeEnv;
      plain.reset(seed);
      expect(lake.map).toEqual(plain.map);
      expect(lake.config.successRate).toBe(plain.config.successRate);
      expect(lake.config.p).toBe(plain.config.p);
    }
    // The grid part of a CoordSokoban state is SimpleSokoban's whole state.
    expect(splitObservation(makeEnv('CoordSokoban').reset(123)).grid).toBe(makeEnv('SimpleSokoban').reset(123));
  });

  it("carry a multi-line coordinate instruction naming the board's corners, and max_tokens 120", () => {
    const sokoban = envSpec('CoordSokoban');
    expect(sokoban.maxTokens).toBe(120);
    expect(sokoban.instruction.split('\n').length).toBeGreaterThan(3);
    expect(sokoban.instruction).toContain('(0, 0)');
    expect(sokoban.instruction).toContain('(5, 5)');
    expect(sokoban.instruction).toContain('<answer>Right || Right || Up</answer>');
    expect(envSpec('CoordSokoban', { dimRoom: [7, 8] }).instruction).toContain('(6, 7)');
    const lake = envSpec('CoordFrozenLake');
    expect(lake.maxTokens).toBe(120);
    expect(lake.instruction).toContain('(3, 3)');
    expect(envSpec('CoordFrozenLake', { size: 6 }).instruction).toContain('(5, 5)');
    expect(envSpec('CoordFrozenLake', { map: ['P_', 'OG'] }).instruction).toContain('(1, 1)');
    // The plain tags keep their own instruction whatever the format.
    expect(envSpec('FrozenLake', { observationFormat: 'grid_coord' }).instruction).toBe(
      envSpec('FrozenLake').instruction,
    );
  });

  it('a Coord tag can be switched back to the grid', () => {
    expect(makeEnv('CoordSokoban', { observationFormat: 'grid' }).reset(123)).toBe(makeEnv('SimpleSokoban').reset(123));
  });
});

describe('reading a state back (splitObservation / parseCoordinateBlock)', () => {
  it("round trip: the coordinates read from a state are the env's own, in every format and many states", () => {
    for (const tag of ['CoordSokoban', 'LargerSokoban', 'CoordFrozenLake']) {
      for (const format of ['coord', 'grid_coord'] as const) {
        for (let seed = 0; seed < 20; seed++) {
          const env = makeEnv(tag, { observationFormat: format });
          let text = env.reset(seed);
          for (const action of ['Up', 'Left', 'Down', 'Right']) {
            const split = splitObservation(text);
            expect(split.format).toBe(format);
            const coords = split.coordinates!;
            // Rendering the parsed categories again gives the same block.
            const block = [
              `Board size: ${coords.rows} rows x ${coords.cols} cols (zero-indexed).`,
              ...[...coords.categories].map(
                ([label, cells]) => `${label}: ${cells.map(([r, c]) => `(${r}, ${c})`).join(', ')}`,
              ),
            ].join('\n');
            expect(text).toBe(format === 'coord' ? block : `Coordinates: \n${block}\nGrid Map: \n${split.grid}`);
            if (format === 'grid_coord') {
              const rows = split.grid!.split('\n');
              expect(rows.length).toBe(coords.rows);
              // The player's cell in the grid is where the coordinates say.
              const player = [...coords.categories].find(([label]) => label.startsWith('Player'))![1][0];
              expect('PS√XA@'.includes([...rows[player[0]]][player[1]])).toBe(true);
            }
            const step = env.step(action);
            if (step.done) break;
            text = step.observation;
          }
        }
      }
    }
  });

  it('a grid state is a grid; a malformed block names its line', () => {
    expect(splitObservation('#P#\n#_#')).toEqual({ format: 'grid', grid: '#P#\n#_#', coordinates: null });
    expect(() => parseCoordinateBlock('Board size: 4 rows x 4 cols (zero-indexed).\nBoxes: (1, 1) (2, 2)')).toThrow(
      /cannot read line "Boxes: \(1, 1\) \(2, 2\)"/,
    );
    expect(() => parseCoordinateBlock('Board size: 2 rows x 2 cols (zero-indexed).\nPlayer: (2, 0)')).toThrow(
      /outside the 2 x 2 board/,
    );
    expect(() => parseCoordinateBlock('Player: (0, 0)')).toThrow(/must start with "Board size/);
    expect(() => splitObservation('Coordinates: \nBoard size: 2 rows x 2 cols (zero-indexed).')).toThrow(
      /no "Grid Map:" part/,
    );
  });
});
