// Scoring a checkpoint, composed once: the run config's suites, RAGEN's validation protocol and the agent format it
// was trained with (./fromConfig), the fit of every suite in the model's positions, the model as a policy with the
// run's sampling settings (./modelPolicy), and the scorecard (./scorecard). `ragen eval` (src/cli/eval.ts) and the
// playground's trainer worker both call scoreModel, so the two show the same numbers. Browser-safe (no fs).
import type { Qwen2Model } from '../model/qwen2';
import type { Tokenizer } from '../model/tokenizer';
import type { RunConfig } from '../starpo/config';
import { agentFormatFromConfig, assertSuitesFitContext, protocolFromConfig, suitesFromConfig } from './fromConfig';
import { modelScorecardPolicy } from './modelPolicy';
import { runScorecard, type EvalProtocol, type Scorecard, type ScorecardOptions } from './scorecard';
import type { EvalSuite } from './suites';

export interface ModelScoring extends ScorecardOptions {
  /** The suites played (default: the run's, suitesFromConfig). */
  suites?: readonly EvalSuite[];
  /** The protocol, over the run's (protocolFromConfig): episodes, k, seeds, temperature, batch size. */
  protocol?: Partial<EvalProtocol>;
}

/** Scores `model` (not owned: the caller disposes it) as `config` says; throws naming a suite that cannot fit. */
export async function scoreModel(
  name: string,
  model: Qwen2Model,
  tokenizer: Tokenizer,
  config: RunConfig,
  scoring: ModelScoring = {},
): Promise<Scorecard> {
  const suites = scoring.suites ?? suitesFromConfig(config);
  const protocol = protocolFromConfig(config, scoring.protocol);
  const format = agentFormatFromConfig(config);
  assertSuitesFitContext(
    suites,
    format,
    protocol.baseSeed,
    (text) => tokenizer.encode(text).length,
    model.config.max_position_embeddings,
  );
  const policy = modelScorecardPolicy(name, model, tokenizer, {
    maxNewTokens: config.rollout.maxNewTokens,
    topP: config.rollout.topP,
    topK: config.rollout.topK,
  });
  return runScorecard(policy, suites, protocol, format, {
    onProgress: scoring.onProgress,
    onEpisodes: scoring.onEpisodes,
  });
}
