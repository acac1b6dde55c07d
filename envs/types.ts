// The environment contract of docs/architecture.md. Every env in this folder implements it; nothing here imports tfjs
// or the DOM.

export interface StepInfo {
  /** The environment's goal is reached (Sokoban: every box on a target; FrozenLake: on the goal; Bandit: chose the high arm). */
  success: boolean;
  /** The action name was one of `actionNames` (case-insensitive). */
  actionIsValid: boolean;
  /** The action changed the state (the player moved). */
  actionIsEffective: boolean;
}

export interface StepResult {
  observation: string;
  reward: number;
  done: boolean;
  info: StepInfo;
}

export interface Env {
  readonly tag: string;
  /** Primitive action names, e.g. ['Up', 'Down', 'Left', 'Right'] in RAGEN's id order (id = index + 1). */
  readonly actionNames: readonly string[];
  /** Initial state text; the same seed gives the same state on every platform. */
  reset(seed: number): string;
  /** ONE primitive action by name, case-insensitive. An unknown name is an invalid action, never an exception. */
  step(action: string): StepResult;
  /** Current state text. */
  render(): string;
}
