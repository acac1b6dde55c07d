// Fuzzing parseResponse: it must agree with RAGEN's regular expressions on every input (the reference below is the
// code it replaced, kept here verbatim), never throw on any text, and stay linear in the text's length.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseResponse, restoreForcedPrefix, type ParsedResponse } from '../../../src/agent/parse';
import { fuzzParams } from './budget';

const THINK_PATTERN = /<think>(.*?)<\/think>\s*<answer>(.*?)<\/answer>/s;
const ANSWER_PATTERN = /<answer>(.*?)<\/answer>/s;
const STRIPPED = ['<think>', '</think>', '<answer>', '</answer>', '<|im_start|>', '<|im_end|>'];
const strip = (t: string) => STRIPPED.reduce((out, tok) => out.split(tok).join('').trim(), t);

/** The regex-based parser parse.ts used before it was made linear (same options, same output). */
function referenceParse(text: string, enableThink: boolean, maxActions: number, sep: string): ParsedResponse {
  const match = (enableThink ? THINK_PATTERN : ANSWER_PATTERN).exec(text);
  if (!match) return { think: '', answer: '', actions: [], formatOk: false, reconstructed: text };
  const think = enableThink ? strip(match[1]) : '';
  let answer = strip(enableThink ? match[2] : match[1]);
  let actions = answer
    .split(sep)
    .map((a) => a.trim())
    .filter((a) => a.length > 0);
  if (actions.length > maxActions) {
    actions = actions.slice(0, maxActions);
    answer = actions.join(` ${sep} `);
  }
  const reconstructed = enableThink
    ? `<think>${think}</think><answer>${answer}</answer>`
    : `<answer>${answer}</answer>`;
  return { think, answer, actions, formatOk: true, reconstructed };
}

/** Text made of the pieces that matter to the parser: tags (also broken ones), whitespace of every kind, separators. */
const PIECES = [
  '<think>',
  '</think>',
  '<answer>',
  '</answer>',
  '<think',
  '</answer',
  '<',
  '>',
  '/',
  ' ',
  '\n',
  '\t',
  '\u00a0',
  '\u2028',
  '\ufeff',
  '||',
  '|',
  'Up',
  'left',
  'x',
  '<|im_end|>',
  '<|im_start|>',
  '😀',
  '\ud800',
];
const responseText = fc.array(fc.constantFrom(...PIECES), { maxLength: 40 }).map((parts) => parts.join(''));

describe('parseResponse fuzz', () => {
  it('agrees with RAGEN regular expressions on random tag soup, in think and no-think mode', () => {
    fc.assert(
      fc.property(responseText, fc.boolean(), fc.integer({ min: 1, max: 6 }), (text, enableThink, maxActions) => {
        const got = parseResponse(text, { enableThink, maxActionsPerTurn: maxActions });
        expect(got).toEqual(referenceParse(text, enableThink, maxActions, '||'));
      }),
      fuzzParams(3000),
    );
  });

  it('never throws on arbitrary unicode text, and a well-formed result re-parses to itself', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 200 }), fc.boolean(), (text, enableThink) => {
        const got = parseResponse(restoreForcedPrefix(text, enableThink), { enableThink });
        if (got.formatOk)
          expect(parseResponse(got.reconstructed, { enableThink }).reconstructed).toBe(got.reconstructed);
      }),
      fuzzParams(1000),
    );
  });
});

describe('parseResponse stays linear in the text length', () => {
  // Inputs that made the lazy regexes backtrack: many openings, no closing answer (RAGEN's pattern took 7.6 s on
  // 46 kB of such text and about a minute on 92 kB).
  const adversarial = [
    '<think></think><answer>'.repeat(8_000),
    '<think>' + '</think> <answer>'.repeat(12_000),
    '<think>' + '</think>'.repeat(25_000) + '<answer>',
    '<answer>'.repeat(25_000),
  ];
  for (const [i, text] of adversarial.entries()) {
    it(`adversarial input ${i} (${Math.round(text.length / 1000)} kB) parses in well under a second`, () => {
      for (const enableThink of [true, false]) {
        const start = performance.now();
        const p = parseResponse(text, { enableThink });
        expect(performance.now() - start).toBeLessThan(500);
        expect(p.formatOk).toBe(false);
      }
    });
  }
});
