// A run's dialogues against its model's positions, checked before any work by the CLI (`ragen train`) and the
// playground's worker (src/agent/contextFit.ts does the measuring). Browser-safe.
import { assertDialoguesFit } from '../agent/index';
import { agentFormatFromConfig, envBlocks, type RunConfig } from './config';

/**
 * Throws an Error naming the env block (`agent.trainEnvs[i]` / `agent.valEnvs[i]`) whose prompt plus responses
 * cannot fit `maxPositions` tokens (the model's max_position_embeddings) under this run's agent settings.
 */
export function assertRunFitsContext(
  config: RunConfig,
  countTokens: (text: string) => number,
  maxPositions: number,
): void {
  for (const split of ['train', 'val'] as const) {
    const key = split === 'train' ? 'agent.trainEnvs' : 'agent.valEnvs';
    assertDialoguesFit({
      blocks: envBlocks(config, split).map((block, i) => ({ name: `${key}[${i}]`, block })),
      seed: split === 'train' ? (config.agent.seedTrain ?? 0) : config.agent.seedVal,
      format: agentFormatFromConfig(config),
      maxPositions,
      countTokens,
    });
  }
}
