// The tfjs policy as the agent loop sees it: a GenerateFn (prompts in, sampled continuations out) built from a
// Qwen2 model and its tokenizer. Shared by the Trainer (training and validation rollouts) and `ragen eval`
// (checkpoint scorecards), so both sample the same way: same stop rules, same per-turn token limit, same seeding.
import type { GenerateFn } from '../agent/index';
import { ContinuousEngine, continuousCapacity } from '../model/continuousBatching';
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
  /**
   * Most dialogues generated together (`rollout.maxBatchSize`; default: all). The dialogues of a rollout batch are
   * dealt to batches of at most this many in turn-1 order (an env group's members side by side), each batch with
   * its own KV-cache session kept across turns; the batches run one after another. The samples do not depend on it:
   * every row draws from its own random stream, keyed by its env id.
   */
  maxBatchSize?: number;
  /**
   * How a rollout batch is played (`rollout.engine`): 'turns' (default) generates every running dialogue's turn
   * together, in GenerationSessions of at most maxBatchSize rows; 'continuous' gives the GenerateFn a `continuous`
   * engine (src/model/continuousBatching.ts) with maxBatchSize slots, which runRollouts then uses. Both draw each
   * dialogue's samples from the same stream (its turn's seed and its env id).
   */
  engine?: 'turns' | 'continuous';
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
    throw new Error(`policyGenerateFn: ${(err as Error).message}`, { cause: err });
  }
  const maxBatch = opts.maxBatchSize ?? Infinity;
  if (!(maxBatch >= 1)) throw new Error(`policyGenerateFn: maxBatchSize must be at least 1, got ${opts.maxBatchSize}`);
  // How both engines sample and stop (each adds its seeds and progress).
  const sampling = {
    maxNewTokens: opts.maxNewTokens,
    temperature: opts.temperature,
    topP: opts.topP,
    topK: opts.topK,
    stopTokenIds: [imEnd],
    stopStrings: STOP_STRINGS,
    decode: (t: number[]) => tokenizer.decode(t),
    padTokenId: pad,
  };
  let call = 0;
  let sessions: GenerationSession[] = []; // one per batch of dialogues
  const batchOf = new Map<number, number>(); // env id -> its batch (its session), fixed at turn 1
  const release = () => {
    sessions.forEach((s) => s.dispose());
    sessions = [];
    batchOf.clear();
  };
  const fn: GenerateFn = async (prompts, context) => {
    if (!context || context.turn === 1) release();
    // Without a context every row is its own dialogue, keyed by its place (generate()'s default keys).
    const keys = context?.keys ?? prompts.map((_, i) => i);
    const seed = opts.seedForCall(context ? context.turn - 1 : call++); // per turn, so a split batch seeds alike
    keys.forEach((key, i) => {
      if (!batchOf.has(key)) batchOf.set(key, Math.floor(i / maxBatch));
    });
    const rowsOf = new Map<number, number[]>(); // batch -> this call's rows in it, in order
    keys.forEach((key, i) => rowsOf.set(batchOf.get(key)!, [...(rowsOf.get(batchOf.get(key)!) ?? []), i]));
    const texts = new Array<string>(prompts.length);
    for (const [b, rows] of [...rowsOf].sort((x, y) => x[0] - y[0])) {
      sessions[b] ??= new GenerationSession(model);
      const result = await sessions[b].generate(
        rows.map((i) => tokenizer.encode(prompts[i])),
        {
          ...sampling,
          seed,
          onDecodeStep: context?.onTokens ? (decoded) => context.onTokens!(decoded, opts.maxNewTokens) : undefined,
        },
        rows.map((i) => keys[i]),
      );
      if (opts.onTokens) for (const t of result.tokens) opts.onTokens(t.length);
      rows.forEach((i, k) => (texts[i] = tokenizer.decode(result.tokens[k], { skipSpecialTokens: true })));
    }
    return texts;
  };
  fn.release = release;
  if (opts.engine === 'continuous') {
    fn.continuous = async (first, onTurnEnd, { maxTurn, onTokens }) => {
      if (!first.length) return;
      const prompts = first.map((d) => tokenizer.encode(d.prompt));
      const longest = Math.max(...prompts.map((p) => p.length));
      await new ContinuousEngine(model).run(
        first.map((d, i) => ({ key: d.key, prompt: prompts[i] })),
        (key, _turn, result) => {
          if (opts.onTokens) opts.onTokens(result.tokens.length);
          const next = onTurnEnd(key, tokenizer.decode(result.tokens, { skipSpecialTokens: true }));
          return next === null ? null : tokenizer.encode(next);
        },
        {
          slots: Math.min(maxBatch, first.length),
          capacity: continuousCapacity(model, longest, maxTurn, opts.maxNewTokens),
          ...sampling,
          seedForTurn: (turn) => opts.seedForCall(turn - 1),
          onStep: onTokens ? (sampled) => onTokens(sampled / first.length, opts.maxNewTokens) : undefined,
        },
      );
    };
  }
  return fn;
}
