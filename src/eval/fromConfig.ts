// From a run's config to how its agent is scored: the agent format it was trained with, RAGEN's validation protocol
// and the default suites of its training envs. Browser-safe (no fs): the CLI (`ragen eval`, via ./load) and the
// playground's trainer worker both derive their scorecards here, so the two show the same numbers.
import { assertDialoguesFit, type AgentFormat } from '../agent/index';
import { envBlocks, type RunConfig } from '../starpo/config';
import type { EvalProtocol } from './scorecard';
import { defaultSuites, type EvalSuite } from './suites';

/** How the agent of `config` talks: the same format its training rollouts were played with. */
export { agentFormatFromConfig } from '../starpo/config';

/** RAGEN's validation protocol from the run config: valGroups seeds from seedVal, valTemperature, one rollout each. */
export function protocolFromConfig(c: RunConfig, over: Partial<EvalProtocol> = {}): EvalProtocol {
  return {
    episodes: c.agent.valGroups,
    k: 1,
    baseSeed: c.agent.seedVal,
    temperature: c.rollout.valDoSample ? c.rollout.valTemperature : 0,
    seed: c.trainer.seed,
    batchSize: 32,
    ...over,
  };
}

/** The default suites of the run's training envs. */
export function suitesFromConfig(c: RunConfig): EvalSuite[] {
  return defaultSuites(envBlocks(c, 'train'));
}

/**
 * Throws an Error naming the first suite whose prompt plus responses cannot fit the model's `maxPositions`
 * (max_position_embeddings) in this agent format: checked before any episode is played.
 */
export function assertSuitesFitContext(
  suites: readonly EvalSuite[],
  format: AgentFormat,
  baseSeed: number,
  countTokens: (text: string) => number,
  maxPositions: number,
): void {
  assertDialoguesFit({
    blocks: suites.map((s) => ({
      name: `suite ${s.name}`,
      block: {
        tag: s.tag,
        nGroups: 1,
        ...(s.config !== undefined ? { config: s.config } : {}),
        ...(s.maxActionsPerTraj !== undefined ? { maxActionsPerTraj: s.maxActionsPerTraj } : {}),
      },
    })),
    seed: baseSeed,
    format,
    maxPositions,
    countTokens,
  });
}
