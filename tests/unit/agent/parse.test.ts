import { describe, expect, it } from 'vitest';
import { parseResponse, restoreForcedPrefix } from '../../../src/agent/parse';

describe('parseResponse (think mode)', () => {
  it('parses a well-formed response', () => {
    const p = parseResponse('<think>the goal is right</think><answer>Right</answer>');
    expect(p).toEqual({
      think: 'the goal is right',
      answer: 'Right',
      actions: ['Right'],
      formatOk: true,
      reconstructed: '<think>the goal is right</think><answer>Right</answer>',
    });
  });

  it('keeps the raw text and yields no actions when tags are missing', () => {
    for (const raw of [
      'Right',
      '<think>no closing think<answer>Up</answer>',
      '<think>x</think> Up',
      '<answer>Up</answer>',
    ]) {
      const p = parseResponse(raw);
      expect(p.formatOk).toBe(false);
      expect(p.actions).toEqual([]);
      expect(p.reconstructed).toBe(raw);
    }
  });

  it('fails when non-whitespace text separates </think> and <answer>', () => {
    expect(parseResponse('<think>a</think> so: <answer>Up</answer>').formatOk).toBe(false);
  });

  it('drops text before <think>, whitespace between the parts and text after </answer>', () => {
    const p = parseResponse('Sure! <think> plan \n</think>\n  <answer> Up </answer> and then I will go Left');
    expect(p.formatOk).toBe(true);
    expect(p.think).toBe('plan');
    expect(p.actions).toEqual(['Up']);
    expect(p.reconstructed).toBe('<think>plan</think><answer>Up</answer>');
  });

  it('matches across newlines (dot matches newline) and uses the first answer', () => {
    const p = parseResponse(
      '<think>line one\nline two</think><answer>Down</answer><think>again</think><answer>Up</answer>',
    );
    expect(p.think).toBe('line one\nline two');
    expect(p.actions).toEqual(['Down']);
  });

  it('keeps at most maxActionsPerTurn actions and rebuilds the answer when it cuts', () => {
    const raw = '<think>t</think><answer>Up || Down||Left || Right || Up || Down || Left</answer>';
    const p = parseResponse(raw, { maxActionsPerTurn: 5 });
    expect(p.actions).toEqual(['Up', 'Down', 'Left', 'Right', 'Up']);
    expect(p.answer).toBe('Up || Down || Left || Right || Up');
    expect(p.reconstructed).toBe('<think>t</think><answer>Up || Down || Left || Right || Up</answer>');
    expect(parseResponse(raw, { maxActionsPerTurn: 2 }).actions).toEqual(['Up', 'Down']);
  });

  it('keeps the answer text as written when nothing is cut (RAGEN v1), or rebuilds it on request', () => {
    const raw = '<think>t</think><answer>Up||Down</answer>';
    expect(parseResponse(raw).reconstructed).toBe('<think>t</think><answer>Up||Down</answer>');
    expect(parseResponse(raw, { rejoinActions: 'always' }).reconstructed).toBe(
      '<think>t</think><answer>Up || Down</answer>',
    );
  });

  it('drops empty actions between separators', () => {
    const p = parseResponse('<think>t</think><answer>|| Up ||  || Down ||</answer>');
    expect(p.actions).toEqual(['Up', 'Down']);
  });

  it('gives no actions for an empty answer but still counts the format as matched', () => {
    const p = parseResponse('<think>hmm</think><answer>  </answer>');
    expect(p.formatOk).toBe(true);
    expect(p.actions).toEqual([]);
    expect(p.reconstructed).toBe('<think>hmm</think><answer></answer>');
  });

  it('passes unknown names and their case through unchanged (validation is the env manager’s job)', () => {
    expect(parseResponse('<think>t</think><answer>rIGHT || jump</answer>').actions).toEqual(['rIGHT', 'jump']);
  });

  it('removes special tokens from inside the think and answer parts', () => {
    const p = parseResponse('<think><think>I  think</think><answer><answer>Up<|im_end|> || <|im_start|>Left</answer>');
    expect(p.think).toBe('I  think');
    expect(p.actions).toEqual(['Up', 'Left']);
    expect(p.answer).toBe('Up || Left');
    expect(p.reconstructed).not.toContain('<|im_');
  });

  it('rejects bad options', () => {
    expect(() => parseResponse('x', { maxActionsPerTurn: 0 })).toThrow(/maxActionsPerTurn/);
    expect(() => parseResponse('x', { actionSep: '' })).toThrow(/actionSep/);
  });
});

describe('parseResponse (no-think mode)', () => {
  it('reads only the answer', () => {
    const p = parseResponse('<answer>Left || Up</answer> trailing', { enableThink: false });
    expect(p).toEqual({
      think: '',
      answer: 'Left || Up',
      actions: ['Left', 'Up'],
      formatOk: true,
      reconstructed: '<answer>Left || Up</answer>',
    });
  });
});

describe('restoreForcedPrefix', () => {
  it('puts back the forced tag and drops chat markers', () => {
    expect(restoreForcedPrefix('go right</think><answer>Right</answer><|im_end|>')).toBe(
      '<think>go right</think><answer>Right</answer>',
    );
    expect(restoreForcedPrefix('Up</answer><|endoftext|>', false)).toBe('<answer>Up</answer>');
    const p = parseResponse(restoreForcedPrefix('go</think><answer>Right</answer>'));
    expect(p.actions).toEqual(['Right']);
  });
});
