// Sokoban (spec §2.2): push every box onto a target. Four RAGEN tags share this env:
//   SimpleSokoban              6x6, 1 box, searchDepth 300 (RAGEN v1's default training env)
//   LargerSokoban              8x8, 2 boxes, searchDepth 10
//   SokobanDifferentGridVocab  6x6, 1 box, searchDepth 30, rendered with W . G C B A @
//   CoordSokoban               RAGEN-2's default training env: SimpleSokoban's levels shown as coordinates plus
//                              the grid (observationFormat 'grid_coord'), a coordinate instruction, max_tokens 120
// Each reset generates a level from the seed (or loads `level`). Rewards per primitive action: −0.1, +1 box onto
// a target, −1 box off a target, +10 when every box is on a target; done when solved or after maxSteps actions.

import type { Env, StepResult } from '../types';
import {
  MAX_GRID_SIDE,
  definedEntries,
  gridText,
  integerBetween,
  lookupAction,
  validateConfig,
  withKey,
  type Validator,
} from '../config';
import { observationFormat, type ObservedConfig } from '../observation';
import { checkSeed } from '../random';
import type { EnvSpec } from '../spec';
import { SOKOBAN_ACTIONS, applyMove, stepReward } from './dynamics';
import { generateSokoban } from './generate';
import { isSokobanSolvable } from './solver';
import {
  ALTERNATIVE_VOCAB,
  DEFAULT_VOCAB,
  boxesOnTarget,
  cloneState,
  parseSokobanLevel,
  renderSokobanObservation,
  type SokobanState,
  type SokobanVocab,
} from './grid';

export { SOKOBAN_ACTIONS, applyMove, stepReward } from './dynamics';
export { generateSokoban, SokobanGenerationError } from './generate';
export { isSokobanSolvable, solveSokoban } from './solver';
export {
  ALTERNATIVE_VOCAB,
  DEFAULT_VOCAB,
  boxesOnTarget,
  cloneState,
  parseSokobanLevel,
  renderSokoban,
  renderSokobanCoordinates,
  renderSokobanObservation,
  SOKOBAN_COORDINATE_LABELS,
  type SokobanState,
  type SokobanVocab,
} from './grid';

export const SOKOBAN_TAGS = ['SimpleSokoban', 'LargerSokoban', 'SokobanDifferentGridVocab', 'CoordSokoban'] as const;
export type SokobanTag = (typeof SOKOBAN_TAGS)[number];

/**
 * Sokoban's env_instruction. The spec does not quote RAGEN's; this wording says the same: who the player is, the
 * push rule, and the multi-action answer format.
 */
export const SOKOBAN_INSTRUCTION =
  'You are solving the Sokoban puzzle. You are the player and you need to push all boxes to targets. When you are ' +
  'right next to a box, you can push it by moving in the same direction. You cannot push a box through a wall, and ' +
  'you cannot pull a box. The answer should be a sequence of actions, like <answer>Right || Right || Up</answer>';

/**
 * CoordSokoban's env_instruction: RAGEN-2's is multi-line and says that the state gives zero-indexed coordinates
 * of the player, boxes and targets next to the grid, from (0, 0) top left to (5, 5) bottom right. This wording says
 * the same; the bottom-right corner is the board's own (rows − 1, cols − 1), so a resized room is described truly.
 */
export function coordSokobanInstruction(rows: number, cols: number): string {
  return [
    'You are solving the Sokoban puzzle. You are the player and you need to push all boxes to targets.',
    'The state gives the zero-indexed (row, col) coordinates of the targets, the boxes and the player, then the symbol grid.',
    `Coordinates run from the top-left corner (0, 0) to the bottom-right corner (${rows - 1}, ${cols - 1}).`,
    'When you are right next to a box, you can push it by moving in the same direction.',
    'You cannot push a box through a wall, and you cannot pull a box.',
    'The answer should be a sequence of actions, like <answer>Right || Right || Up</answer>',
  ].join('\n');
}

/** Besides `observationFormat`: 'coord' lists the targets, boxes and player (walls are not listed). */
export interface SokobanConfig extends ObservedConfig {
  /** [rows, cols] of generated rooms (RAGEN's dim_room), each from 3 (an interior) to MAX_GRID_SIDE. */
  dimRoom: readonly [number, number];
  /** Boxes (and targets) per generated room; the player and every box need a cell inside the walls. */
  numBoxes: number;
  /** TTL of the reverse-play search that generates a level: larger = boxes can end up further from targets. */
  searchDepth: number;
  /** The env reports done after this many actions (gym-sokoban's max_steps; RAGEN's 10-action budget hits first). */
  maxSteps: number;
  /**
   * A fixed level in the default vocabulary (# _ O √ X P S), rows joined by '\n' or as an array, used by every
   * reset instead of generating one (dimRoom, numBoxes and searchDepth are then unused). Cells outside the grid
   * act as walls, so it need not be walled in. At most MAX_GRID_SIDE a side, and it must be solvable (checked by
   * breadth-first search; a level too large to decide within the search budget is accepted).
   */
  level?: string | readonly string[];
}

export const SOKOBAN_DEFAULTS: Readonly<Record<SokobanTag, Readonly<SokobanConfig>>> = {
  SimpleSokoban: { dimRoom: [6, 6], numBoxes: 1, searchDepth: 300, maxSteps: 100, observationFormat: 'grid' },
  LargerSokoban: { dimRoom: [8, 8], numBoxes: 2, searchDepth: 10, maxSteps: 100, observationFormat: 'grid' },
  SokobanDifferentGridVocab: {
    dimRoom: [6, 6],
    numBoxes: 1,
    searchDepth: 30,
    maxSteps: 100,
    observationFormat: 'grid',
  },
  // RAGEN-2's envs.yaml: SimpleSokoban's room (search_depth left at the dataclass's 300), shown as grid_coord.
  CoordSokoban: { dimRoom: [6, 6], numBoxes: 1, searchDepth: 300, maxSteps: 100, observationFormat: 'grid_coord' },
};

const dimRoom: Validator = (v) =>
  Array.isArray(v) && v.length === 2 && v.every((n) => Number.isInteger(n) && n >= 3 && n <= MAX_GRID_SIDE)
    ? null
    : `must be [rows, cols], two integers from 3 to ${MAX_GRID_SIDE}`;

const SOKOBAN_CONFIG_KEYS = {
  dimRoom,
  // Upper bounds: a 20x20 room holds at most a few dozen boxes; the reverse search recurses searchDepth deep; an
  // episode never needs more primitive moves than this.
  numBoxes: integerBetween(1, 50),
  searchDepth: integerBetween(1, 1_000),
  maxSteps: integerBetween(1, 10_000),
  level: gridText,
  observationFormat,
} as const;

export class SokobanEnv implements Env {
  readonly tag: SokobanTag;
  readonly actionNames: readonly string[] = SOKOBAN_ACTIONS;
  readonly config: Readonly<SokobanConfig>;
  readonly vocab: SokobanVocab;
  readonly spec: EnvSpec;

  private readonly fixedLevel: SokobanState | null;
  private board: SokobanState | null = null;
  private boxesPlaced = 0;
  private steps = 0;

  constructor(tag: SokobanTag, config?: Record<string, unknown>) {
    validateConfig(tag, config, SOKOBAN_CONFIG_KEYS);
    this.tag = tag;
    this.config = Object.freeze({ ...SOKOBAN_DEFAULTS[tag], ...definedEntries(config) } as SokobanConfig);
    this.fixedLevel =
      this.config.level === undefined ? null : withKey(tag, 'level', () => parseSokobanLevel(this.config.level!));
    if (this.fixedLevel) {
      // docs/architecture.md: an unplayable level throws. A level too large to decide within the search budget is played.
      if (isSokobanSolvable(this.fixedLevel) === false) {
        throw new Error(`${tag}: the level cannot be solved: no sequence of moves puts every box on a target`);
      }
    } else {
      // The player and every box need a cell of their own inside the wall border.
      const [rows, cols] = this.config.dimRoom;
      const inside = (rows - 2) * (cols - 2);
      if (this.config.numBoxes > inside - 1) {
        throw new Error(
          `${tag}: config 'numBoxes' ${this.config.numBoxes} does not fit a ${rows}x${cols} room (${inside} cells inside ` +
            `the walls, one of them for the player): at most ${Math.max(0, inside - 1)}`,
        );
      }
    }
    this.vocab = tag === 'SokobanDifferentGridVocab' ? ALTERNATIVE_VOCAB : DEFAULT_VOCAB;
    const [rows, cols] = this.fixedLevel ? [this.fixedLevel.rows, this.fixedLevel.cols] : this.config.dimRoom;
    this.spec = {
      tag,
      instruction: tag === 'CoordSokoban' ? coordSokobanInstruction(rows, cols) : SOKOBAN_INSTRUCTION,
      gridVocab: this.vocab.gridVocab,
      maxActionsPerTraj: 10,
      maxTokens: tag === 'CoordSokoban' ? 120 : 100,
    };
  }

  reset(seed: number): string {
    checkSeed(seed);
    if (this.fixedLevel) {
      this.board = cloneState(this.fixedLevel);
    } else {
      const [rows, cols] = this.config.dimRoom;
      const { numBoxes, searchDepth } = this.config;
      this.board = generateSokoban(seed, { rows, cols, numBoxes, searchDepth });
    }
    // RAGEN starts this count at 0, which is right for generated levels (no box starts on a target); counting
    // keeps a hand-written level with a box already on a target from paying +1 on the first step.
    this.boxesPlaced = boxesOnTarget(this.board);
    this.steps = 0;
    return this.render();
  }

  step(action: string): StepResult {
    const board = this.state;
    const id = lookupAction(this.actionNames, action);
    if (id < 0) {
      return { observation: this.render(), reward: 0, done: this.done, info: this.info(false, false) };
    }
    const moved = applyMove(board, id);
    this.steps++;
    const before = this.boxesPlaced;
    this.boxesPlaced = boxesOnTarget(board);
    const reward = stepReward(before, this.boxesPlaced, board.numBoxes);
    return { observation: this.render(), reward, done: this.done, info: this.info(true, moved) };
  }

  render(): string {
    return renderSokobanObservation(this.state, this.vocab, this.config.observationFormat);
  }

  /** The live board (do not mutate it; use cloneState for a copy). Throws before the first reset. */
  get state(): SokobanState {
    if (!this.board) throw new Error(`${this.tag}: call reset(seed) before step(), render() or state`);
    return this.board;
  }

  /** Every box is on a target. */
  get solved(): boolean {
    return this.boxesPlaced === this.state.numBoxes;
  }

  /** Solved, or maxSteps actions taken. */
  get done(): boolean {
    return this.solved || this.steps >= this.config.maxSteps;
  }

  /** Valid actions taken since the last reset. */
  get stepCount(): number {
    return this.steps;
  }

  private info(actionIsValid: boolean, actionIsEffective: boolean) {
    return { success: this.solved, actionIsValid, actionIsEffective };
  }
}
