// The dialogue-length estimate behind "prompt length vs the model's positions": exact for one turn, an upper
// bound for several, and a refusal that names the env block.
import { describe, expect, it } from 'vitest';
import {
  assertDialoguesFit,
  buildPrompt,
  dialogueLengths,
  envRegistry,
  type AgentFormat,
  type ContextFitOptions,
} from '../../../src/agent/index';
import { makeEnv } from '../../../envs/index';
import { agentFormat } from '../agentFormat';

/** One token per character: easy to reason about, and an upper bound of any real tokenizer's count here. */
const chars = (text: string) => text.length;

/** FrozenLake, one turn of at most 64 tokens; `format` overrides the agent format, the rest the options. */
function options(
  over: Partial<Omit<ContextFitOptions, 'format'>> & { format?: Partial<AgentFormat> } = {},
): ContextFitOptions {
  const { format, ...rest } = over;
  return {
    blocks: [{ name: 'agent.trainEnvs[0]', block: { tag: 'FrozenLake', nGroups: 8 } }],
    seed: 10000,
    format: agentFormat({ maxTurn: 1, ...format }),
    maxPositions: 4096,
    countTokens: chars,
    ...rest,
  };
}

describe('dialogueLengths', () => {
  it('one turn: exactly the first generation prompt plus maxNewTokens', () => {
    const [d] = dialogueLengths(options());
    const env = makeEnv('FrozenLake');
    const info = { ...envRegistry({ responseLength: 64 }).promptInfo('FrozenLake') };
    const prompt = buildPrompt(info, [{ state: env.reset(10000), actionsLeft: 10 }], {
      style: 'compact',
      mode: 'generation',
    }).text;
    expect(d.firstPrompt).toBe(prompt.length);
    expect(d.longest).toBe(prompt.length + 64);
  });

  it('more turns add a response and an observation each; a context window caps the growth', () => {
    const one = dialogueLengths(options())[0].longest;
    const five = dialogueLengths(options({ format: { maxTurn: 5 } }))[0].longest;
    expect(five).toBeGreaterThan(one + 4 * 64 + 4 * 16); // four more responses and four 4x4 boards
    const windowed = dialogueLengths(options({ format: { maxTurn: 5, maxContextWindow: 1 } }))[0].longest;
    expect(windowed).toBeLessThan(five);
  });

  it('a bigger custom board makes a longer prompt', () => {
    const map = ['P' + '_'.repeat(19), ...Array(18).fill('_'.repeat(20)), '_'.repeat(19) + 'G'];
    const big = dialogueLengths(
      options({ blocks: [{ name: 'custom board', block: { tag: 'FrozenLake', nGroups: 1, config: { map } } }] }),
    )[0];
    expect(big.firstPrompt).toBeGreaterThan(dialogueLengths(options())[0].firstPrompt + 19 * 20);
  });
});

describe('assertDialoguesFit', () => {
  it('names the block, the numbers and what to change, for the first prompt and for the whole dialogue', () => {
    const first = dialogueLengths(options())[0].firstPrompt;
    expect(() => assertDialoguesFit(options({ maxPositions: first + 63 }))).toThrow(
      new RegExp(
        `^agent\\.trainEnvs\\[0\\] \\(FrozenLake\\): the first prompt is ${first} tokens, plus up to 64 new tokens \\(rollout\\.maxNewTokens\\) that is more than the model's ${first + 63} positions`,
      ),
    );
    expect(() => assertDialoguesFit(options({ maxPositions: first + 64 }))).not.toThrow();
    const longest = dialogueLengths(options({ format: { maxTurn: 3 } }))[0].longest;
    expect(() => assertDialoguesFit(options({ format: { maxTurn: 3 }, maxPositions: longest - 1 }))).toThrow(
      `agent.trainEnvs[0] (FrozenLake): 3 turns of up to 64 new tokens can grow the dialogue to about ${longest} tokens, more than the model's ${longest - 1} positions`,
    );
    expect(() => assertDialoguesFit(options({ format: { maxTurn: 3 }, maxPositions: longest }))).not.toThrow();
  });
});
