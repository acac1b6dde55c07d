// stopStringCheck (src/model/stopStrings.ts): after each new token, whether the decoded tail now holds a stop string,
// decoding the tail only when the newest token's own text holds a stop string's last character. Checked against the
// plain rule (decode the tail after every token) on random token streams of a byte-level tokenizer: the same first
// stop, with fewer tails decoded; a stop string ending in a non-ASCII character decodes (nearly) every tail.
import { describe, expect, it } from 'vitest';
import { DEFAULT_SPECIAL_TOKENS, buildTinyTokenizer } from '../../../src/model/tokenizer';
import { seededUniform } from '../../../src/model/seeded';
import { stopStringCheck } from '../../../src/model/stopStrings';

const corpus = Array.from({ length: 30 }, (_, i) => [
  `<think>The box is at (${i % 5}, 2); push it Up.</think><answer>Up || Left</answer>`,
  `Réponse → ${i}: <answer>Right</answer> ok> <> a>b é>`,
]).flat();
const tok = buildTinyTokenizer(corpus, { vocabSize: 330, specialTokens: DEFAULT_SPECIAL_TOKENS });

/** The first index after which the plain rule stops: decode the last tokens after every token. */
function plainFirstStop(stream: number[], stops: string[], decode: (ids: number[]) => string): number {
  const tail = Math.max(...stops.map((s) => s.length)) + 8;
  for (let i = 1; i <= stream.length; i++) {
    const text = decode(stream.slice(0, i).slice(-tail));
    if (stops.some((s) => text.includes(s))) return i - 1;
  }
  return -1;
}

describe('stopStringCheck', () => {
  for (const stops of [['</answer>'], ['Up || Left', 'b é>'], ['push it Up.'], ['é']]) {
    it(`stops where decoding every tail does (${JSON.stringify(stops)})`, () => {
      let decodes = 0;
      const decode = (ids: number[]) => ((decodes += ids.length > 1 ? 1 : 0), tok.decode(ids)); // tails only
      const u = seededUniform(5);
      const pieces = corpus.map((t) => tok.encode(t));
      let plainDecodes = 0;
      let stopped = 0;
      for (let trial = 0; trial < 200; trial++) {
        // A stream of whole encoded pieces and random tokens, so that stop strings appear whole and broken.
        const stream: number[] = [];
        while (stream.length < 60)
          if (u() < 0.5) stream.push(...pieces[Math.floor(u() * pieces.length)]);
          else stream.push(Math.floor(u() * tok.vocabSize));
        const check = stopStringCheck(stops, decode);
        const before = decodes;
        let first = -1;
        for (let i = 0; i < stream.length && first < 0; i++) if (check(stream.slice(0, i + 1))) first = i;
        const want = plainFirstStop(stream, stops, (ids) => tok.decode(ids));
        expect(first, `trial ${trial}`).toBe(want);
        if (first >= 0) stopped++;
        plainDecodes += want < 0 ? stream.length : want + 1;
        expect(decodes - before).toBeLessThanOrEqual(want < 0 ? stream.length : want + 1);
      }
      expect(stopped).toBeGreaterThan(50); // the streams do reach stop strings
      // Tails decoded: only after tokens whose text holds a last character (many here: the tags all end in '>').
      if (stops.every((s) => s.charCodeAt(s.length - 1) < 128)) expect(decodes).toBeLessThan(0.8 * plainDecodes);
      else expect(decodes).toBeGreaterThan(0.9 * plainDecodes);
    });
  }

  it('without stop strings never stops, and stop strings need a decode function', () => {
    expect(stopStringCheck([], undefined)([1, 2, 3])).toBe(false);
    expect(() => stopStringCheck(['x'], undefined)).toThrow(/decode/);
  });
});
