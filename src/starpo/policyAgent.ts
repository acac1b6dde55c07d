// The tfjs policy as the agent loop sees it: a GenerateFn (prompts in, sampled continuations out) built from a
// Qwen2 model and its tokenizer. Shared by the Trainer (training and validation rollouts) and `ragen eval`
// (checkpoint scorecards), so both sample the same way: same stop rules, same per-turn token limit, same seeding.
import type { GenerateFn } from '../agent/index';
import { GenerationSession } from '../model/generate';
import type { Qwen2Model } from '../model/qwen2';
import { chatTokenIds, type Tokenizer } from '../model/tokenizer';

/**
 * Stop strings of every rollout: RAGEN stops at `<|im_end|>`; `</answer>` ends the format (anything after it is
 * discarded by the parser anyway, spec §3.3), which saves the tiny models' tokens.
 */
export const STOP_STRINGS = ['</answer>'];

export interface PolicyAgentOptions {
  /** Most tokens generated per turn (RAGEN `rollout.response_length`). */
  maxNewTokens: number;
  /** Sampling temperature; 0 = greedy (RAGEN: rollouts 1.0, validation 0.5). */
  temperature: number;
  /** Nucleus mass; 1 = off. */
  topP?: number;
  /** Top-k; -1 = off. */
  topK?: number;
  /**
   * Sampling seed of the `call`-th generate call (0, 1, ...) of this GenerateFn; within a rollout batch the call is
   * the turn - 1. One seed per call, so a rollout batch of several turns never reuses a random stream, and the same
   * seeds + backend give the same samples.
   */
  seedForCall: (call: number) => number;
  /** Called with the number of new tokens of each sampled continuation (progress / throughput displays). */
  onTokens?: (count: number) => void;
}

/**
 * A GenerateFn that samples from `model`. Throws when the tokenizer lacks `<|im_end|>` or a pad token. Within one
 * rollout batch (turn 1 starts one) it keeps a KV cache per env, so a later turn prefills only the new part of the
 * dialogue (GenerationSession); `release()` frees it. The model must not change during a rollout batch.
 */
export function policyGenerateFn(model: Qwen2Model, tokenizer: Tokenizer, opts: PolicyAgentOptions): GenerateFn {
  let imEnd: number;
  let pad: number;
  try {
    ({ imEnd, pad } = chatTokenIds(tokenizer));
  } catch (err) {
    throw new Error(`policyGenerateFn: ${(err as Error).message}`);
  }
  let call = 0;
  let session: GenerationSession | null = null;
  const release = () => {
    session?.dispose();
    session = null;
  };
  const fn: GenerateFn = async (prompts, context) => {
    if (!context || context.turn === 1) release();
    session ??= new GenerationSession(model);
    const ids = prompts.map((p) => tokenizer.encode(p));
    const result = await session.generate(ids, {
      maxNewTokens: opts.maxNewTokens,
      temperature: opts.temperature,
      topP: opts.topP,
      topK: opts.topK,
      stopTokenIds: [imEnd],
      stopStrings: STOP_STRINGS,
      decode: (t) => tokenizer.decode(t),
      seed: opts.seedForCall(context ? context.turn - 1 : call++),   // per turn, so a split batch seeds alike
      padTokenId: pad,
      onDecodeStep: context?.onTokens ? (decoded) => context.onTokens!(decoded, opts.maxNewTokens) : undefined,
    }, context?.keys);
    if (opts.onTokens) for (const t of result.tokens) opts.onTokens(t.length);
    return result.tokens.map((t) => tokenizer.decode(t, { skipSpecialTokens: true }));
  };
  fn.release = release;
  return fn;
}
