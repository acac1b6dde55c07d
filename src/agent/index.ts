// The multi-turn agent protocol: prompts, response parsing, env groups and the rollout loop (no tfjs here).
export type { HistoryRecord, PromptEnvInfo } from './types';
export { CHAT_MARKERS, parseResponse, restoreForcedPrefix } from './parse';
export type { ParseOptions, ParsedResponse } from './parse';
export { formatCompactReward, formatPythonFloat, formatRagenReward } from './format';
export {
  COMPACT_INSTRUCTIONS,
  RAGEN_SYSTEM_PROMPT,
  buildPrompt,
  compactPromptFixedText,
  ragenEnvPrefix,
  targetMaskFromPositionMask,
  turnTrainingSamples,
} from './prompt';
export type {
  ChatMessage,
  ChatRole,
  PromptMode,
  PromptOptions,
  PromptSegment,
  PromptStyle,
  RenderedPrompt,
  TurnNumbers,
} from './prompt';
export { EnvGroupManager, summarizeEnvMetrics } from './envGroups';
export type {
  EnvEntry,
  EnvGroupsConfig,
  EnvRegistry,
  EnvRollout,
  EnvStatus,
  EnvTurnInput,
  RolloutState,
  TagBlock,
} from './envGroups';
export { runRollouts } from './rollout';
export type {
  AgentFormat,
  ContinuousGenerate,
  GenerateContext,
  GenerateFn,
  RolloutOptions,
  RolloutResult,
  Trajectory,
  TurnRecord,
} from './rollout';
export { envRegistry } from './registry';
export type { EnvRegistryOptions } from './registry';
export { assertDialoguesFit, dialogueLengths } from './contextFit';
export type { ContextFitOptions, DialogueLength } from './contextFit';
