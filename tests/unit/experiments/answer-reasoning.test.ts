import { describe, expect, it } from 'vitest';
import { answerEffects, splitResponse, type SampledTurn } from '../../../experiments/lib/answerReasoning';

const encode = (text: string) => Array.from(text, (c) => c.charCodeAt(0));
const decode = (ids: readonly number[]) => String.fromCharCode(...ids);

// Env k's prompt is "P<k>:", its reasoning "R<k>." and its answer "A<k>" (a second sample adds a letter to both). The scorer gives an answer 2 nats less after
// another env's prompt and 1 nat less after another env's reasoning, whatever the order the pairs arrive in.
const turn = (group: number, sample = ''): SampledTurn => ({
  group,
  prompt: `P${group}:`,
  reasoning: `R${group}.${sample}`,
  answer: `A${group}${sample}`,
});
const scorer = async (pairs: { prompt: number[]; continuation: number[] }[]) =>
  pairs.map(({ prompt, continuation }) => {
    const env = decode(continuation)[1];
    const [board, reasoning] = decode(prompt).split(':');
    return -3 - (board === `P${env}` ? 0 : 2) - (reasoning.startsWith(`R${env}.`) ? 0 : 1);
  });

describe('answerEffects (does the answer read its reasoning or the board)', () => {
  it("pairs every turn with every other env's prompt and reasoning, never its own env's", async () => {
    const seen: string[] = [];
    const e = await answerEffects([turn(0), turn(0, 'b'), turn(1), turn(2)], encode, async (pairs) => {
      seen.push(...pairs.map((p) => `${decode(p.prompt)}>${decode(p.continuation)}`));
      return scorer(pairs);
    });
    expect(e).toEqual({ turns: 4, own: -3, reasoningEffect: 1, boardEffect: 2, reasoningEffectMedian: 1 });
    // 4 own pairs; each env-0 turn swaps with 2 others (x2 kinds), each env-1/2 turn with 3.
    expect(seen).toHaveLength(4 + 2 * 2 * 2 + 2 * 3 * 2);
    expect(seen).toContain('P0:R0.b>A0b'); // its own
    expect(seen).not.toContain('P0:R0.b>A0'); // a same-env sample is not a swap
    expect(seen).toContain('P0:R1.>A0b');
    expect(seen).toContain('P2:R0.b>A0b');
  });

  it('an answer that ignores its reasoning has a reasoning effect of 0', async () => {
    const e = await answerEffects([turn(0), turn(1)], encode, async (pairs) =>
      pairs.map(({ prompt, continuation }) => (decode(prompt).startsWith(`P${decode(continuation)[1]}`) ? -1 : -4)),
    );
    expect(e).toMatchObject({ reasoningEffect: 0, boardEffect: 3, own: -1 });
  });

  it('the median turn: one answer that reads its reasoning among three that do not', async () => {
    const e = await answerEffects([turn(0), turn(1), turn(2), turn(3)], encode, async (pairs) =>
      pairs.map(({ prompt, continuation }) =>
        decode(continuation) === 'A0' && !decode(prompt).includes('R0.') ? -9 : -1,
      ),
    );
    expect(e).toMatchObject({ reasoningEffect: 2, reasoningEffectMedian: 0 });
  });

  it('is null when every turn comes from one env (nothing to swap)', async () => {
    expect(await answerEffects([turn(3), turn(3, 'b')], encode, scorer)).toBeNull();
  });
});

describe('splitResponse', () => {
  it('cuts a response at </think>: the reasoning without the tag, the answer with it', () => {
    expect(splitResponse('<think>go down</think><answer>Down</answer>')).toEqual({
      reasoning: 'go down',
      answer: '</think><answer>Down</answer>',
    });
  });
  it('is null without a closed think block', () => {
    expect(splitResponse('<think>go down<answer>Down</answer>')).toBeNull();
    expect(splitResponse('Down')).toBeNull();
  });
});
