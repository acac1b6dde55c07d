// The bridge from the envs package (makeEnv + envSpec) to the EnvRegistry the env-group manager consumes.
import { envSpec, makeEnv } from '../../envs/index';
import type { EnvRegistry } from './envGroups';
import type { PromptEnvInfo } from './types';

/**
 * Tags whose prompt has no "Your available actions are:" block. RAGEN builds that block from the tag's DEFAULT
 * config, and BanditEnvConfig.action_lookup is None there (each env only fills it in at reset, with the arm order
 * shuffled). The arm names reach the model through the Bandit observation text instead.
 */
const NO_ACTION_BLOCK_TAGS = new Set(['Bandit', 'BanditTest']);

export interface EnvRegistryOptions {
  /**
   * RAGEN `actor_rollout_ref.rollout.response_length`, printed as "Max response length" for tags without their
   * own max_tokens (Bandit). RAGEN: 400 by default, 500 in the Bandit config.
   */
  responseLength?: number;
}

/** The real environments of this repository as an EnvRegistry. */
export function envRegistry(options: EnvRegistryOptions = {}): EnvRegistry {
  const responseLength = options.responseLength ?? 400;
  return {
    makeEnv: (tag, config) => makeEnv(tag, config),
    promptInfo(tag, config): PromptEnvInfo {
      const spec = envSpec(tag, config);
      return {
        tag,
        instruction: spec.instruction,
        gridVocab: spec.gridVocab,
        actionNames: NO_ACTION_BLOCK_TAGS.has(tag) ? null : makeEnv(tag).actionNames.slice(),
        maxActionsPerTraj: spec.maxActionsPerTraj,
        maxTokens: spec.maxTokens ?? responseLength,
      };
    },
  };
}
