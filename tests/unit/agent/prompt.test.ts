import { describe, expect, it } from 'vitest';
import {
  buildPrompt,
  compactPromptFixedText,
  targetMaskFromPositionMask,
  turnTrainingSamples,
} from '../../../src/agent/prompt';
import type { HistoryRecord } from '../../../src/agent/types';
import { corridorInfo } from './fakeEnv';

// Expected strings are written by hand from spec §3.2 (RAGEN v1 prompt + Qwen chat template).
const info = corridorInfo('Corridor', {
  instruction: 'Walk to the goal.',
  gridVocab: [
    ['P', 'player'],
    ['G', 'goal'],
  ],
  actionNames: ['Left', 'Right'],
  maxActionsPerTraj: 4,
  maxTokens: 50,
});
const okInfo = { success: false, actionIsValid: true, actionIsEffective: true };
const FORMAT_LINE =
  'Always output: <think> [Your thoughts] </think> <answer> [your answer] </answer> with no extra text. Strictly follow this format. Max response length: 50 words (tokens).';

const SYSTEM = "<|im_start|>system\nYou're a helpful assistant. <|im_end|>\n";
const PREFIX =
  'Walk to the goal.\nThe meaning of each symbol in the state is:\nP: player, G: goal\nYour available actions are:\nLeft, Right\n' +
  'You can make up to 4 actions, separated by the action separator " || "\n';

function oneTurnHistory(): HistoryRecord[] {
  return [
    {
      state: 'P_G',
      actionsLeft: 4,
      actions: ['Right'],
      reward: -0.1,
      info: okInfo,
      llmResponse: '<think>a</think><answer>Right</answer>',
    },
    { state: '_PG', actionsLeft: 3 },
  ];
}
function twoTurnHistory(): HistoryRecord[] {
  return [
    ...oneTurnHistory().slice(0, 1),
    {
      state: '_PG',
      actionsLeft: 3,
      actions: [],
      reward: 0,
      info: null,
      llmResponse: '<think>b</think><answer>Jump</answer>',
    },
    { state: '_PG', actionsLeft: 3 },
  ];
}

describe('buildPrompt: RAGEN style', () => {
  it('renders the first turn for generation', () => {
    const r = buildPrompt(info, [{ state: 'P_G', actionsLeft: 4 }]);
    expect(r.text).toBe(
      SYSTEM +
        `<|im_start|>user\n${PREFIX}\nTurn 1:\nState:\nP_G\nYou have 4 actions left. ${FORMAT_LINE}\n<|im_end|>\n` +
        '<|im_start|>assistant\n<think>',
    );
    expect(r.messages.map((m) => m.role)).toEqual(['system', 'user']);
  });

  it('renders a later turn with the assistant response and the reward message', () => {
    const r = buildPrompt(info, oneTurnHistory(), { mode: 'generation' });
    expect(r.text).toBe(
      SYSTEM +
        `<|im_start|>user\n${PREFIX}\nTurn 1:\nState:\nP_G\nYou have 4 actions left. ${FORMAT_LINE}\n<|im_end|>\n` +
        '<|im_start|>assistant\n<think>a</think><answer>Right</answer><|im_end|>\n' +
        `<|im_start|>user\nReward:\n-0.1\n\nTurn 2:\nState:\n_PG\nYou have 3 actions left. ${FORMAT_LINE}\n<|im_end|>\n` +
        '<|im_start|>assistant\n<think>',
    );
  });

  it('training mode drops the final state and the last reward and adds no generation prompt', () => {
    const one = buildPrompt(info, oneTurnHistory(), { mode: 'training' });
    expect(one.text).toBe(
      SYSTEM +
        `<|im_start|>user\n${PREFIX}\nTurn 1:\nState:\nP_G\nYou have 4 actions left. ${FORMAT_LINE}\n<|im_end|>\n` +
        '<|im_start|>assistant\n<think>a</think><answer>Right</answer><|im_end|>\n',
    );
    const two = buildPrompt(info, twoTurnHistory(), { mode: 'training' });
    expect(two.text).toBe(
      one.text +
        `<|im_start|>user\nReward:\n-0.1\n\nTurn 2:\nState:\n_PG\nYou have 3 actions left. ${FORMAT_LINE}\n<|im_end|>\n` +
        '<|im_start|>assistant\n<think>b</think><answer>Jump</answer><|im_end|>\n',
    );
    expect(two.messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user', 'assistant']);
  });

  it('prints the int 0 for a turn that executed nothing', () => {
    const r = buildPrompt(info, twoTurnHistory(), { mode: 'generation' });
    expect(r.text).toContain('<|im_start|>user\nReward:\n0\n\nTurn 3:\n');
  });

  it('limits the context window and restarts turn numbers at 1', () => {
    const full = buildPrompt(info, twoTurnHistory());
    expect(full.text).toContain('\nTurn 3:\n');
    const last1 = buildPrompt(info, twoTurnHistory(), { maxContextWindow: 1 });
    expect(last1.text).toBe(
      SYSTEM +
        `<|im_start|>user\n${PREFIX}\nTurn 1:\nState:\n_PG\nYou have 3 actions left. ${FORMAT_LINE}\n<|im_end|>\n` +
        '<|im_start|>assistant\n<think>',
    );
    const last2 = buildPrompt(info, twoTurnHistory(), { maxContextWindow: 2 });
    expect(last2.text).toContain('\nTurn 1:\nState:\n_PG\nYou have 3 actions left.');
    expect(last2.text).toContain('<think>b</think><answer>Jump</answer>');
    expect(last2.text).not.toContain('<think>a</think>');
    expect(last2.text).not.toContain('Turn 3');
    // In training mode the window applies after the final state is dropped; segments keep the real turn number.
    const train1 = buildPrompt(info, twoTurnHistory(), { mode: 'training', maxContextWindow: 1 });
    expect(train1.segments.filter((s) => s.role === 'assistant').map((s) => s.turn)).toEqual([2]);
    expect(train1.text).not.toContain('Reward:');
  });

  it("turnNumbers 'episode' keeps each turn's number in the episode inside the window", () => {
    const last1 = buildPrompt(info, twoTurnHistory(), { maxContextWindow: 1, turnNumbers: 'episode' });
    expect(last1.text).toContain('\nTurn 3:\nState:\n_PG\nYou have 3 actions left.');
    expect(last1.text).not.toContain('Turn 1:');
    // Without a window, the numbers are the same either way.
    expect(buildPrompt(info, twoTurnHistory(), { turnNumbers: 'episode' }).text).toBe(
      buildPrompt(info, twoTurnHistory()).text,
    );
    // The compact prompt and single_turn samples: turn 2's sample says turn 2.
    const compact = turnTrainingSamples(info, twoTurnHistory(), {
      style: 'compact',
      maxContextWindow: 1,
      turnNumbers: 'episode',
    })[1];
    expect(compact.text).toContain('turn 2\nstate:\n_PG');
    expect(compact.segments.filter((seg) => seg.trainable).map((seg) => seg.turn)).toEqual([2]);
  });

  it("single_turn samples: one per played turn, as the policy saw it, each training only that turn's response", () => {
    const history = twoTurnHistory(); // turn 1 answered "Right", turn 2 "Jump", then the final state
    const [first, second] = turnTrainingSamples(info, history);
    expect(turnTrainingSamples(info, history)).toHaveLength(2);
    // Turn 1's sample is exactly the one-turn trajectory in training mode.
    expect(first).toEqual(buildPrompt(info, history.slice(0, 2), { mode: 'training' }));
    // Turn 2's sample shows turn 1 as context (full history), but trains only turn 2's response.
    expect(second.text).toBe(buildPrompt(info, history, { mode: 'training' }).text);
    expect(second.segments.filter((seg) => seg.trainable).map((seg) => [seg.turn, seg.text.includes('Jump')])).toEqual([
      [2, true],
    ]);
    expect(second.segments.some((seg) => seg.turn === 1 && !seg.trainable)).toBe(true);
    // With a window of 1, turn 2's sample holds only turn 2 (renumbered as turn 1 in the text).
    const windowed = turnTrainingSamples(info, history, { maxContextWindow: 1 })[1];
    expect(windowed.text).not.toContain('<think>a</think>');
    expect(windowed.text).toContain('Turn 1:\nState:\n_PG');
    expect(windowed.segments.filter((seg) => seg.trainable).map((seg) => seg.turn)).toEqual([2]);
    // A trajectory that played no turn has no sample.
    expect(turnTrainingSamples(info, [{ state: 'P_G', actionsLeft: 4 }])).toEqual([]);
  });

  it('uses the answer-only format in no-think mode', () => {
    const r = buildPrompt(info, [{ state: 'P_G', actionsLeft: 4 }], { enableThink: false });
    expect(r.text).toContain('Always output: <answer> [your answer] </answer> with no extra text.');
    expect(r.text.endsWith('<|im_start|>assistant\n<answer>')).toBe(true);
  });

  it('omits the vocabulary and action blocks when the env has none (Bandit)', () => {
    const bandit = corridorInfo('Bandit', {
      instruction: '',
      gridVocab: null,
      actionNames: null,
      maxActionsPerTraj: 1,
      maxTokens: 100,
    });
    const r = buildPrompt(bandit, [{ state: 'pick an arm', actionsLeft: 1 }]);
    expect(r.messages[1].content.startsWith('\nTurn 1:\nState:\npick an arm\nYou have 1 actions left.')).toBe(true);
  });
});

describe('buildPrompt: segments and loss mask', () => {
  it('segments concatenate to the text in every mode and style', () => {
    for (const style of ['ragen', 'compact'] as const) {
      for (const mode of ['generation', 'training'] as const) {
        for (const responseMaskOnly of [true, false]) {
          const r = buildPrompt(info, twoTurnHistory(), { style, mode, responseMaskOnly });
          expect(r.segments.map((s) => s.text).join('')).toBe(r.text);
          for (const s of r.segments) expect(s.text.startsWith('<|im_start|>')).toBe(true);
        }
      }
    }
  });

  it('marks only assistant turns trainable by default, everything after the system prompt in the paper setting', () => {
    const masked = buildPrompt(info, twoTurnHistory(), { mode: 'training' });
    expect(masked.segments.map((s) => s.trainable)).toEqual([false, false, true, false, true]);
    expect(masked.segments.filter((s) => s.trainable).map((s) => s.text)).toEqual([
      '<|im_start|>assistant\n<think>a</think><answer>Right</answer><|im_end|>\n',
      '<|im_start|>assistant\n<think>b</think><answer>Jump</answer><|im_end|>\n',
    ]);
    expect(masked.segments.filter((s) => s.role === 'assistant').map((s) => s.turn)).toEqual([1, 2]);
    const paper = buildPrompt(info, twoTurnHistory(), { mode: 'training', responseMaskOnly: false });
    expect(paper.segments.map((s) => s.trainable)).toEqual([false, true, true, true, true]);
  });

  it('marks nothing trainable in generation mode', () => {
    const r = buildPrompt(info, oneTurnHistory());
    expect(r.segments.some((s) => s.trainable)).toBe(false);
    expect(r.segments[r.segments.length - 1]).toEqual({
      text: '<|im_start|>assistant\n<think>',
      role: 'generation',
      trainable: false,
    });
  });

  it('shifts a position mask onto prediction targets', () => {
    expect(targetMaskFromPositionMask([false, true, true, false])).toEqual([false, true, true]);
  });
});

describe('buildPrompt: compact style', () => {
  it('renders the short wording with the same roles and markers', () => {
    const r = buildPrompt(info, oneTurnHistory(), { style: 'compact' });
    expect(r.text).toBe(
      '<|im_start|>system\nwalk to the goal.<|im_end|>\n' +
        '<|im_start|>user\nsymbols: P player, G goal\nactions: Left, Right\nturn 1\nstate:\nP_G\nactions left 4<|im_end|>\n' +
        '<|im_start|>assistant\n<think>a</think><answer>Right</answer><|im_end|>\n' +
        '<|im_start|>user\nreward -0.1\nturn 2\nstate:\n_PG\nactions left 3<|im_end|>\n' +
        '<|im_start|>assistant\n<think>',
    );
    expect(r.text.length).toBeLessThan(buildPrompt(info, oneTurnHistory()).text.length / 2);
  });

  it('falls back to the built-in instruction for known tags and refuses unknown ones', () => {
    const sokoban = corridorInfo('SimpleSokoban', { compactInstruction: undefined });
    expect(buildPrompt(sokoban, [{ state: '#', actionsLeft: 10 }], { style: 'compact' }).messages[0].content).toBe(
      'push every box onto a target.',
    );
    const unknown = corridorInfo('Mystery', { compactInstruction: undefined });
    expect(() => buildPrompt(unknown, [{ state: '#', actionsLeft: 10 }], { style: 'compact' })).toThrow(/Mystery/);
  });

  it('lists the fixed words of the compact template', () => {
    const text = compactPromptFixedText(info);
    for (const word of [
      'walk',
      'symbols:',
      'actions:',
      'turn',
      'state:',
      'left',
      'reward',
      '<think>',
      '</answer>',
      '||',
    ])
      expect(text).toContain(word);
  });
});

describe('buildPrompt: bad input', () => {
  it('names the problem', () => {
    expect(() => buildPrompt(info, [])).toThrow(/history is empty/);
    expect(() => buildPrompt(info, [{ state: 'P_G', actionsLeft: 4 }], { mode: 'training' })).toThrow(
      /at least one finished turn/,
    );
    const withMarker = oneTurnHistory();
    withMarker[0].llmResponse = '<think>a</think><answer>Up</answer><|im_end|>';
    expect(() => buildPrompt(info, withMarker)).toThrow(/chat marker/);
    expect(() => buildPrompt(info, oneTurnHistory(), { style: 'tiny' as never })).toThrow(/prompt style/);
    expect(() => buildPrompt(info, oneTurnHistory(), { maxContextWindow: 1.5 })).toThrow(/maxContextWindow/);
    expect(() => buildPrompt(info, oneTurnHistory(), { turnNumbers: 'trajectory' as never })).toThrow(
      /turnNumbers 'trajectory'/,
    );
  });
});
