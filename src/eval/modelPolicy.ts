// The tfjs policy as a ScorecardPolicy: the same sampler as the trainer's rollouts (src/starpo/policyAgent.ts),
// seeded per batch and per generate call, with reasoning length counted in model tokens. Browser-safe (no fs), so
// the playground can score its live policy with it.
import type { Qwen2Model } from '../model/qwen2';
import type { Tokenizer } from '../model/tokenizer';
import { mixSeed } from '../model/seeded';
import { policyGenerateFn } from '../starpo/policyAgent';
import type { ScorecardPolicy } from './scorecard';

export interface ModelPolicyOptions {
  /** Most tokens generated per turn (RunConfig rollout.maxNewTokens). */
  maxNewTokens: number;
  /** Nucleus mass (rollout.topP; 1 = off). */
  topP?: number;
  /** Top-k (rollout.topK; -1 = off). */
  topK?: number;
}

/** Scores `model` (not owned: the caller disposes it). */
export function modelScorecardPolicy(
  name: string,
  model: Qwen2Model,
  tokenizer: Tokenizer,
  opts: ModelPolicyOptions,
): ScorecardPolicy {
  return {
    name,
    lengthUnit: 'tokens',
    countTokens: (text) => tokenizer.encode(text).length,
    generateFn: (ctx) =>
      policyGenerateFn(model, tokenizer, {
        maxNewTokens: opts.maxNewTokens,
        temperature: ctx.temperature,
        topP: opts.topP,
        topK: opts.topK,
        seedForCall: (call) => mixSeed(ctx.seed, call),
      }),
  };
}
