// A run's dialogues against its model's positions, with the shipped warm-start tokenizers: every tiny preset fits
// the model it starts from, and a custom board too large for it is refused before any work, naming the env block.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Tokenizer } from '../../../src/model/tokenizer';
import { dialogueLengths } from '../../../src/agent/contextFit';
import { assertRunFitsContext } from '../../../src/starpo/contextFit';
import { agentFormatFromConfig, envBlocks, mergeConfigInput, parseRunConfig } from '../../../src/starpo/config';
import { presetConfig, tinyPresetNames } from '../../../src/starpo/presets';

function shipped(preset: string): { count: (text: string) => number; maxPositions: number } {
  const dir = path.resolve('public', presetConfig(preset).model.warmStart!);
  const read = (name: string) => JSON.parse(fs.readFileSync(path.join(dir, name), 'utf8'));
  const tokenizer = Tokenizer.fromJSON(read('tokenizer.json'), read('tokenizer_config.json'));
  return { count: (text) => tokenizer.encode(text).length, maxPositions: read('config.json').max_position_embeddings };
}

describe('assertRunFitsContext', () => {
  it('accepts every tiny preset with the model it starts from', () => {
    for (const preset of tinyPresetNames()) {
      const { count, maxPositions } = shipped(preset);
      expect(() => assertRunFitsContext(presetConfig(preset), count, maxPositions), preset).not.toThrow();
    }
  });

  it('refuses a validation board too large for the model, naming the block, before any work', () => {
    const { count, maxPositions } = shipped('frozenlake-tiny');
    const map = ['P' + '_'.repeat(19), ...Array(18).fill('_'.repeat(20)), '_'.repeat(19) + 'G'];
    // The full history in the prompt (the preset itself shows one turn: maxContextWindow 1).
    const config = parseRunConfig(
      mergeConfigInput(presetConfig('frozenlake-tiny'), {
        agent: { maxContextWindow: -1, valEnvs: [{ tag: 'FrozenLake', nGroups: 32, config: { map } }] },
      }),
    );
    expect(() => assertRunFitsContext(config, count, maxPositions)).toThrow(
      new RegExp(
        `^agent\\.valEnvs\\[0\\] \\(FrozenLake\\): 5 turns of up to 64 new tokens can grow the dialogue to about \\d+ tokens, more than the model's ${maxPositions} positions`,
      ),
    );
    // One turn of it still fits: the message was about the turns, and fewer turns are the way out.
    const oneTurn = parseRunConfig(mergeConfigInput(config, { agent: { maxTurn: 1 } }));
    expect(() => assertRunFitsContext(oneTurn, count, maxPositions)).not.toThrow();
    // So does a prompt that shows only the current turn.
    const window1 = parseRunConfig(mergeConfigInput(config, { agent: { maxContextWindow: 1 } }));
    expect(() => assertRunFitsContext(window1, count, maxPositions)).not.toThrow();
  });

  it("counts only the responses a context window shows: sokoban-tiny's 10 turns with window 1 are one prompt and one response", () => {
    const { count } = shipped('sokoban-tiny');
    const lengths = (maxContextWindow: number) => {
      const config = parseRunConfig(mergeConfigInput(presetConfig('sokoban-tiny'), { agent: { maxContextWindow } }));
      const [d] = dialogueLengths({
        blocks: [{ name: 'val', block: envBlocks(config, 'val')[0] }],
        seed: config.agent.seedVal,
        format: agentFormatFromConfig(config),
        maxPositions: 1024,
        countTokens: count,
      });
      return d;
    };
    const one = lengths(1),
      two = lengths(2),
      full = lengths(-1);
    expect(one.longest).toBe(one.firstPrompt + 64);
    expect(two.longest).toBeGreaterThan(one.longest + 64);
    expect(full.longest).toBeGreaterThan(two.longest + 8 * 64);
  });
});
