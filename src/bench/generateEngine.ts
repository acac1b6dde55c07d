// Which engine a benchmark's generation runs (`ragen bench --gen-engine`): 'turns', the GenerationSession that
// rollout.engine 'turns' uses (every row decodes until the longest is done), or 'continuous', the continuous-batching
// engine of rollout.engine 'continuous' (src/model/continuousBatching.ts), each row one dialogue of one turn, as
// many slots as rows. Both sample the same tokens from the same seeds, so their rows measure the same work.
import { CACHE_BUCKET, GenerationSession } from '../model/generate';
import { ContinuousEngine } from '../model/continuousBatching';
import type { Qwen2Model } from '../model/qwen2';

export const GEN_ENGINES = ['turns', 'continuous'] as const;
export type GenEngine = (typeof GEN_ENGINES)[number];

export function isGenEngine(name: string): name is GenEngine {
  return (GEN_ENGINES as readonly string[]).includes(name);
}

/** One batched generation of `prompts` (keys: their places), sampled at temperature 1: the new tokens per row. */
export async function benchGenerate(
  engine: GenEngine,
  model: Qwen2Model,
  prompts: number[][],
  o: { maxNewTokens: number; seed: number },
): Promise<number[][]> {
  const keys = prompts.map((_, r) => r);
  if (engine === 'turns') {
    const session = new GenerationSession(model);
    try {
      const out = await session.generate(prompts, { ...o, temperature: 1, padTokenId: 0 }, keys);
      return out.tokens;
    } finally {
      session.dispose();
    }
  }
  const tokens: number[][] = prompts.map(() => []);
  const longest = Math.max(...prompts.map((p) => p.length));
  await new ContinuousEngine(model).run(
    prompts.map((prompt, key) => ({ key, prompt })),
    (key, _turn, result) => {
      tokens[key] = result.tokens;
      return null;
    },
    {
      slots: prompts.length,
      capacity: Math.ceil((longest + o.maxNewTokens) / CACHE_BUCKET) * CACHE_BUCKET,
      maxNewTokens: o.maxNewTokens,
      temperature: 1,
      padTokenId: 0,
      seedForTurn: () => o.seed,
    },
  );
  return tokens;
}
