// A tiny scripted environment for the agent tests: a corridor "O____G" with a hole at the left end and the goal
// at the right end. The player starts at cell 1 + seed % 3. Every action costs −0.1; reaching the goal adds +1 and
// ends the episode with success; stepping into the hole ends it without success. 'Wait' is a valid action that
// changes nothing.
import type { Env, StepResult } from '../../../envs/types';
import type { EnvRegistry } from '../../../src/agent/envGroups';
import type { PromptEnvInfo } from '../../../src/agent/types';

export const CORRIDOR_LENGTH = 6;

export class CorridorEnv implements Env {
  readonly tag: string;
  readonly actionNames: readonly string[] = ['Left', 'Right', 'Wait'];
  position = 1;
  /** Every seed this instance was reset with, in order. */
  readonly resetSeeds: number[] = [];
  /** Every action name this instance received, in order. */
  readonly received: string[] = [];

  constructor(tag = 'Corridor') {
    this.tag = tag;
  }

  reset(seed: number): string {
    this.resetSeeds.push(seed);
    this.position = 1 + (((seed % 3) + 3) % 3);
    return this.render();
  }

  step(action: string): StepResult {
    this.received.push(action);
    const name = this.actionNames.find((a) => a.toLowerCase() === action.toLowerCase());
    if (name === undefined) {
      return {
        observation: this.render(),
        reward: 0,
        done: false,
        info: { success: false, actionIsValid: false, actionIsEffective: false },
      };
    }
    const before = this.position;
    if (name === 'Left') this.position -= 1;
    if (name === 'Right') this.position += 1;
    const atGoal = this.position === CORRIDOR_LENGTH - 1;
    const inHole = this.position === 0;
    return {
      observation: this.render(),
      reward: -0.1 + (atGoal ? 1 : 0),
      done: atGoal || inHole,
      info: { success: atGoal, actionIsValid: true, actionIsEffective: this.position !== before },
    };
  }

  render(): string {
    const cells = ['O', '_', '_', '_', '_', 'G'];
    cells[this.position] = this.position === 0 ? 'X' : this.position === CORRIDOR_LENGTH - 1 ? '√' : 'P';
    return cells.join('');
  }
}

export function corridorInfo(tag = 'Corridor', overrides: Partial<PromptEnvInfo> = {}): PromptEnvInfo {
  return {
    tag,
    instruction: 'Walk right to the goal.',
    gridVocab: [
      ['P', 'player'],
      ['G', 'goal'],
      ['O', 'hole'],
    ],
    actionNames: ['Left', 'Right', 'Wait'],
    maxActionsPerTraj: 10,
    maxTokens: 100,
    compactInstruction: 'walk to the goal.',
    ...overrides,
  };
}

/** A registry of corridor tags that remembers every env it made. */
export function corridorRegistry(tags: string[] = ['Corridor', 'Corridor2']): EnvRegistry & { made: CorridorEnv[] } {
  const made: CorridorEnv[] = [];
  return {
    made,
    makeEnv(tag: string, config?: Record<string, unknown>): Env {
      if (!tags.includes(tag)) throw new Error(`unknown tag ${tag}`);
      if (config !== undefined && Object.keys(config).length > 0)
        throw new Error(`unknown config key ${Object.keys(config)[0]}`);
      const env = new CorridorEnv(tag);
      made.push(env);
      return env;
    },
    promptInfo(tag: string): PromptEnvInfo {
      return corridorInfo(tag);
    },
  };
}
