// What the agent's prompt builder needs to know about an environment besides its state text: RAGEN keeps these in
// config/envs.yaml next to each tag (env_instruction, grid_vocab, max_actions_per_traj, max_tokens). Documented
// in full at the top of envs/index.ts.

/** Symbol → meaning pairs in the order RAGEN prints them ("sym: meaning" joined by ", "). */
export type GridVocab = readonly (readonly [symbol: string, meaning: string])[];

export interface EnvSpec {
  /** The env tag, e.g. 'SimpleSokoban'. */
  readonly tag: string;
  /** RAGEN's `env_instruction`: the task text that opens the first user message ('' for Bandit). */
  readonly instruction: string;
  /** Symbols of the state text and their meanings, or null when the state is not a grid (Bandit). */
  readonly gridVocab: GridVocab | null;
  /** Hard cap on primitive actions per episode, enforced by the agent's manager (not by the env). */
  readonly maxActionsPerTraj: number;
  /**
   * The N of "Max response length: N words (tokens)." in the prompt. null = the tag sets none and RAGEN falls
   * back to the rollout's response length.
   */
  readonly maxTokens: number | null;
}

/** "sym: meaning, sym: meaning" exactly as RAGEN joins a grid vocabulary. */
export function describeGridVocab(vocab: GridVocab): string {
  return vocab.map(([symbol, meaning]) => `${symbol}: ${meaning}`).join(', ');
}
