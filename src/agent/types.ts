// Data shapes shared by the prompt builder, the env-group manager and the rollout loop.
import type { StepInfo } from '../../envs/types';

/**
 * What the prompt needs to know about an environment tag (RAGEN's `custom_envs.<Tag>` entry). The envs package's
 * `EnvSpec` carries these fields; `src/agent` depends only on this shape.
 */
export interface PromptEnvInfo {
  /** Env tag, e.g. 'SimpleSokoban' (used to look up the compact instruction). */
  tag: string;
  /** RAGEN `env_instruction`: the task text that opens the first user message ('' for Bandit). */
  instruction: string;
  /** Symbol → meaning pairs listed after the instruction, or null when the env has no grid vocabulary. */
  gridVocab: readonly (readonly [string, string])[] | null;
  /** Action names listed as "Your available actions are:", or null/empty when the env has no action lookup. */
  actionNames: readonly string[] | null;
  /** RAGEN `max_actions_per_traj`: the episode's primitive-action budget, enforced by the manager. */
  maxActionsPerTraj: number;
  /** RAGEN `max_tokens`: only printed in the prompt ("Max response length: N words (tokens)."). */
  maxTokens: number;
  /** One-line task text for the compact prompt; defaults to the built-in line for known tags. */
  compactInstruction?: string;
}

/**
 * One entry of an env's history (RAGEN's rollout cache). A record starts as {state, actionsLeft}; when the turn
 * played from that state is over, the manager fills in the remaining fields and appends the next {state, actionsLeft}.
 */
export interface HistoryRecord {
  /** Env text state shown to the model at the start of this turn. */
  state: string;
  /** Primitive actions still allowed in the episode at the start of this turn. */
  actionsLeft: number;
  /** Action names actually executed this turn (canonical spelling, after mapping, budget cut and early stop). */
  actions?: string[];
  /** Sum of the env rewards of the executed actions (0 when none ran); the format penalty is NOT included. */
  reward?: number;
  /** Info of the turn's last executed action, or null when no action ran. */
  info?: StepInfo | null;
  /** The response as stored and trained on (`ParsedResponse.reconstructed`). */
  llmResponse?: string;
  /** The sampled text with the forced `<think>` restored, before parsing. */
  llmRawResponse?: string;
}
