// The grounding metric: claims in <think> checked against the observation (src/metrics/grounding.ts).
import { describe, expect, it } from 'vitest';
import { makeEnv } from '../../../envs/index';
import {
  factsOf,
  gridRows,
  groundingClaims,
  groundingMetrics,
  statedChoice,
  type GroundingTurn,
} from '../../../src/metrics/grounding';
import { generateDemonstrations } from '../../../src/warmstart/demonstrations';

const SOKOBAN = ['######', '#____#', '#_X__#', '#_P_O#', '######'].join('\n'); // player (3,2), box (2,2), target (3,4)

describe('grounding: claims against a Sokoban board', () => {
  const facts = factsOf('SimpleSokoban', `turn 1\nstate:\n${SOKOBAN}\nactions left 10`);
  const check = (think: string) => groundingClaims('SimpleSokoban', think, facts);

  it('reads the grid out of the observation (grid and grid_coord text alike)', () => {
    expect(facts.grid).toEqual(SOKOBAN.split('\n'));
    const coord = `Coordinates: \nTargets: (3, 4)\nBoxes: (2, 2)\nPlayer: (3, 2)\nGrid Map: \n${SOKOBAN}`;
    expect(gridRows(coord, 'sokoban')).toEqual(SOKOBAN.split('\n'));
  });

  it('checks positions, whoever they are about', () => {
    expect(check('I am at (3, 2), the box at (2, 2) and the target at (3, 4).')).toEqual({ checked: 3, correct: 3 });
    expect(check('The box is at (2, 3) and the target at row 3, col 4.')).toEqual({ checked: 2, correct: 1 });
  });

  it('checks directions: exact with "straight" or two parts, one true part otherwise', () => {
    expect(check('The box must go down and to the right.')).toEqual({ checked: 1, correct: 1 });
    expect(check('The box must go straight down.')).toEqual({ checked: 1, correct: 0 });
    expect(check('push the box right.')).toEqual({ checked: 1, correct: 1 });
    expect(check('The box is straight up of me and the target is up and to the left of the box.')).toEqual({
      checked: 2,
      correct: 1,
    });
  });

  it('a plan or an intention is not a claim', () => {
    expect(check('I go Up, Left then Down.')).toEqual({ checked: 0, correct: 0 });
  });
});

describe('grounding: FrozenLake and Bandit', () => {
  const lake = ['_O__', '_P__', 'OO_G', '____'].join('\n'); // player (1,1): holes up and down; goal (2,3)
  const facts = factsOf('FrozenLake', lake);
  it('checks the player, the goal, its direction and the holes next to the player', () => {
    expect(
      groundingClaims(
        'FrozenLake',
        'I am at (1, 1) and the goal is at (2, 3). There is a hole down and up of me.',
        facts,
      ),
    ).toEqual({ checked: 3, correct: 3 });
    expect(
      groundingClaims('FrozenLake', 'The goal is down and to the right of me. No hole is next to me.', facts),
    ).toEqual({ checked: 2, correct: 1 });
  });

  it('Bandit: the risky-sounding arm must be the one with the higher expectation', () => {
    const arms = factsOf('Bandit', 'any', { hi: 'Dragon', lo: 'Phoenix' });
    expect(groundingClaims('Bandit', 'Dragon sounds risky and Phoenix sounds safe.', arms)).toEqual({
      checked: 2,
      correct: 2,
    });
    expect(groundingClaims('Bandit', 'Phoenix is the daring arm.', arms)).toEqual({ checked: 1, correct: 0 });
  });

  it('finds the stated choice and compares it with the answer', () => {
    expect(statedChoice('Dragon sounds risky, so I pick Dragon.', ['Phoenix', 'Dragon'])).toEqual(['Dragon']);
    expect(statedChoice('I go Up, Left then Up.', ['Up', 'Down', 'Left', 'Right'])).toEqual(['Up', 'Left', 'Up']);
    const turn = (think: string, actions: string[]): GroundingTurn => ({
      tag: 'Bandit',
      state: 'x',
      think,
      actions,
      actionNames: ['Phoenix', 'Dragon'],
      bandit: { hi: 'Dragon', lo: 'Phoenix' },
    });
    const m = groundingMetrics([
      turn('Dragon sounds risky, so I pick Dragon.', ['Dragon']),
      turn('Phoenix sounds safe, so I pick Phoenix.', ['Dragon']),
    ]);
    expect(m['reasoning/answer_agreement']).toBe(0.5);
    expect(m['reasoning/grounding']).toBe(1); // both risk claims are true; only the second choice contradicts its answer
  });
});

describe('grounding of the demonstrations', () => {
  for (const [tag, maxTurn, maxActionsPerTurn] of [
    ['SimpleSokoban', 3, 5],
    ['FrozenLake', 5, 5],
    ['Bandit', 1, 1],
  ] as const) {
    it(`${tag}: the demonstrators' reasoning is true of the board, and far less so of another board`, () => {
      const demos = generateDemonstrations({ tag, episodes: 60, maxTurn, maxActionsPerTurn, imperfectFraction: 0.3 });
      const env = makeEnv(tag);
      const bandit =
        tag === 'Bandit'
          ? {
              hi: (env as unknown as { config: { hiArmName: string } }).config.hiArmName,
              lo: (env as unknown as { config: { loArmName: string } }).config.loArmName,
            }
          : undefined;
      const turns: GroundingTurn[] = demos.flatMap((d) =>
        d.turns.map((t) => ({
          tag,
          state: t.state,
          think: t.think,
          actions: t.actions,
          actionNames: env.actionNames,
          ...(bandit ? { bandit } : {}),
        })),
      );
      const m = groundingMetrics(turns, 1);
      expect(m['reasoning/grounding']).toBe(1);
      expect(m['reasoning/grounding_claims']).toBeGreaterThanOrEqual(1);
      if (tag !== 'Bandit') expect(m['reasoning/grounding_blind']).toBeLessThan(0.7); // Bandit's arms never move
      if (tag === 'Bandit') expect(m['reasoning/answer_agreement']).toBe(1);
    });
  }
});
