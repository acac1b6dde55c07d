// How much a sampled answer reads its reasoning and how much it reads the board (experiments/lab/answer-reasoning.ts):
// each first turn's answer is scored by teacher forcing after its own prompt and reasoning, after its own prompt and
// the reasoning sampled on another env, and after another env's prompt and its own reasoning.

/** One sampled first turn: its env group, its generation prompt (ending in the forced <think>), the reasoning text
 *  between <think> and </think>, and the answer text from </think> on (the part scored). */
export interface SampledTurn {
  group: number;
  prompt: string;
  reasoning: string;
  answer: string;
}

/** The first turn of a sampled response (`<think>` restored), or null when its think block is not closed. */
export function splitResponse(raw: string): { reasoning: string; answer: string } | null {
  const close = raw.indexOf('</think>');
  if (!raw.startsWith('<think>') || close < 0) return null;
  return { reasoning: raw.slice('<think>'.length, close), answer: raw.slice(close) };
}

export interface AnswerEffects {
  /** Turns with at least one turn of another env to swap with. */
  turns: number;
  /** Mean log p(answer | own prompt, own reasoning), nats. */
  own: number;
  /** Mean over turns of own - mean log p(answer | own prompt, another env's reasoning): 0 = the answer ignores it. */
  reasoningEffect: number;
  /** Mean over turns of own - mean log p(answer | another env's prompt, own reasoning). */
  boardEffect: number;
  /** The median turn's reasoning effect (a few unlikely sampled answers can carry the mean). */
  reasoningEffectMedian: number;
}

export type PairScorer = (pairs: { prompt: number[]; continuation: number[] }[]) => Promise<ArrayLike<number>>;

/** The effects over `turns` (null when no two turns come from different envs). */
export async function answerEffects(
  turns: readonly SampledTurn[],
  encode: (text: string) => number[],
  score: PairScorer,
): Promise<AnswerEffects | null> {
  const pairs: { prompt: number[]; continuation: number[] }[] = [];
  const add = (prompt: string, continuation: number[]) => pairs.push({ prompt: encode(prompt), continuation }) - 1;
  // Per turn with another env to swap with: where its own pair and each swapped pair sit in `pairs`.
  const scored = turns.flatMap((t) => {
    const others = turns.filter((u) => u.group !== t.group);
    if (others.length === 0) return [];
    const continuation = encode(t.answer);
    const own = add(t.prompt + t.reasoning, continuation);
    return [
      {
        own,
        swaps: others.map((u) => ({
          reasoning: add(t.prompt + u.reasoning, continuation),
          board: add(u.prompt + t.reasoning, continuation),
        })),
      },
    ];
  });
  if (scored.length === 0) return null;
  const lp = await score(pairs);
  const mean = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const effect = (s: (typeof scored)[number], swapped: 'reasoning' | 'board') =>
    lp[s.own] - mean(s.swaps.map((w) => lp[w[swapped]]));
  const reasoning = scored.map((s) => effect(s, 'reasoning'));
  return {
    turns: scored.length,
    own: mean(scored.map((s) => lp[s.own])),
    reasoningEffect: mean(reasoning),
    boardEffect: mean(scored.map((s) => effect(s, 'board'))),
    reasoningEffectMedian: median(reasoning),
  };
}

function median(xs: readonly number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}
