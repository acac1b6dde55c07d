// The side-by-side reasoning view's data: the same prompt (env seed and initial board) matched across steps.
import { describe, expect, it } from 'vitest';
import {
  boardsAtStep,
  chooseComparison,
  promptHistories,
  promptLabel,
  templateSteps,
} from '../../../src/ui/reasoning-compare';
import { groupByStep } from '../../../src/ui/trajectories';
import type { StoredRollout } from '../../../src/metrics/jsonl';

const BOARD_A = 'P___\n_O__\n___G';
const BOARD_B = '_P__\n_O__\n___G';
const record = (step: number, split: string, seed: number, state: string, think: string): StoredRollout => ({
  step,
  split,
  seed,
  tag: 'FrozenLake',
  groupId: 0,
  success: false,
  reward: 0,
  score: 0,
  turns: [{ turn: 1, state, think, answer: 'Right', formatOk: true, actions: ['Right'], reward: 0 }],
});

describe('reasoning compare', () => {
  const records = [
    record(0, 'val', 124, BOARD_B, 'v124 at 0'),
    record(0, 'val', 123, BOARD_A, 'v123 at 0'),
    record(1, 'train', 10000, BOARD_A, 't at 1'),
    record(5, 'train', 10000, BOARD_A, 't at 5'),
    record(7, 'train', 10008, BOARD_A, 'other seed, same board'),
    record(10, 'val', 123, BOARD_A, 'v123 at 10'),
    record(10, 'val', 123, BOARD_A, 'a second one at 10'),
    record(20, 'val', 123, BOARD_A, 'v123 at 20'),
    // The same seed with another board (e.g. another env config) is another prompt.
    record(20, 'val', 124, BOARD_A, 'v124, other board'),
  ];
  const histories = promptHistories(groupByStep(records).byStep);

  it('matches records of one split, seed and board across steps; validation first; single-step prompts left out', () => {
    expect(histories.map((h) => [h.split, h.seed, h.steps])).toEqual([
      ['val', 123, [0, 10, 20]],
      ['train', 10000, [1, 5]],
    ]);
    expect(histories[0].byStep.get(10)!.turns[0].think).toBe('v123 at 10'); // the first one logged at a step
    expect(promptLabel(histories[0])).toBe('validation board, seed 123 (steps 0, 10, 20)');
    expect(promptLabel(histories[1])).toBe('training board, seed 10000 (steps 1, 5)');
  });

  it('shows the first and last step by default, keeps a pick while it exists, falls back when it does not', () => {
    expect(chooseComparison(histories)).toEqual({ key: histories[0].key, early: 0, late: 20 });
    expect(chooseComparison(histories, { key: histories[0].key, early: 10, late: 20 })).toEqual({
      key: histories[0].key,
      early: 10,
      late: 20,
    });
    expect(chooseComparison(histories, { key: histories[1].key, early: 10, late: 20 })).toEqual({
      key: histories[1].key,
      early: 1,
      late: 5,
    });
    expect(chooseComparison(histories, { key: 'gone' })).toEqual({ key: histories[0].key, early: 0, late: 20 });
    expect(chooseComparison([])).toBeNull();
  });
});

describe('different boards at one step (templates)', () => {
  const BOARD_C = '__P_\n_O__\n___G';
  const records = [
    record(3, 'train', 1, BOARD_A, 'I am at (0, 0). The goal is below.'),
    record(3, 'train', 2, BOARD_B, 'I am at (0, 1). Go right.'),
    record(3, 'train', 3, BOARD_A, 'a second rollout of board A'),
    record(9, 'train', 4, BOARD_A, 'I am at'),
    record(9, 'train', 5, BOARD_B, 'I am at '),
    record(9, 'val', 123, BOARD_C, 'I am at'),
    record(12, 'train', 6, BOARD_A, 'only one board at this step'),
  ];
  const byStep = groupByStep(records).byStep;

  it('counts each board once (its first record) and the distinct first-turn reasonings among them', () => {
    const early = boardsAtStep(byStep, 3);
    expect(early.boards.map((b) => b.think)).toEqual([
      'I am at (0, 0). The goal is below.',
      'I am at (0, 1). Go right.',
    ]);
    expect(early.distinctThinks).toBe(2);
    // One text (up to surrounding space) on three boards, validation included: a template.
    const late = boardsAtStep(byStep, 9);
    expect([late.boards.length, late.distinctThinks, late.boards.map((b) => b.split)]).toEqual([
      3,
      1,
      ['train', 'train', 'val'],
    ]);
    expect(boardsAtStep(byStep, 99)).toEqual({ step: 99, boards: [], distinctThinks: 0 });
  });

  it('offers only the steps where two or more boards were played', () => {
    expect(templateSteps(byStep)).toEqual([3, 9]);
  });
});
